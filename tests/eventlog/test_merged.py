"""Reading a log kept per device: one order, followed exactly or refused."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from memlog.eventlog import clock
from memlog.eventlog.codec import encode_line
from memlog.eventlog.events import Observed
from memlog.eventlog.log import START, EventLog
from memlog.eventlog.merged import Unfollowable, decode, unread_bytes
from memlog.home import Home

T0 = clock.micros("2026-05-01T09:00:00Z")
SEGMENT = "00000000000000000001.jsonl"


def line(device: str, seq: int, at: int, batch_end: int = 0, ts: str = "") -> bytes:
    event = Observed(
        seq=seq, id=f"{device}-{seq:03d}", ts=ts or clock.iso(T0 + at), batch_end=batch_end,
        name=f"{device} {seq}", description=f"{device} lesson {seq}.", category="facts",
    )  # fmt: skip
    return encode_line(event)


def put(home: Path, device: str, *lines: bytes) -> Path:
    folder = home / "events" / device
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / SEGMENT
    path.write_bytes(b"".join(lines))
    return path


def names(home: Path, start=START) -> list[str]:
    return [r.event.id for r in EventLog(home).read(start)]


def test_devices_merge_by_clock_then_id(memlog_home: Path) -> None:
    put(memlog_home, "aa", line("aa", 1, 10), line("aa", 2, 30), line("aa", 3, 50))
    put(memlog_home, "bb", line("bb", 1, 20), line("bb", 2, 30), line("bb", 3, 40))
    assert names(memlog_home) == [
        "aa-001", "bb-001", "aa-002", "bb-002", "bb-003", "aa-003"
    ]  # fmt: skip
    records = list(EventLog(memlog_home).read())
    assert [r.ordinal for r in records] == [1, 2, 3, 4, 5, 6]
    assert records[1].segment == f"bb/{SEGMENT}"


def test_a_device_keeps_its_own_order_when_its_clock_went_back(memlog_home: Path) -> None:
    # written before the clock existed: a batch shares one time, and a later batch is older
    put(memlog_home, "aa", line("aa", 1, 50, 2), line("aa", 2, 50, 2), line("aa", 3, 5))
    put(memlog_home, "bb", line("bb", 1, 51))
    assert names(memlog_home) == ["aa-001", "aa-002", "bb-001", "aa-003"]


def test_following_on_equals_reading_at_once(memlog_home: Path) -> None:
    put(memlog_home, "aa", line("aa", 1, 10), line("aa", 2, 30))
    put(memlog_home, "bb", line("bb", 1, 20))
    first = list(EventLog(memlog_home).read())
    put(memlog_home, "aa", line("aa", 1, 10), line("aa", 2, 30), line("aa", 3, 60))
    put(memlog_home, "bb", line("bb", 1, 20), line("bb", 2, 40))
    put(memlog_home, "cc", line("cc", 1, 70))
    after = list(EventLog(memlog_home).read(first[-1].after))
    assert [r.event.id for r in after] == ["bb-002", "aa-003", "cc-001"]
    assert [r.ordinal for r in after] == [4, 5, 6]
    assert after[-1].after == list(EventLog(memlog_home).read())[-1].after
    assert unread_bytes(Home(memlog_home), after[-1].after) == 0


def test_a_late_event_cannot_be_followed(memlog_home: Path) -> None:
    put(memlog_home, "aa", line("aa", 1, 10), line("aa", 2, 30))
    position = list(EventLog(memlog_home).read())[-1].after
    put(memlog_home, "bb", line("bb", 1, 20))  # sorts between what was read
    with pytest.raises(Unfollowable, match="sorts before"):
        list(EventLog(memlog_home).read(position))
    assert unread_bytes(Home(memlog_home), position) == len(line("bb", 1, 20))


def test_a_rewrite_under_the_position_cannot_be_followed(memlog_home: Path) -> None:
    path = put(memlog_home, "aa", line("aa", 1, 10), line("aa", 2, 30))
    position = list(EventLog(memlog_home).read())[-1].after
    longer = msgspec.structs.replace(
        EventLog(memlog_home).read().__next__().event, reasoning="x" * 40
    )
    path.write_bytes(encode_line(longer) + line("aa", 2, 30))
    with pytest.raises(Unfollowable, match="changed"):
        list(EventLog(memlog_home).read(position))
    assert unread_bytes(Home(memlog_home), position) is not None


def test_a_flat_position_cannot_be_followed(memlog_home: Path) -> None:
    put(memlog_home, "aa", line("aa", 1, 10))
    with pytest.raises(Unfollowable):
        decode(EventLog(memlog_home).read().__next__().after._replace(segment=SEGMENT))
    assert unread_bytes(Home(memlog_home), START) == len(line("aa", 1, 10))


def test_a_batch_still_being_written_is_not_read(memlog_home: Path) -> None:
    put(memlog_home, "aa", line("aa", 1, 10), line("aa", 2, 11, 3), line("aa", 3, 12, 3)[:-9])
    put(memlog_home, "bb", line("bb", 1, 20))
    assert names(memlog_home) == ["aa-001", "bb-001"]
