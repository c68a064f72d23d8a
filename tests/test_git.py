"""What memlog asks of git, against a real repository; the bounded runner on its own."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from memlog.git import current_branch, quick_output, recently_changed


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-C", str(root), *args],
        check=True, capture_output=True,
    )  # fmt: skip


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    for n, name in enumerate(["README.md", "src/a.py", "src/b.py", "tests/t.py", "src/c.py"]):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(f"{n}\n")
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", f"step {n}")
    return root


def test_recently_changed_names_the_last_three_commits(repo: Path) -> None:
    assert recently_changed(repo) == ("src/b.py", "src/c.py", "tests/t.py")
    assert current_branch(repo) == "main"


def test_a_folder_of_the_repository_hears_of_its_own_changes_only(repo: Path) -> None:
    """An example project inside a clone, a package of a monorepo: the repository's other
    changes are no context of its own."""
    assert recently_changed(repo / "src") == ("b.py", "c.py")
    (repo / "docs").mkdir()
    assert recently_changed(repo / "docs") == ()


def test_a_young_repository_falls_back_to_its_last_commit(tmp_path: Path) -> None:
    root = tmp_path / "young"
    root.mkdir()
    git(root, "init", "-q")
    for name in ("one.txt", "two.txt"):
        (root / name).write_text(name)
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", name)
    assert recently_changed(root) == ("two.txt",)


def test_no_repository_is_no_hint(tmp_path: Path) -> None:
    assert recently_changed(tmp_path) == ()
    assert current_branch(tmp_path) == ""


def test_quick_output_gives_status_and_output() -> None:
    far = time.monotonic() + 10
    assert quick_output(["sh", "-c", "echo out; echo err >&2; exit 3"], far) == (3, "out\n")
    assert quick_output(["memlog-no-such-program"], far) is None


def test_quick_output_kills_what_outlasts_its_deadline(tmp_path: Path) -> None:
    marker = tmp_path / "pid"
    started = time.monotonic()
    found = quick_output(["sh", "-c", f"echo $$ > {marker}; exec sleep 30"], started + 0.3)
    assert found is None and time.monotonic() - started < 5
    pid = int(marker.read_text())
    with pytest.raises(ProcessLookupError):  # killed and reaped: no such process any more
        os.kill(pid, 0)


def test_quick_output_leaves_no_descriptor_open() -> None:
    before = set(os.listdir("/proc/self/fd"))
    for _ in range(5):
        quick_output(["true"], time.monotonic() + 10)
        quick_output(["memlog-no-such-program"], time.monotonic() + 10)
    assert set(os.listdir("/proc/self/fd")) == before
