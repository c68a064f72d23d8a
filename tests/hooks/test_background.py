"""Every background process opens the workspace it was started for: its project's
configuration and the environment of the process that started it.

The extraction sweep SessionEnd starts once caught the views up in the default
embedding space (the local model's), whatever the session's project or
``MEMLOG_EMBEDDING_PROVIDER`` said, and the configured vectors were dropped
until the next command.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from memlog.commands.cli import cli
from memlog.home import Home
from memlog.hooks import sessions
from memlog.projections.runner import catch_up_in_background
from memlog.spawn import spawn_memlog


def observe(*texts: str) -> None:
    for text in texts:
        result = CliRunner().invoke(
            cli, ["observe", "--name", text, "--description", f"{text}.", "--category", "facts"]
        )
        assert result.exit_code == 0, result.output


def space_of(home: Path) -> tuple[str, str]:
    db = sqlite3.connect(home / "memory.db")
    try:
        rows = dict(db.execute("SELECT key, value FROM _metadata"))
    finally:
        db.close()
    return rows["embedding_provider"], rows["embedding_model"]


def wait_for(pid: int) -> int:
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def project_with_hashing(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "iflow-dev.local.md").write_text(
        "---\nmemory_embedding_provider: hashing\n---\n"
    )
    return project


def test_the_sweep_session_end_starts_keeps_the_environment_s_space(memlog_home: Path) -> None:
    observe("One lesson", "Another lesson")  # MEMLOG_EMBEDDING_PROVIDER=hashing (conftest)
    assert space_of(memlog_home)[0] == "hashing"
    assert wait_for(sessions.start_extraction(Home(memlog_home), "")) == 0
    assert space_of(memlog_home)[0] == "hashing"
    assert not (memlog_home / "hook-errors.log").exists()


def test_the_sweep_keeps_the_space_of_the_project_it_was_started_for(
    memlog_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = project_with_hashing(tmp_path)
    monkeypatch.chdir(project)
    observe("One lesson", "Another lesson")
    monkeypatch.delenv("MEMLOG_EMBEDDING_PROVIDER")
    monkeypatch.chdir(tmp_path)  # the hook's own folder is not the session's
    assert space_of(memlog_home)[0] == "hashing"
    assert wait_for(sessions.start_extraction(Home(memlog_home), str(project))) == 0
    assert space_of(memlog_home)[0] == "hashing"


def test_a_catch_up_left_to_the_background_keeps_the_project_s_space(
    memlog_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = project_with_hashing(tmp_path)
    monkeypatch.chdir(project)
    observe("One lesson")
    monkeypatch.delenv("MEMLOG_EMBEDDING_PROVIDER")
    monkeypatch.chdir(tmp_path)
    spawned: list[int] = []
    monkeypatch.setattr(
        "memlog.projections.runner.spawn_memlog",
        lambda *a, **k: spawned.append(spawn_memlog(*a, **k)) or spawned[-1],
    )
    catch_up_in_background(Home(memlog_home), project)
    assert wait_for(spawned[0]) == 0
    assert space_of(memlog_home)[0] == "hashing"
