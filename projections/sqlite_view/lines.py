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

import sqlite3
from collections import defaultdict
from collections.abc import Iterable
from typing import Any, NamedTuple

import numpy as np

from memlog.eventlog.events import (
    Event,
    MaintenanceRan,
    MemoryEvolved,
    Observed,
    SessionPending,
    SessionProgress,
)
from memlog.eventlog.log import Record

MAINTENANCE = "maintenance"
#: stamp, offset, segment number, length (its top bit: an observation)
RECORD = np.dtype([("stamp", "<i8"), ("start", "<u4"), ("segment", "<u4"), ("length", "<u4")])
_OBSERVATION = 1 << 31
_UNKNOWN = 0xFFFFFFFF
_CHUNK = 500
Row = tuple[str, int, str, int, int, bool]


class Damaged(Exception):
    """A row that is not a whole number of lines (the late fold rebuilds instead)."""


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
    return ids


def rows(stamp: int, record: Record, ids: tuple[str, ...]) -> list[Row]:
    """The rows of one event read from a log kept per device (``stamp``: its merge key's;
    ``ids``: the entries it is about)."""
    observed = isinstance(record.event, Observed)
    return [(k, stamp, record.segment, record.offset, record.end, observed)
            for k in keys(record.event, ids)]  # fmt: skip


def rows_of(record: Record, ids: tuple[str, ...]) -> list[Row]:
    """``rows`` of a record of a merged read (none for a flat log's: nothing there comes
    late)."""
    stamp = getattr(record.mark, "stamp", None)
    return rows(stamp, record, ids) if isinstance(stamp, int) else []


def add(db: sqlite3.Connection, found: Iterable[Row]) -> None:
    """Add the lines ``found`` to their keys' rows (inside the caller's transaction)."""
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
            [(k, held.get(k, b"") + np.array(by_key[k], dtype=RECORD).tobytes()) for k in chunk],
        )


def of(db: sqlite3.Connection, wanted: Iterable[str]) -> set[Line]:
    """The lines of every event about the keys ``wanted``."""
    names = {n: s for s, n in _segment_numbers(db).items()}
    found: set[Line] = set()
    for (data,) in _select(db, "data", sorted(set(wanted))):
        found.update(_lines(data, names))
    return found


def first_observations(db: sqlite3.Connection, entry_id: str) -> list[Line]:
    """The lines of the observations of ``entry_id`` with the lowest stamp (more than one
    when they tie: their event ids decide)."""
    names = {n: s for s, n in _segment_numbers(db).items()}
    row = db.execute("SELECT data FROM lines WHERE key = ?", (entry_id,)).fetchone()
    table = _table(row[0] if row is not None else b"")
    table = table[(table["length"] & _OBSERVATION) != 0]
    if not len(table):
        return []
    return _lines(table[table["stamp"] == table["stamp"].min()].tobytes(), names)


def _table(data: object) -> np.ndarray:
    if not isinstance(data, bytes) or len(data) % RECORD.itemsize:
        raise Damaged(f"a row of lines of {len(data) if isinstance(data, bytes) else 0} bytes")
    return np.frombuffer(data, dtype=RECORD)


def _lines(data: bytes, names: dict[int, str]) -> list[Line]:
    table = _table(data)
    lengths = (table["length"] & (_OBSERVATION - 1)).tolist()
    columns = zip(table["stamp"].tolist(), table["segment"].tolist(), table["start"].tolist(),
                  lengths, strict=True)  # fmt: skip
    return [
        Line(stamp, names.get(n, "") if start != _UNKNOWN else "", start, start + size)
        for stamp, n, start, size in columns
    ]


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
