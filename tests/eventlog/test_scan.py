"""Finding an entry's events and the newest events without decoding the whole log: the
answers must equal those of reading every event."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from memlog.eventlog import devices, scan
from memlog.eventlog.codec import encode_line
from memlog.eventlog.events import (
    Event,
    EventBase,
    Labelled,
    Observed,
    Recalled,
    Retired,
    Superseded,
    content_hash,
)
from memlog.eventlog.log import EventLog
from memlog.home import Home

DESCRIPTIONS = [f"Lesson number {i} about retries" for i in range(12)]
IDS = [content_hash(d) for d in DESCRIPTIONS]


def random_events(rng: random.Random, n: int) -> list[EventBase]:
    events: list[EventBase] = []
    for _ in range(n):
        i, j = rng.randrange(12), rng.randrange(12)
        kind = rng.randrange(5)
        if kind == 0:  # the same entry, written another way: same id, other bytes
            text = DESCRIPTIONS[i].upper() if rng.random() < 0.5 else "  " + DESCRIPTIONS[i]
            events.append(Observed(name=f"L{i}", description=text, category="patterns"))
        elif kind == 1:
            events.append(Recalled(ids=(IDS[i], IDS[j])))
        elif kind == 2:
            events.append(Labelled(entry_id=IDS[i], keywords=("retry", "jitter", "net")))
        elif kind == 3:
            events.append(Superseded(entry_id=IDS[i], by=IDS[j], reason="newer"))
        else:
            events.append(Retired(entry_id=IDS[i], reason="old"))
    return events


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("scan")
    rng = random.Random(7)
    log = EventLog(home, segment_bytes=4096)  # several segments
    for _ in range(40):
        log.append(random_events(rng, rng.randrange(1, 6)))
    return home


@pytest.fixture
def log(built: Path, tmp_path: Path) -> EventLog:
    """A copy of the built log (some tests damage theirs)."""
    shutil.copytree(built, tmp_path / "home")
    return EventLog(tmp_path / "home", segment_bytes=4096)


def everything(log: EventLog) -> list[Event]:
    return [r.event for r in log.read()]


def test_an_entrys_events_equal_a_full_read(log: EventLog) -> None:
    assert len(log.segments()) > 2
    observations = 0
    for entry_id, description in zip(IDS, DESCRIPTIONS, strict=True):
        expected = [e for e in everything(log) if entry_id in e.entry_ids]
        assert list(scan.about(log, entry_id)) == expected
        assert list(scan.about(log, entry_id, description.upper())) == expected
        observations += sum(isinstance(e, Observed) for e in expected)
    assert observations > 10  # found by their descriptions, which the lines spell differently


@pytest.mark.parametrize("limit", [1, 7, 1000])
@pytest.mark.parametrize("tags", [(), ("entry.retired",), ("entry.observed", "entry.labelled")])
@pytest.mark.parametrize("up_to", [None, 5, 60])
def test_the_newest_events_equal_a_full_read(
    log: EventLog, limit: int, tags: tuple[str, ...], up_to: int | None
) -> None:
    wanted = [
        e
        for e in everything(log)
        if (not tags or e.__struct_config__.tag in tags) and (up_to is None or e.seq <= up_to)
    ]
    assert scan.latest(log, limit, tags, up_to) == list(reversed(wanted))[:limit]


@pytest.mark.parametrize("chunk", [7, 200, 1 << 20])
def test_chunks_of_any_size_give_the_same_answers(
    log: EventLog, chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lines cut by a chunk's edge (a chunk shorter than a line too) are read whole."""
    monkeypatch.setattr(scan, "CHUNK", chunk)
    events = everything(log)
    for up_to in (None, 1, 33, events[-1].seq, events[-1].seq + 5):
        wanted = [e for e in events if up_to is None or e.seq <= up_to]
        assert list(scan.newest(log, (), up_to)) == list(reversed(wanted))
    for entry_id in IDS[:4]:
        assert list(scan.about(log, entry_id)) == [e for e in events if entry_id in e.entry_ids]


def test_the_newest_events_cost_what_lies_after_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = EventLog(tmp_path / "home")  # one segment of ~6 MB
    rng = random.Random(3)
    for _ in range(60):
        log.append(random_events(rng, 500))
    total = sum(path.stat().st_size for path in log.segments())
    read: list[int] = []
    real = scan.os.pread

    def counted(fd: int, size: int, offset: int) -> bytes:
        data = real(fd, size, offset)
        read.append(len(data))
        return data

    monkeypatch.setattr(scan.os, "pread", counted)
    monkeypatch.setattr(scan, "CHUNK", 1 << 16)
    monkeypatch.setattr(scan, "TAIL_BYTES", 1 << 16)
    newest = scan.latest(log, 5)
    assert [e.seq for e in newest] == list(range(30_000, 29_995, -1))
    assert sum(read) < total / 20  # the end of the log, not all of it
    read.clear()
    older = scan.latest(log, 5, (), 1_000)  # found by bisection, not by reading back to it
    assert [e.seq for e in older] == list(range(1_000, 995, -1))
    assert sum(read) < total / 20


def test_a_batch_still_being_written_is_never_returned(log: EventLog) -> None:
    last = everything(log)[-1].seq
    batch = [
        Labelled(entry_id=IDS[0], keywords=("a", "b", "c"), seq=last + 1, id="x1",
                 ts="2026-11-23T00:00:00.000000Z", batch_end=last + 2),
    ]  # fmt: skip
    with open(log.segments()[-1], "ab") as handle:  # the first line of two, the second not yet
        handle.write(encode_line(batch[0]))
    assert scan.unfinished_batch(log) == last + 2
    assert everything(log)[-1].seq == last  # what a full read shows
    assert all(e.seq <= last for e in scan.about(log, IDS[0]))
    assert scan.latest(log, 1)[0].seq == last


def test_a_damaged_line_is_skipped(log: EventLog) -> None:
    segment = log.segments()[0]
    data = segment.read_bytes()
    target = IDS[3].encode()
    lines = data.split(b"\n")
    hit = next(n for n, line in enumerate(lines) if target in line)
    lines[hit] = lines[hit].replace(b'"seq":', b'"seq": ')  # edited: the checksum fails
    segment.write_bytes(b"\n".join(lines))
    found = list(scan.about(log, IDS[3]))
    assert found == [e for e in everything(log) if IDS[3] in e.entry_ids]


@pytest.fixture
def two_devices(built: Path, tmp_path: Path) -> EventLog:
    """The built log moved into its device's directory, beside another device's log."""
    mine, theirs = tmp_path / "home", tmp_path / "other"
    shutil.copytree(built, mine)
    other = EventLog(theirs, segment_bytes=4096)
    rng = random.Random(11)
    for _ in range(15):
        other.append(random_events(rng, rng.randrange(1, 4)))
    for home in (mine, theirs):
        devices.to_devices(Home(home))
    (device,) = devices.device_dirs(Home(theirs))
    shutil.copytree(theirs / "events" / device, mine / "events" / device)
    return EventLog(mine, segment_bytes=4096)


def test_a_log_kept_per_device_is_scanned_in_the_merged_order(two_devices: EventLog) -> None:
    log = two_devices
    records = list(log.read())
    assert len(devices.device_dirs(log.home)) == 2
    assert len({r.event.seq for r in records}) < len(records)  # each device counts from 1
    for entry_id in IDS:
        assert list(scan.about(log, entry_id)) == [
            r.event for r in records if entry_id in r.event.entry_ids
        ]
    for up_to in (None, 5, 60):
        for tags in ((), ("entry.retired",)):
            wanted = [
                r.event
                for r in records
                if (not tags or r.event.__struct_config__.tag in tags)
                and (up_to is None or r.ordinal <= up_to)
            ]
            assert scan.latest(log, 7, tags, up_to) == list(reversed(wanted))[:7]
