"""CLAUDE.md never carries a branch's lessons to another branch.

``memlog claude-md --write`` on a feature branch writes the branch memory block into
CLAUDE.md and installs a git post-checkout hook; a checkout of ``main`` then leaves none
of the feature branch's lessons in any CLAUDE.md a session there reads (Claude Code
reads them before any hook of its own runs), and the file memlog made is gone.  Real git,
real checkouts, memlog run as the hook runs it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from memlog.api.checkout import COMMAND, MARK
from memlog.claude_files import claude_md_files
from memlog.eventlog.events import Observed
from memlog.eventlog.log import EventLog
from memlog.projections.markdown_view.branch import (
    CLAUDE_MD_END,
    CLAUDE_MD_START,
    splice_claude_md,
    unsplice_claude_md,
)

LESSONS = (
    "Open every CSV export with utf-8-sig: the billing exports begin with a BOM.",
    "Quoted fields hold commas: parse with the csv module, never split on commas.",
)


def git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=root,
        capture_output=True, text=True, check=True, env=os.environ.copy(),
    )  # fmt: skip


def memlog(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memlog", *args], cwd=root,
                          capture_output=True, text=True, check=False)  # fmt: skip


@pytest.fixture
def shop(tmp_path: Path, memlog_home: Path) -> Path:
    """A repository with a commit on main, checked out on feature/x, whose branch memory
    holds two lessons extracted there."""
    root = tmp_path / "shop"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "README.md").write_text("# Shop\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "start")
    git(root, "checkout", "-q", "-b", "feature/x")
    EventLog(memlog_home).append([
        Observed(name=text[:30], description=text, category="patterns", source="extraction",
                 project="shop", branch="feature/x", section="conventions")
        for text in LESSONS
    ])  # fmt: skip
    return root


def read_by_a_session(root: Path) -> str:
    """Every CLAUDE.md a session started in ``root`` reads, as Claude Code finds them."""
    return "".join(p.read_text() for p in claude_md_files(str(root)) if p.is_file())


def test_a_checkout_of_main_leaves_none_of_the_branchs_lessons(shop: Path) -> None:
    written = memlog(shop, "claude-md", "--write")
    assert written.returncode == 0, written.stderr
    assert written.stdout.endswith(f"{shop / 'CLAUDE.md'}: created\n")  # not "updated"
    assert "post-checkout hook installed" in written.stdout
    assert all(lesson in read_by_a_session(shop) for lesson in LESSONS)
    git(shop, "checkout", "-q", "main")
    on_main = read_by_a_session(shop)
    assert not any(lesson in on_main for lesson in LESSONS)
    assert not (shop / "CLAUDE.md").exists()  # memlog made it: nothing of it stays
    assert git(shop, "status", "--porcelain").stdout == ""
    git(shop, "checkout", "-q", "feature/x")
    assert all(lesson in read_by_a_session(shop) for lesson in LESSONS)
    git(shop, "worktree", "add", "-q", str(shop.parent / "on-main"), "main")
    assert not any(lesson in read_by_a_session(shop.parent / "on-main") for lesson in LESSONS)
    again = memlog(shop, "claude-md", "--write")
    assert again.stdout == f"{shop / 'CLAUDE.md'}: unchanged\n"  # the hook is there already


def test_a_tracked_claude_md_gets_its_own_bytes_back_on_main(shop: Path) -> None:
    git(shop, "checkout", "-q", "main")
    (shop / "CLAUDE.md").write_text("# Shop\n\nOur own rules.\n")
    git(shop, "add", "CLAUDE.md")
    git(shop, "commit", "-q", "-m", "rules")
    git(shop, "checkout", "-q", "feature/x")
    git(shop, "merge", "-q", "main")
    assert memlog(shop, "claude-md", "--write").returncode == 0
    assert LESSONS[0] in (shop / "CLAUDE.md").read_text()
    git(shop, "checkout", "-q", "main")  # the file is the same on both: git keeps the change
    assert (shop / "CLAUDE.md").read_text() == "# Shop\n\nOur own rules.\n"
    assert git(shop, "status", "--porcelain").stdout == ""


def test_a_post_checkout_hook_of_the_users_own_is_never_changed(shop: Path) -> None:
    hook = shop / ".git" / "hooks" / "post-checkout"
    hook.write_text("#!/bin/sh\necho theirs\n")
    refused = memlog(shop, "claude-md", "--write")
    assert refused.returncode == 2 and "post-checkout hook of your own" in refused.stderr
    assert f"-m memlog {COMMAND}" in refused.stderr  # the line to add
    assert hook.read_text() == "#!/bin/sh\necho theirs\n" and not (shop / "CLAUDE.md").exists()
    hook.write_text(f'#!/bin/sh\necho theirs\n[ "$3" = 1 ] && memlog {COMMAND} || true\n')
    assert memlog(shop, "claude-md", "--write").returncode == 0  # it runs memlog: theirs stays
    assert MARK not in hook.read_text()


def test_hooks_kept_in_the_project_are_not_written(shop: Path) -> None:
    git(shop, "config", "core.hooksPath", ".githooks")
    refused = memlog(shop, "claude-md", "--write")
    assert refused.returncode == 2 and "core.hooksPath" in refused.stderr
    assert not (shop / ".githooks").exists()


def test_unsplice_gives_back_what_splice_was_given() -> None:
    for original in ("# Rules\n", "# Rules\n\nMore.\n", "", "- x\n- y\n"):
        spliced = splice_claude_md(original or None, "## Branch Memory\n\n- A lesson.\n")
        assert unsplice_claude_md(spliced) == original
    moved = f"{CLAUDE_MD_START}\n- a\n{CLAUDE_MD_END}\n# Rules\n"  # the user put it first
    assert unsplice_claude_md(moved) == "# Rules\n"
    assert unsplice_claude_md("# no block\n") == "# no block\n"
