"""What ranking reads of every entry, one record per slot: ``index/<generation>.rnk``.

Every start ranks all live entries, and reading their columns row by row
from SQLite costs more than the rest of the ranking.  So the projection
keeps them packed (``packed``: a slot file), one 40-byte record per entry in
slot order, live or not:

    id       16 ASCII bytes
    since    float64: julianday of the time recency counts from (``SINCE``),
             +inf when it cannot be read (then the days are 0)
    count    uint32: observation count
    recalls  uint32: recall count
    code     uint8: category, its place in ``CATEGORIES`` (4: another)
    level    uint8: confidence, its place in ``LEVELS`` (2: another, as medium)
    flags    uint8: ``LIVE``, ``VECTOR`` (a vector in the space in force),
             ``PIVOT`` (a pivot of the neighbour graph when a member: ``is_pivot``)
    (5 bytes of padding, so ``since`` stays aligned)

A catch-up rewrites the records of the entries its events touched and
appends those of new entries; a rebuild writes them all.  Both read the
values through the same SQL, so they write the same bytes.
"""

from __future__ import annotations

import hashlib
import sqlite3
import struct
from collections.abc import Callable, Iterable, Iterator

from memlog.home import Home
from memlog.projections.sqlite_view import index_files, packed
from memlog.vocabulary import CATEGORIES

Vectored = Callable[[str], bool]
KIND = "rnk"
MAGIC = b"MLRNK003"
RECORD = struct.Struct("<16sdIIBBB5x")
LIVE, VECTOR, PIVOT = 1, 2, 4
#: one entry in this many is a pivot of the neighbour graph (``graph``)
PIVOT_EVERY = 64
#: the record's fields as numpy reads them (``reading``)
DTYPE = [
    ("id", "S16"), ("since", "<f8"), ("count", "<u4"), ("recalls", "<u4"), ("code", "u1"),
    ("level", "u1"), ("flags", "u1"), ("pad", "V5"),
]  # fmt: skip
#: confidence levels by code; anything else ranks as medium
LEVELS = ("high", "low", "medium")
#: the ``Last observed`` date of an entry known only from imported files, else NULL
IMPORTED_OBSERVED = (
    "CASE WHEN sources = '[\"import\"]' AND last_observed GLOB "
    "'[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*' THEN last_observed END"
)
#: julianday of the time recency counts from: an imported entry's ``Last observed`` (an
#: ISO date or time, UTC unless it says otherwise), else ``updated_at`` (the import itself
#: would make every lesson new); julianday has millisecond steps, far below a day's
SINCE = f"coalesce(julianday({IMPORTED_OBSERVED}), julianday(updated_at))"
_CODES = " ".join(f"WHEN '{c}' THEN {n}" for n, c in enumerate(CATEGORIES))
_LEVELS = " ".join(f"WHEN '{c}' THEN {n}" for n, c in enumerate(LEVELS[:2]))
_SELECT = (
    f"SELECT slot, id, {SINCE}, observation_count, recall_count, "
    f"CASE category {_CODES} ELSE {len(CATEGORIES)} END, CASE confidence {_LEVELS} ELSE 2 END, "
    "status = 'live' FROM entries"
)


def records(
    db: sqlite3.Connection, ids: Iterable[str] | None, vectored: Vectored
) -> Iterator[tuple[int, bytes]]:
    """``(slot, record)`` of the entries ``ids`` (all of them, in slot order, without);
    ``vectored(id)``: whether the entry has a vector in the space in force."""
    if ids is None:
        rows: Iterable[tuple[object, ...]] = db.execute(_SELECT + " ORDER BY slot")
    else:
        wanted = sorted(set(ids))
        rows = [
            row
            for start in range(0, len(wanted), 500)
            for row in db.execute(
                f"{_SELECT} WHERE id IN ({','.join('?' * len(wanted[start : start + 500]))})",
                wanted[start : start + 500],
            )
        ]
    for slot, entry_id, since, count, recalls, code, level, live in rows:
        flags = (LIVE if live else 0) | (VECTOR if vectored(str(entry_id)) else 0)
        flags |= PIVOT if is_pivot(str(entry_id)) else 0
        since_value = float("inf") if since is None else float(since)  # type: ignore[arg-type]
        data = RECORD.pack(
            str(entry_id).encode("ascii"), since_value, count, recalls, code, level, flags
        )
        yield int(slot), data  # type: ignore[call-overload]


def build(db: sqlite3.Connection, folder: Home, ordinal: int, vectored: Vectored) -> int:
    """Write every entry's record into a new file and point ``packed_sets`` at it; the
    number of slots."""
    rows = [data for _, data in records(db, None, vectored)]
    name = packed.generation_name(ordinal, f".{KIND}")
    data = packed.header(MAGIC, RECORD.size) + b"".join(rows)
    index_files.point(db, KIND, packed.write(folder.index, name, data), len(rows))
    return len(rows)


def patch(
    db: sqlite3.Connection,
    folder: Home,
    ids: Iterable[str],
    slots: int,
    vectored: Vectored,
) -> bool:
    """Rewrite the records of ``ids`` (and append new ones) so the file covers ``slots``
    entries; False when there is no file to patch (the caller builds one)."""
    found = index_files.pointer(db, KIND)
    if found is None:
        return False
    changed = list(records(db, ids, vectored))
    if not packed.patch(folder.index, found[0], RECORD.size, found[1], changed):
        return False
    index_files.point(db, KIND, found[0], slots)
    return True


def is_pivot(entry_id: str) -> bool:
    """Whether the entry is a pivot of the neighbour graph when it is a member: one in
    ``PIVOT_EVERY`` by a hash of its id, the same on every machine and at any slot."""
    digest = hashlib.blake2b(entry_id.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little") % PIVOT_EVERY == 0


def has_vector(found: index_files.Slots, slot: int) -> bool:
    """Whether the record of ``slot`` says its entry has a vector in the space in force."""
    return bool(found.data[slot * RECORD.size + RECORD.size - 6] & VECTOR)


def vectored(db: sqlite3.Connection, folder: Home) -> int:
    """How many of the records this snapshot covers say their entry has a vector in the
    space in force (0 without a file)."""
    import numpy as np  # (a writer's: catch-ups load it)

    found = read(db, folder)
    if found is None or not found.total:
        return 0
    flags = np.frombuffer(found.data, dtype=np.dtype(DTYPE))["flags"]
    return int(np.count_nonzero(flags & VECTOR))


def read(db: sqlite3.Connection, folder: Home) -> index_files.Slots | None:
    """The records this snapshot covers, mapped; None without a usable file."""
    found = index_files.slots(db, folder, KIND, MAGIC)
    return found if found is not None and found.record == RECORD.size else None
