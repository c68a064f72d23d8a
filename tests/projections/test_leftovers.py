"""What a killed or failed writer leaves is swept by the next one; a full disk is named.

A kill during a markdown write left a ``.tmp`` nobody removed; a failed rebuild
left ``.memory.db.rebuild-<pid>``, the size of the database, which on a nearly
full disk kept every later command failing; and disk-full errors read
``cannot rollback - no transaction is active`` or ``disk I/O error``.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from memlog.commands.cli import cli
from memlog.projections import leftovers, runner
from memlog.tests.eventlog.test_faults import fill, tmpfs

DEAD = 4_000_000  # above Linux's pid_max: never a live process


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def observe(name: str) -> None:
    result = invoke("observe", "--name", name, "--description", f"{name}.", "--category", "facts")
    assert result.exit_code == 0, result.output


def test_temporary_files_of_killed_writers_are_swept_at_the_next_start(memlog_home: Path) -> None:
    observe("First lesson")
    project = memlog_home / "projects" / "p"
    project.mkdir(parents=True)
    dead = [
        memlog_home / f".facts.md.{DEAD}-0a1b2c.tmp",
        memlog_home / "events" / f".clock.{DEAD}-0a1b2c.tmp",
        project / f".facts.md.{DEAD}-99aa00.tmp",
        memlog_home / f".memory.db.rebuild-{DEAD}-0a1b2c",
        memlog_home / f".memory.db.rebuild-{DEAD}-0a1b2c-wal",
    ]
    for path in dead:
        path.write_bytes(b"x" * 4096)
    live = memlog_home / f".facts.md.{os.getpid()}-0a1b2c.tmp"  # a writer still at work
    live.write_bytes(b"x")
    linked = memlog_home / f".heuristics.md.{DEAD}-0a1b2c.tmp"
    outside = memlog_home.parent / "outside"
    outside.write_text("theirs")
    linked.symlink_to(outside)
    observe("Second lesson")  # the next writer's catch-up sweeps
    assert [p for p in dead if p.exists()] == [] and live.exists()
    assert not linked.is_symlink() and outside.read_text() == "theirs"


def test_a_failed_rebuild_leaves_no_aside(
    memlog_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    observe("First lesson")

    def broken(*args: object, **kw: object) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(runner.indexes, "rebuild", broken)
    result = invoke("replay")
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: no space left on device while writing memory.db; nothing was lost: the log "
        "holds every event (run the command again once the disk has room)\n"
    )
    assert not list(memlog_home.glob(".memory.db.rebuild-*"))


@pytest.mark.parametrize(
    ("exc", "message"),
    [
        (sqlite3.OperationalError("database or disk is full"), "no space left on device"),
        (OSError(errno.ENOSPC, "No space left on device", "/h/vectors/x.vec"),
         "no space left on device while writing x.vec"),
        (OSError(errno.EIO, "Input/output error"), "disk I/O error while writing memory.db"),
    ],
)  # fmt: skip
def test_disk_failures_name_the_cause_and_the_file(
    exc: BaseException, message: str, tmp_path: Path
) -> None:
    found = leftovers.failure(exc, tmp_path / "memory.db")
    assert found is not None and message in str(found) and "nothing was lost" in str(found)
    assert leftovers.failure(sqlite3.OperationalError("database is locked"), tmp_path) is None


# -- a real full disk ----------------------------------------------------------------------


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    """An 8 MiB tmpfs."""
    with tmpfs(tmp_path / "disk", "8m") as mounted:
        yield mounted


def memlog(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MEMLOG_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "memlog", *args], capture_output=True, text=True, env=env,
        timeout=120, cwd=home.parent,
    )  # fmt: skip


@pytest.mark.slow
def test_a_full_disk_is_named_and_a_failed_rebuild_frees_its_room(disk: Path) -> None:
    home = disk / "home"
    lines = "\n".join(
        f'{{"name": "Lesson {i}", "description": "Lesson {i}: retry with jitter and a budget '
        f'{i}.", "category": "patterns"}}'
        for i in range(150)
    )
    done = subprocess.run(
        [sys.executable, "-m", "memlog", "observe", "--from", "-"], input=lines, text=True,
        capture_output=True, env={**os.environ, "MEMLOG_HOME": str(home)}, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    filler = fill(disk)

    replayed = memlog(home, "replay")
    assert replayed.returncode == 1 and "Traceback" not in replayed.stderr
    assert replayed.stderr == (
        "Error: no space left on device while writing memory.db; nothing was lost: the log "
        "holds every event (run the command again once the disk has room)\n"
    )
    assert not list(home.glob(".memory.db.rebuild-*"))  # its room is free again
    listed = memlog(home, "list", "--limit", "1")
    assert listed.returncode == 0 and "Lesson" in listed.stdout  # the old view still reads

    filler.unlink()
    assert memlog(home, "replay").returncode == 0
    assert "log: clean" in memlog(home, "verify").stdout
