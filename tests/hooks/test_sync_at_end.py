"""The SessionEnd hook starts a detached sync when configured, and returns at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memlog.tests.sync.helpers import (
    KEYS,
    bare_remote,
    git,
    init,
    memlog,
    memlog_ok,
    observe,
    remote_plain,
)


def session_end(home: Path, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "MEMLOG_HOME": str(home), **env}
    payload = json.dumps({"session_id": "s1", "cwd": str(cwd), "hook_event_name": "SessionEnd"})
    return subprocess.run(
        [sys.executable, "-m", "memlog", "hook", "session-end"], input=payload, text=True,
        capture_output=True, env=environ, timeout=30,
    )  # fmt: skip


def remote_has(remote: str, text: str) -> bool:
    """Whether the remote's tip holds ``text`` (opened with the key its homes share)."""
    if git("--git-dir", remote, "rev-parse", "--verify", "-q", "memlog").returncode != 0:
        return False
    return text.encode() in remote_plain(remote, KEYS[remote])


@pytest.fixture
def set_up(tmp_path: Path) -> tuple[Path, str]:
    remote = str(bare_remote(tmp_path / "remote.git"))
    home = tmp_path / "home"
    observe(home, "A lesson worth keeping.")
    init(home, remote)
    observe(home, "Learned during the session.")
    return home, remote


@pytest.mark.slow
def test_configured_it_syncs_in_the_background(set_up: tuple[Path, str], tmp_path: Path) -> None:
    home, remote = set_up
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "iflow-dev.local.md").write_text(
        "---\nmemory_sync_at_session_end: true\n---\n"
    )
    began = time.monotonic()
    done = session_end(home, project)
    assert done.returncode == 0 and done.stdout == "{}\n"
    assert time.monotonic() - began < 10
    deadline = time.monotonic() + 60
    while not remote_has(remote, "Learned during the session") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert remote_has(remote, "Learned during the session")


def test_not_configured_it_does_nothing(set_up: tuple[Path, str], tmp_path: Path) -> None:
    home, remote = set_up
    assert session_end(home, tmp_path).returncode == 0
    time.sleep(1.0)
    assert not remote_has(remote, "Learned during the session")


def test_configured_but_not_set_up_it_does_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    observe(home, "A lesson worth keeping.")
    done = session_end(home, tmp_path, MEMLOG_SYNC_AT_SESSION_END="true")
    assert done.returncode == 0 and not (home / "sync.git").exists()
    assert not (home / "hook-errors.log").exists()
    asked = memlog_ok(home, "sync", "--at-session-end")  # what the hook would have started
    assert asked.output == "" and not (home / "sync.git").exists()


def test_the_detached_sync_follows_the_project_configuration(
    set_up: tuple[Path, str], tmp_path: Path
) -> None:
    home, remote = set_up
    assert memlog_ok(home, "sync", "--at-session-end").output == ""  # not asked for
    assert not remote_has(remote, "Learned during the session")
    done = memlog(home, "sync", "--at-session-end", env={"MEMLOG_SYNC_AT_SESSION_END": "true"})
    assert done.exit_code == 0 and remote_has(remote, "Learned during the session")


def test_inside_an_extraction_it_starts_nothing(set_up: tuple[Path, str], tmp_path: Path) -> None:
    home, remote = set_up
    done = session_end(home, tmp_path, MEMLOG_SYNC_AT_SESSION_END="true", MEMLOG_EXTRACTING="1")
    assert done.returncode == 0
    time.sleep(1.0)
    assert not remote_has(remote, "Learned during the session")


def test_it_never_fails_the_session(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.write_text("not a directory")
    done = session_end(home, tmp_path, MEMLOG_SYNC_AT_SESSION_END="true")
    assert done.returncode == 0
