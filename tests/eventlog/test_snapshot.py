"""Snapshots from ``memlog replay --to``: read as they are, never written.

Regression of failure 3 of issue 12: pointing ``MEMLOG_HOME`` at a
``replay --until … --to DIR`` snapshot (the obvious way to look at it) and
running any command rebuilt its views from its (absent) log: 57 entries
became 0.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from memlog.commands.cli import cli
from memlog.eventlog import snapshot
from memlog.eventlog.events import Observed
from memlog.home import Home

ENTRIES = 12
LESSON_3 = Observed(
    name="n", description="Lesson 3: keep parser step 3 small.", category="patterns"
).entry_id


def invoke(*args: str, code: int | None = 0) -> Result:
    result = CliRunner().invoke(cli, list(args))
    if code is not None:
        assert result.exit_code == code, result.output
    return result


def files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.fixture
def snap(memlog_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for i in range(ENTRIES + 3):
        invoke("observe", "--name", f"Lesson {i}", "--category", "patterns",
               "--description", f"Lesson {i}: keep parser step {i} small.")  # fmt: skip
    folder = tmp_path / "as-it-was"
    seq = ENTRIES * 3  # each observe appends the observation, its vector and its labels
    invoke("replay", "--until", str(seq), "--to", str(folder))
    marked = snapshot.read(Home(folder))
    assert marked is not None and marked.seq == seq and marked.source == str(memlog_home)
    monkeypatch.setenv("MEMLOG_HOME", str(folder))
    return folder


def test_reading_commands_read_the_snapshot_and_change_nothing(snap: Path) -> None:
    before = files(snap)
    stats = json.loads(invoke("stats", "--json").stdout)
    assert stats["entries"]["live"] == ENTRIES
    found = json.loads(invoke("search", "parser step", "--limit", "20", "--json").stdout)
    assert len(found) == ENTRIES
    assert "Lesson 3" in invoke("show", LESSON_3[:8]).stdout
    assert "Lesson" in invoke("inject", "--limit", "3").stdout
    invoke("catch-up")
    assert invoke("log").stdout == ""  # a snapshot holds views, not the log
    assert files(snap) == before  # nothing was written, nothing rebuilt


@pytest.mark.parametrize(
    "args",
    [
        ["observe", "--name", "N", "--description", "A new lesson.", "--category", "facts"],
        ["retire", LESSON_3[:8], "--reason", "x"],
        ["redact", "--match", "Lesson 3", "--reason", "x"],
        ["replay"],
        ["verify", "--repair"],
        ["inject", "--limit", "3", "--record"],
    ],
    ids=["observe", "retire", "redact", "replay", "repair", "record"],
)
def test_writing_commands_refuse_in_one_line(snap: Path, args: list[str]) -> None:
    before = files(snap)
    result = invoke(*args, code=None)
    lines = result.stderr.strip().splitlines()
    if args[0] == "inject":  # the injection is shown; recording it is what is refused
        assert result.exit_code == 0 and "recall not recorded" in result.stderr
    else:
        assert result.exit_code != 0 and len(lines) == 1, result.output
    assert "is a snapshot" in result.stderr and "read-only" in result.stderr
    assert files(snap) == before


def test_replay_refuses_a_live_home_as_its_target(
    memlog_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    invoke("observe", "--name", "N", "--description", "A lesson.", "--category", "facts")
    other = tmp_path / "other-home"
    monkeypatch.setenv("MEMLOG_HOME", str(other))
    invoke("observe", "--name", "M", "--description", "Another lesson.", "--category", "facts")
    before = files(other)
    monkeypatch.setenv("MEMLOG_HOME", str(memlog_home))
    result = invoke("replay", "--until", "1", "--to", str(other), code=2)
    assert "holds a memlog log" in result.stderr
    assert files(other) == before
