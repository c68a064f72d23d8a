"""What a session already holds: CLAUDE.md lines, the auto memory memlog recorded, the
branch memories of the checkout, and what the session received."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from memlog.eventlog.events import content_hash
from memlog.home import Home
from memlog.retrieval import in_context, received


def test_lines_and_paragraphs_of_a_claude_md_are_passages() -> None:
    text = (
        "# Project\n\n- Open every CSV file with utf-8-sig.\n* Pin tool versions in CI\n"
        "1. Never mock the database\n\nA lesson written\nover two lines.\n\nok\n"
    )
    found = list(in_context.passages(text))
    assert "Open every CSV file with utf-8-sig." in found and "Pin tool versions in CI" in found
    assert "Never mock the database" in found
    assert "A lesson written over two lines." in found
    assert "ok" not in found and "Project" not in found


def test_claude_md_ids_are_the_content_hashes_of_its_lines(tmp_path: Path) -> None:
    (tmp_path / "CLAUDE.md").write_text("<!-- memlog -->\n-   Pin tool   versions in CI\n")
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "none")}
    assert content_hash("pin tool versions in ci") in in_context.claude_md_ids(str(tmp_path), env)


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), "-c", "user.email=t@t", "-c", "user.name=t", *args],
                   check=True, capture_output=True)  # fmt: skip


def test_a_branch_is_keyed_in_the_repository_and_every_worktree(tmp_path: Path) -> None:
    main = tmp_path / "shop"
    main.mkdir()
    git(main, "init", "-q", "-b", "main")
    git(main, "commit", "-q", "--allow-empty", "-m", "start")
    git(main, "worktree", "add", "-q", "-b", "feature/x", str(tmp_path / "shop-x"))
    here = in_context.checkout(tmp_path / "shop-x", "shop-x", "feature/x")
    assert here.keys == {"shop/feature/x", "shop-x/feature/x"}
    assert in_context.checkout(main, "shop", "main").keys == {"shop/main", "shop-x/main"}
    assert in_context.checkout(None, "", "main").keys == frozenset()


def test_received_since_the_last_fresh_start(memlog_home: Path) -> None:
    home = memlog_home
    assert received.add(Home(home), "s", "startup", ["a", "b"]) == []
    received.add(Home(home), "s", "prompt", ["c"])
    received.add(Home(home), "s", "resume", ["d"])
    assert received.received(Home(home), "s") == {"a", "b", "c", "d"}
    received.add(Home(home), "s", "compact", ["a"])
    assert received.received(Home(home), "s") == {"a"}  # the context was summarised: afresh
    received.add(Home(home), "s", "clear", [])
    assert received.received(Home(home), "s") == set()
    assert (
        received.received(Home(home), "other") == set()
        and received.received(Home(home), "") == set()
    )


def test_nothing_noted_without_a_session_or_anything_to_forget(memlog_home: Path) -> None:
    received.add(Home(memlog_home), "", "startup", ["a"])
    received.add(Home(memlog_home), "s", "startup", [])
    assert not memlog_home.exists()


def test_a_torn_line_counts_as_not_received(memlog_home: Path) -> None:
    received.add(Home(memlog_home), "s", "startup", ["a"])
    with open(received.path(Home(memlog_home), "s"), "a") as handle:
        handle.write('{"trigger": "prompt", "ids": ["b"')
    assert received.received(Home(memlog_home), "s") == {"a"}


def test_old_sessions_are_swept(memlog_home: Path) -> None:
    received.add(Home(memlog_home), "old", "startup", ["a"])
    received.add(Home(memlog_home), "new", "startup", ["b"])
    then = time.time() - (received.KEEP_DAYS + 1) * 86400
    os.utime(received.path(Home(memlog_home), "old"), (then, then))
    received.sweep(Home(memlog_home))
    assert not received.path(Home(memlog_home), "old").exists()
    assert received.received(Home(memlog_home), "new") == {"b"}
