"""The clock stamped at append: strictly increasing per device, never behind what was seen."""

from __future__ import annotations

from pathlib import Path

import pytest

from memlog.eventlog import clock
from memlog.eventlog.events import Observed
from memlog.eventlog.log import EventLog
from memlog.home import Home


def lesson(i: int) -> Observed:
    return Observed(name=f"L{i}", description=f"Lesson {i}.", category="facts")


def test_readings_round_trip() -> None:
    for text in ("2026-03-01T10:20:30.123456Z", "1999-12-31T23:59:59.999999Z"):
        assert clock.iso(clock.micros(text)) == text
    assert clock.micros("not a time") == 0


def test_a_batch_gets_increasing_times(memlog_home: Path) -> None:
    stored = EventLog(memlog_home).append([lesson(i) for i in range(5)])
    stamps = [clock.micros(e.ts) for e in stored]
    assert stamps == list(range(stamps[0], stamps[0] + 5))


def test_a_clock_set_back_never_makes_time_go_back(
    memlog_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = EventLog(memlog_home)
    first = log.append([lesson(0)])[0]
    monkeypatch.setattr(clock, "now_micros", lambda: clock.micros("2001-01-01T00:00:00Z"))
    second = log.append([lesson(1)])[0]
    assert clock.micros(second.ts) == clock.micros(first.ts) + 1


def test_events_appended_after_a_sync_sort_after_what_it_brought(
    memlog_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = EventLog(memlog_home)
    log.append([lesson(0)])
    ahead = clock.micros("2040-01-01T00:00:00Z")  # another machine's clock runs ahead
    clock.raise_floor(log.home, ahead)
    clock.raise_floor(log.home, ahead - 10)  # the floor never goes down
    assert clock.read_floor(log.home) == ahead
    assert clock.micros(log.append([lesson(1)])[0].ts) == ahead + 1


def test_an_unreadable_floor_counts_as_none(memlog_home: Path) -> None:
    (memlog_home / "events").mkdir(parents=True)
    (memlog_home / "events" / ".clock").write_text("garbage")
    assert clock.read_floor(Home(memlog_home)) == 0
    assert EventLog(memlog_home).append([lesson(0)])
