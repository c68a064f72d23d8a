"""No clock loses events: a machine whose clock is far off still takes and gives them.

Every event's stamp is a hybrid logical clock reading: never behind what
this home wrote or received.  A machine whose wall clock is a year behind
joins a remote whose events all look a year ahead to it: it takes them (its
own stamps then follow them), says in one line at every sync how far off the
other clock is, and never takes another device's files off the remote.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from memlog.eventlog import clock
from memlog.eventlog.events import Observed
from memlog.eventlog.log import EventLog
from memlog.tests.sync.helpers import (
    KEYS,
    assert_same_views,
    bare_remote,
    git,
    init,
    memlog,
    memlog_ok,
    observe,
    remote_plain,
)

YEAR = 365 * 24 * 3600 * 1_000_000
HOUR = 3600 * 1_000_000


@contextlib.contextmanager
def clock_off(monkeypatch: pytest.MonkeyPatch, offset: int) -> Iterator[None]:
    """This process's wall clock ``offset`` microseconds off while inside."""
    real = clock.now_micros
    with monkeypatch.context() as patched:
        patched.setattr(clock, "now_micros", lambda: real() + offset)
        yield


def lessons(home: Path) -> set[str]:
    return {r.event.description for r in EventLog(home).read() if isinstance(r.event, Observed)}


def remote_files(remote: str) -> list[str]:
    listed = git("--git-dir", remote, "ls-tree", "-r", "--name-only", "memlog").stdout
    return listed.split()


def remote_lessons(remote: str) -> set[str]:
    found = set()
    for line in remote_plain(remote, KEYS[remote]).splitlines():
        event = json.loads(line)
        if event["type"] == "entry.observed":
            found.add(event["description"])
    return found


def test_a_home_a_year_behind_joins_takes_every_event_and_removes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    remote = str(bare_remote(tmp_path / "remote.git"))
    first, behind = tmp_path / "first", tmp_path / "behind"
    for i in range(3):
        observe(first, f"A lesson of the first home, number {i}.")
    init(first, remote)
    files = remote_files(remote)
    with clock_off(monkeypatch, -YEAR):
        observe(behind, "A lesson written on the machine a year behind.")
        done = memlog(behind, "sync", "--init", remote, "--key", KEYS[remote])
    assert done.exit_code == 0, done.output
    assert set(files) <= set(remote_files(remote))  # nothing of the first home went
    said = [line for line in done.stderr.splitlines() if "ahead of this machine's clock" in line]
    assert len(said) == 1 and "365 days" in said[0], done.stderr
    assert lessons(behind) == lessons(first) | {"A lesson written on the machine a year behind."}
    with clock_off(monkeypatch, -YEAR):
        observe(behind, "Written after the join, a year behind.")
        again = memlog_ok(behind, "sync")
    assert "365 days" in again.stderr  # told at every sync while it lasts
    ordered = [r.event for r in EventLog(behind).read() if isinstance(r.event, Observed)]
    assert ordered[-1].description.startswith("Written after the join")  # after what it saw
    memlog_ok(first, "sync")
    assert_same_views([first, behind])


def test_three_homes_one_a_year_behind_end_with_the_same_events(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    remote = str(bare_remote(tmp_path / "remote.git"))
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    observe(a, "A's first lesson.")
    init(a, remote)
    observe(b, "B's first lesson.")
    init(b, remote)
    with clock_off(monkeypatch, -YEAR):
        observe(c, "C's first lesson, a year behind.")
        init(c, remote)
    observe(a, "A's later lesson.")
    memlog_ok(a, "sync")
    with clock_off(monkeypatch, -YEAR):
        memlog_ok(c, "sync")
        observe(c, "C's later lesson.")
        memlog_ok(c, "sync")
    memlog_ok(b, "sync")
    for home in (a, b):
        memlog_ok(home, "sync")
    with clock_off(monkeypatch, -YEAR):
        memlog_ok(c, "sync")
    memlog_ok(a, "sync")
    memlog_ok(b, "sync")
    everything = lessons(a) | lessons(b) | lessons(c)
    assert len(everything) == 5
    for home in (a, b, c):
        assert lessons(home) == everything
        assert memlog(home, "verify").exit_code == 0
    assert remote_lessons(remote) == everything
    status = json.loads(memlog_ok(a, "sync", "--status", "--json").stdout)
    assert status["unsent"] == 0
    assert_same_views([a, b, c])


def test_a_clock_a_year_ahead_elsewhere_is_taken_and_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    remote = str(bare_remote(tmp_path / "remote.git"))
    here, ahead = tmp_path / "here", tmp_path / "ahead"
    observe(here, "Written here.")
    init(here, remote)
    with clock_off(monkeypatch, YEAR):
        observe(ahead, "Written a year ahead.")
        init(ahead, remote)
    done = memlog(here, "sync")
    assert done.exit_code == 0, done.output
    assert "Written a year ahead." in lessons(here)
    assert any("ahead of this machine's clock" in ln for ln in done.stderr.splitlines())
    memlog_ok(here, "retire", "--reason", "answered", _id(here, "Written a year ahead."))
    events = [r.event for r in EventLog(here).read()]
    assert type(events[-1]).__name__ == "Retired"  # sorts after what it answers
    memlog_ok(here, "sync")
    memlog_ok(ahead, "sync")
    assert_same_views([here, ahead])


def _id(home: Path, description: str) -> str:
    from memlog.eventlog.events import content_hash

    return content_hash(description)[:10]
