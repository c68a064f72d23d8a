"""Reading a log kept per device as one log, in one order every machine agrees on.

Each device's events are read in its own sequence order (batches whole,
bad lines reported, as ``reader.read_segment`` does) and the devices are
merged by ``(stamp, id)``: ``stamp`` is the event's clock reading
(``clock.advance``), strictly increasing within a device, so the merge is a
sort of the whole set of events, whatever order they arrived in.

A reader's place is a ``Cursor``: for every device, the line of the last
event read (segment, offsets, sequence, stamp), plus the key and ordinal of
the last event overall.  Following on from a cursor is exact when every new
event sorts after that key.  When one sorts before it (another device's
event arrived late), or the bytes under the cursor changed (a rewritten
segment), the reader raises ``Unfollowable`` (``Late`` for the first) and the
caller folds again: from zero, or only what the late events touch
(``unfolded`` names them).
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Iterator
from operator import itemgetter
from pathlib import Path
from typing import NamedTuple

import msgspec

from memlog.eventlog import clock, devices
from memlog.eventlog import segments as seg
from memlog.eventlog.codec import BadLine, decode_line
from memlog.eventlog.reader import (
    START,
    DamageHandler,
    Position,
    Record,
    read_segment,
    written_in,
    written_whole,
)
from memlog.files import read_only
from memlog.home import Home

#: a materialised cursor every so many records keeps the chain of steps short
_CHECKPOINT = 1024


class Unfollowable(Exception):
    """The log can no longer be followed from the given position."""


class Late(Unfollowable):
    """Events past the position sort before its last event (another device's, received
    late): following on would fold them out of order."""


class DeviceMark(msgspec.Struct, frozen=True, array_like=True):
    """The last line read from one device: where it is, its sequence, stamp and event id
    ("" in positions stored before it was kept)."""

    segment: str
    start: int
    end: int
    seq: int
    stamp: int
    id: str = ""


class Cursor(msgspec.Struct, frozen=True, kw_only=True):
    """A place in the merged order: after the event ``(stamp, id)``, the ``n``-th."""

    n: int = 0
    stamp: int = 0
    id: str = ""
    devices: dict[str, DeviceMark] = msgspec.field(default_factory=dict)

    @property
    def key(self) -> tuple[int, str]:
        return (self.stamp, self.id)


_ENCODER = msgspec.json.Encoder()
_DECODER = msgspec.json.Decoder(Cursor)


def encode(cursor: Cursor) -> Position:
    return Position(_ENCODER.encode(cursor).decode("ascii"), cursor.n)


def decode(position: Position) -> Cursor:
    """The cursor of ``position``; a flat log's position (or none) raises ``Unfollowable``."""
    if position == START:
        return Cursor()
    if not position.segment.startswith("{"):
        raise Unfollowable(f"{position.segment} is a place in a flat log")
    try:
        return _DECODER.decode(position.segment)
    except msgspec.DecodeError as exc:
        raise Unfollowable(f"unreadable position: {exc}") from None


class Step(NamedTuple):
    """One record's place: the step before it (or a whole cursor) and the line it read."""

    prev: Step | Cursor
    device: str
    segment: str
    start: int
    end: int
    seq: int
    stamp: int
    id: str
    ordinal: int

    def cursor(self) -> Cursor:
        marks: dict[str, DeviceMark] = {}
        node: Step | Cursor = self
        while isinstance(node, Step):
            if node.device not in marks:
                marks[node.device] = DeviceMark(
                    node.segment, node.start, node.end, node.seq, node.stamp, node.id
                )
            node = node.prev
        for device, mark in node.devices.items():
            marks.setdefault(device, mark)
        return Cursor(
            n=self.ordinal, stamp=self.stamp, id=self.id, devices=dict(sorted(marks.items()))
        )

    def position(self) -> Position:
        return encode(self.cursor())


#: a device's next record: its merge key, then what a ``Step`` needs
_Item = tuple[tuple[int, str], str, str, Record]


def read_merged(
    home: Home, start: Position = START, on_damage: DamageHandler | None = None
) -> Iterator[Record]:
    """Every good event after ``start`` in the merged order, each with its ``Step``."""
    base = decode(start)
    names = devices.device_dirs(home)
    gone = sorted(set(base.devices) - set(names))
    if gone:
        raise Unfollowable(f"device {gone[0]} is no longer in the log")
    streams = [_device_events(home, name, base.devices.get(name), on_damage) for name in names]
    merged = streams[0] if len(streams) == 1 else heapq.merge(*streams, key=itemgetter(0))
    previous: Step | Cursor = base
    ordinal = base.n
    for key, device, segment, record in merged:
        ordinal += 1
        if ordinal == base.n + 1 and base.n and key <= base.key:
            raise Late(f"{record.segment} holds an event that sorts before the position")
        if ordinal % _CHECKPOINT == 0 and isinstance(previous, Step):
            previous = previous.cursor()
        event = record.event
        previous = Step(
            previous, device, segment, record.offset, record.end, event.seq, key[0], key[1], ordinal
        )  # fmt: skip
        yield Record(event, record.segment, record.offset, record.end, record.line, previous)


class Unfolded(NamedTuple):
    """An event a fold has not seen: its merge key, its device, and the record."""

    key: tuple[int, str]
    device: str
    record: Record


def unfolded(
    home: Home, start: Position, on_damage: DamageHandler | None = None
) -> Iterator[Unfolded]:
    """The good events past ``start`` on every device, device after device (not merged):
    the events a fold up to ``start`` has not seen, wherever they sort."""
    base = decode(start)
    for name in devices.device_dirs(home):
        for key, device, _segment, record in _device_events(
            home, name, base.devices.get(name), on_damage
        ):
            yield Unfolded(key, device, record)


def advanced(base: Cursor, read: list[Unfolded]) -> Cursor:
    """The cursor past ``base`` and the events ``read`` after it (each device's in its
    order), wherever they sort: the one a merged read of them all ends on."""
    marks = dict(base.devices)
    for key, device, record in read:
        name = record.segment.rpartition("/")[2]
        event = record.event
        marks[device] = DeviceMark(name, record.offset, record.end, event.seq, key[0], event.id)
    top = max([base.key, *(item.key for item in read)])
    return Cursor(
        n=base.n + len(read), stamp=top[0], id=top[1], devices=dict(sorted(marks.items()))
    )


def _device_events(
    home: Home, device: str, mark: DeviceMark | None, on_damage: DamageHandler | None
) -> Iterator[_Item]:
    """One device's events after ``mark``, in its sequence order, with their merge keys."""
    folder = home.device(device)
    if mark is not None:
        _check_mark(folder / mark.segment, mark)
    stamp = mark.stamp if mark is not None else 0
    paths, written = seg.list_segments(folder), written_in(home, folder)
    for index, path in enumerate(paths):
        if mark is not None and path.name < mark.segment:
            continue
        offset = mark.end if mark is not None and path.name == mark.segment else 0
        name, whole = f"{device}/{path.name}", written_whole(paths, index, written)
        for record in read_segment(path, offset, on_damage, name=name, written=whole):
            stamp = clock.advance(stamp, record.event.ts)
            yield (stamp, record.event.id), device, path.name, record


def marks_hold(home: Home, position: Position) -> bool:
    """Whether every device's line under ``position`` is still the event it names."""
    try:
        cursor = decode(position)
        for device, mark in cursor.devices.items():
            _check_mark(home.segment(f"{device}/{mark.segment}"), mark)
    except Unfollowable:
        return False
    return True


def _check_mark(path: Path, mark: DeviceMark) -> None:
    """The line under ``mark`` must still be the event it names (else the file was rewritten)."""
    try:
        with read_only(path) as handle:
            line = os.pread(handle.fileno(), mark.end - mark.start, mark.start)
    except FileNotFoundError:
        raise Unfollowable(f"{path.parent.name}/{path.name} is gone") from None
    try:
        event = decode_line(line)
        seq, found = event.seq, event.id
    except BadLine:
        seq, found = -1, ""
    if seq != mark.seq or (mark.id and found != mark.id):
        raise Unfollowable(f"{path.parent.name}/{path.name} changed under the position")


# -- how far a position is from the end of the log ---------------------------------


def unread_bytes(home: Home, position: Position, folded: int = -1) -> int | None:
    """Bytes of log after ``position`` (None when the position does not fit the log: a
    segment it names is gone or shorter, or, given ``folded``, the bytes before it are no
    longer the ``folded`` bytes a fold up to it read: a segment was deleted, cut, taken
    back or rewritten before it)."""
    found = _measure(home, position)
    if found is None or (folded >= 0 and found[0] != folded):
        return None
    return found[1]


def folded_bytes(home: Home, position: Position) -> int:
    """Bytes of log a fold up to ``position`` read (-1 when it does not fit the log)."""
    found = _measure(home, position)
    return found[0] if found is not None else -1


def _measure(home: Home, position: Position) -> tuple[int, int] | None:
    """The bytes of log before ``position`` and after it (None when it does not fit)."""
    if not devices.is_per_device(home):
        if position.segment.startswith("{"):
            return None
        return _flat_measure(_sizes(home.events), position)
    try:
        cursor = decode(position)
    except Unfollowable:
        return None
    before = after = 0
    for device in devices.device_dirs(home):
        sizes = _sizes(home.device(device))
        mark = cursor.devices.get(device)
        if mark is None:
            after += sum(sizes.values())
            continue
        found = _flat_measure(sizes, Position(mark.segment, mark.end))
        if found is None:
            return None
        before, after = before + found[0], after + found[1]
    return before, after


def _sizes(folder: Path) -> dict[str, int]:
    sizes = {}
    for path in seg.list_segments(folder):
        try:
            sizes[path.name] = path.stat().st_size
        except FileNotFoundError:
            continue
    return sizes


def _flat_measure(sizes: dict[str, int], position: Position) -> tuple[int, int] | None:
    segment, offset = position
    if segment and (segment not in sizes or sizes[segment] < offset):
        return None
    before = sum(size for name, size in sizes.items() if name < segment) + offset
    after = sum(size - (offset if name == segment else 0) for name, size in sizes.items()
                if name >= segment)  # fmt: skip
    return before, after
