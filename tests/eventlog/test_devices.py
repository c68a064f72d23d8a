"""The device id, and moving a flat log into this device's directory."""

from __future__ import annotations

import os
from pathlib import Path

from memlog.eventlog import devices
from memlog.eventlog.events import Observed
from memlog.eventlog.log import EventLog
from memlog.eventlog.verify import repair_log, verify_log
from memlog.home import Home


def lessons(n: int, start: int = 0) -> list[Observed]:
    return [Observed(name=f"L{i}", description=f"Lesson {i}.", category="facts")
            for i in range(start, start + n)]  # fmt: skip


def flat_log(home: Path) -> EventLog:
    log = EventLog(home, segment_bytes=600)
    for i in range(6):
        log.append(lessons(2, 2 * i))
    assert len(log.segments()) > 2 and not devices.is_per_device(log.home)
    return log


def test_the_device_id_is_made_once(memlog_home: Path) -> None:
    events = Home(memlog_home)
    first = devices.device_id(Home(events))
    assert devices.DEVICE_RE.match(first)
    assert devices.device_id(Home(events)) == first
    assert events.device_file.read_text().strip() == first


def test_moving_keeps_every_byte_and_the_order(memlog_home: Path) -> None:
    log = flat_log(memlog_home)
    before = {p.name: p.read_bytes() for p in log.segments()}
    events_before = [r.event for r in log.read()]
    with log._locked():
        moved = devices.to_devices(log.home)
    own = devices.device_id(log.home)
    assert moved == sorted(before)
    assert {p.name: p.read_bytes() for p in log.segments()} == before
    assert all(p.parent.name == own for p in log.segments())
    assert not devices.flat_segments(log.home)
    assert [r.event for r in log.read()] == events_before
    assert [r.ordinal for r in log.read()] == [e.seq for e in events_before]
    assert verify_log(log).clean


def test_appends_go_on_in_the_device_directory(memlog_home: Path) -> None:
    log = flat_log(memlog_home)
    with log._locked():
        devices.to_devices(log.home)
    stored = EventLog(memlog_home).append(lessons(1, 50))
    assert stored[0].seq == 13
    own = memlog_home / "events" / devices.device_id(log.home)
    assert b"Lesson 50." in max(own.glob("*.jsonl")).read_bytes()
    report = verify_log(log)
    assert report.clean and report.devices == {own.name: 13}


def test_a_move_cut_short_is_finished_or_undone(memlog_home: Path) -> None:
    log = flat_log(memlog_home)
    events = log.home
    own = devices.device_id(Home(events))
    # killed while linking: a staging directory nobody reads
    staging = events.moving(own)
    staging.mkdir()
    os.link(log.segments()[0], staging / log.segments()[0].name)
    assert not devices.is_per_device(Home(events))
    assert len(list(log.read())) == 12
    with log._locked():
        devices.to_devices(Home(events))
    assert not staging.exists() and len(list(log.read())) == 12
    # killed after the rename, before the flat names went: the next move drops them
    first = log.segments()[0]
    os.link(first, events.segment(first.name))
    assert len(list(log.read())) == 12  # the flat copy is not read twice
    with log._locked():
        assert devices.to_devices(Home(events)) == [first.name]
    assert verify_log(log).clean


def test_repair_per_device_acknowledges_its_own_gaps(memlog_home: Path) -> None:
    log = flat_log(memlog_home)
    with log._locked():
        devices.to_devices(log.home)
    path = log.segments()[0]
    data = bytearray(path.read_bytes())
    data[data.index(b"Lesson 0.")] = ord("X")  # a damaged line: checksum fails
    path.write_bytes(bytes(data))
    assert not verify_log(log).clean
    moved = repair_log(log)
    assert moved and moved[0].startswith(f"moved {log.name_of(path)} line 1")
    report = verify_log(log)
    assert report.clean and report.acknowledged_gaps
