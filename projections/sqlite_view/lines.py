"""Where the events about each entry, session and day are in the log: the ``lines`` table.

An event that arrives late (it sorts before events the views hold) is folded
again with every event about the entries, sessions and days it touches.
Finding those by reading the whole log costs what the log holds (seconds at
100k entries, for one event); this table keeps, for each entry id
(``session:<id>``, ``day:<date>`` for the ledger, ``maintenance`` for the
maintenance times), where the line of each event about it is, so the late
fold reads those lines alone.

A row holds one key's lines packed (``RECORD``, 20 bytes each, in the order
they were added): the event's stamp in the merged order, the line's offset
and length in its segment (``line_segments`` numbers the segments), and
whether it is an observation (the first one creates the entry).  A line
past 4 GiB into its segment is kept as unknown: a late event about it
rebuilds the views instead.  Every fold
adds the lines of the events it folds: a catch-up, a late fold, a rebuild
(which writes them all).  They say where events are, not what the view
holds, so the view's digest leaves them out.
"""

from __future__ import annotations

import os
import sqlite3
import struct
from collections import defaultdict
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

from memlog.eventlog.codec import BadLine, decode_line
from memlog.eventlog.events import (
    Event,
    Influenced,
    MaintenanceRan,
    MemoryEvolved,
    Observed,
    Recalled,
    SessionPending,
    SessionProgress,
)
from memlog.eventlog.log import Record
from memlog.files import read_only
from memlog.home import Home
from memlog.untrusted import shown

MAINTENANCE = "maintenance"
#: stamp, offset, segment number, length (its top bit: an observation)
RECORD = struct.Struct("<qIII")
_OBSERVATION = 1 << 31
_UNKNOWN = 0xFFFFFFFF
_CHUNK = 500
Row = tuple[str, int, str, int, int, bool]


class Damaged(Exception):
    """A row that is not a whole number of lines, or a line that is no longer where it
    says (the late fold rebuilds instead)."""


class First(NamedTuple):
    """An entry's first observation: its merge key, and whether it is among the late events."""

    key: tuple[int, str]
    late: bool


class Line(NamedTuple):
    """Where an event's line is (``end``: after its newline), and its stamp."""

    stamp: int
    segment: str
    start: int
    end: int


def keys(event: Event, ids: tuple[str, ...]) -> tuple[str, ...]:
    """What ``event`` (about the entries ``ids``) is folded into, as the table keys it."""
    if isinstance(event, MaintenanceRan):
        return (MAINTENANCE,)
    if isinstance(event, SessionPending | SessionProgress | MemoryEvolved):
        day = f"day:{event.ts[:10]}"
        return (f"session:{event.session_id}", day) if event.session_id else (day,)
    if isinstance(event, Recalled | Influenced) and event.session_id:  # received, judged
        return (*ids, f"session:{event.session_id}")
    return ids


def rows(stamp: int, record: Record, ids: tuple[str, ...]) -> list[Row]:
    """The rows of one event read from a log kept per device (``stamp``: its merge key's;
    ``ids``: the entries it is about)."""
    observed = isinstance(record.event, Observed)
    return [(k, stamp, record.segment, record.offset, record.end, observed)
            for k in keys(record.event, ids)]  # fmt: skip


def rows_of(record: Record) -> list[Row]:
    """``rows`` of a record of a merged read (none for a flat log's: nothing there comes
    late, and its ids are not worked out)."""
    stamp = getattr(record.mark, "stamp", None)
    return rows(stamp, record, record.event.entry_ids) if isinstance(stamp, int) else []


def add(db: sqlite3.Connection, found: Iterable[Row]) -> None:
    """Add the lines ``found`` to their keys' rows (inside the caller's transaction)."""
    found = list(found)
    if not found:
        return
    numbers = _segment_numbers(db)
    by_key: dict[str, list[tuple[int, int, int, int]]] = defaultdict(list)
    for key, stamp, segment, start, end, observed in found:
        number = numbers.get(segment)
        if number is None:
            number = numbers[segment] = _number(db, segment)
        if start >= _UNKNOWN or end - start >= _OBSERVATION:
            start, end = _UNKNOWN, _UNKNOWN
        by_key[key].append((stamp, start, number, (end - start) | (_OBSERVATION * observed)))
    chosen = sorted(by_key)
    for at in range(0, len(chosen), _CHUNK):
        chunk = chosen[at : at + _CHUNK]
        held = {str(k): bytes(d) for k, d in _select(db, "key, data", chunk)}
        db.executemany(
            "INSERT OR REPLACE INTO lines(key, data) VALUES (?, ?)",
            [(k, held.get(k, b"") + b"".join(RECORD.pack(*r) for r in by_key[k])) for k in chunk],
        )


def of(db: sqlite3.Connection, wanted: Iterable[str]) -> set[Line]:
    """The lines of every event about the keys ``wanted``."""
    return set(keyed(db, wanted))


def keyed(db: sqlite3.Connection, wanted: Iterable[str]) -> dict[Line, set[str]]:
    """The lines of every event about the keys ``wanted``, each with the keys whose rows
    name it."""
    names = {n: s for s, n in _segment_numbers(db).items()}
    found: dict[Line, set[str]] = {}
    for key, data in _select(db, "key, data", sorted(set(wanted))):
        for line in _lines(data, names):
            found.setdefault(line, set()).add(str(key))
    return found


def first_observations(db: sqlite3.Connection, entry_id: str) -> list[Line]:
    """The lines of the observations of ``entry_id`` with the lowest stamp (more than one
    when they tie: their event ids decide)."""
    names = {n: s for s, n in _segment_numbers(db).items()}
    row = db.execute("SELECT data FROM lines WHERE key = ?", (entry_id,)).fetchone()
    observed = [r for r in _records(row[0] if row is not None else b"") if r[3] & _OBSERVATION]
    lowest = min((r[0] for r in observed), default=None)
    return [_line(r, names) for r in observed if r[0] == lowest]


def read_lines(home: Home, found: Iterable[Line]) -> Iterator[tuple[Line, bytes]]:
    """The bytes of each line of ``found`` (without its newline), a file opened once;
    ``Damaged`` when one is not where it says."""
    by_segment: dict[str, list[Line]] = defaultdict(list)
    for line in found:
        by_segment[line.segment].append(line)
    for segment, wanted in sorted(by_segment.items()):
        device, _, name = segment.partition("/")
        if not device or "/" in name or device.startswith(".") or name.startswith("."):
            raise Damaged(f"{shown(segment)} is not a segment of the log")
        with read_only(home.device(device) / name) as handle:
            for line in sorted(wanted):
                data = os.pread(handle.fileno(), line.end - line.start, line.start)
                if len(data) != line.end - line.start or not data.endswith(b"\n"):
                    raise Damaged(f"{segment} is shorter than the line at {line.start}")
                yield line, data[:-1]


def events_at(home: Home, found: Iterable[Line]) -> Iterator[tuple[Line, Event]]:
    """The event of each line of ``found``; ``Damaged`` when one is gone or no longer
    reads as an event."""
    try:
        for line, data in read_lines(home, found):
            yield line, decode_line(data)
    except (OSError, BadLine) as exc:
        raise Damaged(f"a line the view indexed no longer reads: {exc}") from None


def _records(data: object) -> list[tuple[int, int, int, int]]:
    if not isinstance(data, bytes) or len(data) % RECORD.size:
        raise Damaged(f"a row of lines of {len(data) if isinstance(data, bytes) else 0} bytes")
    return list(RECORD.iter_unpack(data))


def _line(record: tuple[int, int, int, int], names: dict[int, str]) -> Line:
    stamp, start, number, length = record
    if start == _UNKNOWN:
        return Line(stamp, "", start, start)
    return Line(stamp, names.get(number, ""), start, start + (length & (_OBSERVATION - 1)))


def _lines(data: bytes, names: dict[int, str]) -> list[Line]:
    return [_line(r, names) for r in _records(data)]


def _select(db: sqlite3.Connection, columns: str, chosen: list[str]) -> list[tuple[Any, ...]]:
    found: list[tuple[Any, ...]] = []
    for at in range(0, len(chosen), _CHUNK):
        chunk = chosen[at : at + _CHUNK]
        marks = ",".join("?" * len(chunk))
        found += db.execute(f"SELECT {columns} FROM lines WHERE key IN ({marks})", chunk)
    return found


def _segment_numbers(db: sqlite3.Connection) -> dict[str, int]:
    return {str(name): int(n) for n, name in db.execute("SELECT id, name FROM line_segments")}


def _number(db: sqlite3.Connection, segment: str) -> int:
    cursor = db.execute("INSERT INTO line_segments(name) VALUES (?)", (segment,))
    return int(cursor.lastrowid or 0)
