"""Entries taking other slots: the rows and packed files moved to a new order of slots.

A replay gives entries their slots in the order the log created them.  An
event that arrives late can create an entry before entries that have slots,
or show that an entry was created earlier than the view had it; the view
then gives every entry the slot a replay would (``new_of_old``: each old
slot's new one).  Each packed file is written anew with every record at its
entry's new slot and the slots it names renumbered (the neighbour lists,
the lexical postings): a pass over the files' bytes, no fold, no embedding,
no neighbour search.  The slots no old one moves to (the new entries') are
left empty, as appended ones are, for the catch-up to fill.  The files are
written inside ``index_files.preparing`` and named in the caller's
transaction, so a reader keeps the old ones until it commits.
"""

from __future__ import annotations

import sqlite3

import numpy as np
import numpy.typing as npt

from memlog.home import Home
from memlog.projections.sqlite_view import (
    graph,
    index_files,
    lexicon,
    neighbours,
    packed,
    ranks,
    store,
    vectors,
)
from memlog.vocabulary import Space

Ints = npt.NDArray[np.int64]


def move(
    db: sqlite3.Connection,
    folder: Home,
    space: Space,
    new_of_old: Ints,
    count: int,
    ordinal: int,
) -> bool:
    """Move every row and packed record at slot ``s`` to ``new_of_old[s]`` (of ``count``
    slots in all); False (the caller rebuilds) when a file is missing or does not cover
    the rows' slots."""
    old = store.all_slots(db)
    if sorted(old.values()) != list(range(len(new_of_old))):
        return False
    if len(np.unique(new_of_old)) != len(new_of_old) or not (0 <= new_of_old).all():
        return False
    if not (new_of_old < count).all() or not _files(db, folder, space, new_of_old, count, ordinal):
        return False
    moved = [(int(new_of_old[s]), i) for i, s in old.items() if new_of_old[s] != s]
    db.executemany("UPDATE entries SET slot = ? WHERE id = ?", moved)
    return True


def _files(db: sqlite3.Connection, folder: Home, space: Space, new_of_old: Ints, count: int,
           ordinal: int) -> bool:  # fmt: skip
    kinds = (
        (ranks.KIND, ranks.MAGIC, ranks.read(db, folder)),
        (vectors.KIND, vectors.MAGIC, vectors.read(db, folder, space)),
    )
    for kind, magic, found in kinds:
        if found is None or found.total != len(new_of_old):
            return False
        head = packed.header(magic, found.record, found.extra)
        _write(db, folder, kind, head, _moved(found, new_of_old, count), count, ordinal)
    return _graph(db, folder, new_of_old, count, ordinal) and lexicon.reslot(
        db, folder, ordinal, new_of_old, count
    )


def _moved(found: index_files.Slots, new_of_old: Ints, count: int) -> bytes:
    """The records of ``found`` at their new slots (zeros where none moves to)."""
    old = np.frombuffer(found.data, dtype=np.uint8).reshape(found.total, found.record)
    records = np.zeros((count, found.record), dtype=np.uint8)
    records[new_of_old] = old
    return records.tobytes()


def _graph(db: sqlite3.Connection, folder: Home, new_of_old: Ints, count: int,
           ordinal: int) -> bool:  # fmt: skip
    """The neighbour records at their new slots, naming the slots the others moved to."""
    found = neighbours.read(db, folder)
    if found is None or len(found.lists) != len(new_of_old):
        return False
    moved = graph.reslot(found, new_of_old, count)
    table = np.zeros(count, dtype=neighbours.RECORD)
    table["lists"], table["probes"] = moved.lists, moved.probes
    head = packed.header(neighbours.MAGIC, neighbours.RECORD.itemsize, neighbours.EXTRA)
    _write(db, folder, neighbours.KIND, head, table.tobytes(), count, ordinal)
    return True


def _write(db: sqlite3.Connection, folder: Home, kind: str, head: bytes, data: bytes,
           count: int, ordinal: int) -> None:  # fmt: skip
    """Write ``kind``'s new file (``head``, then ``count`` records) and point the view at it."""
    name = packed.generation_name(ordinal, f".{kind}")
    written = packed.write(folder.index, name, head + data)
    index_files.point(db, kind, written, count)
