"""Git as memlog runs it: bounded in time, a clear line when it is missing or slow."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from memlog.home import Home
from memlog.sync.repo import Git, SyncError


def fake_path(tmp_path: Path, git_script: str | None) -> str:
    folder = tmp_path / "bin"
    folder.mkdir()
    timeout = shutil.which("timeout")
    if timeout is None:
        pytest.skip("coreutils timeout is not installed")
    (folder / "timeout").symlink_to(timeout)
    if git_script is not None:
        (folder / "git").write_text(f"#!/bin/sh\n{git_script}\n")
        (folder / "git").chmod(0o755)
    return str(folder)


def test_a_hanging_git_is_stopped_at_its_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", fake_path(tmp_path, f"exec {shutil.which('sleep')} 60"))
    began = time.monotonic()
    with pytest.raises(SyncError, match="git fetch took longer than 1 s"):
        Git(Home(tmp_path), "dev").run("fetch", timeout=1)
    assert time.monotonic() - began < 20


def test_a_missing_git_is_one_clear_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", fake_path(tmp_path, None))
    with pytest.raises(SyncError, match="needs git, which is not installed"):
        Git(Home(tmp_path), "dev").run("status")


def test_git_never_sees_where_the_caller_pointed_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GIT_DIR", "/somewhere/else")
    monkeypatch.setenv("GIT_INDEX_FILE", "/somewhere/index")
    monkeypatch.setenv("GIT_SSH_COMMAND", "ssh -i key")
    env = Git(Home(tmp_path), "dev").env
    assert env["GIT_DIR"] == str(tmp_path / "sync.git")
    assert "GIT_INDEX_FILE" not in env and env["GIT_SSH_COMMAND"] == "ssh -i key"
    assert env["GIT_CONFIG_NOSYSTEM"] == "1" and env["GIT_TERMINAL_PROMPT"] == "0"
    assert env["GIT_AUTHOR_EMAIL"] == "memlog@dev"


def test_a_killed_init_leaves_no_repository(tmp_path: Path) -> None:
    (tmp_path / ".sync.git.99999").mkdir()  # what a killed init left
    git = Git(Home(tmp_path), "dev")
    assert not git.exists()
    git.init()
    assert git.exists() and not (tmp_path / ".sync.git.99999").exists()
    assert git.run("config", "core.hooksPath").strip() == b"/dev/null"
