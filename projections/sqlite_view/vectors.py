"""The vectors of the space in force, one record per slot: ``index/<generation>.vec``.

Each vector is stored once.  Those of the provider+model space in force live
here and nowhere else in the view: a slot file (``packed``) of ``q8``
records (``eventlog.vectors``: a float32 scale, then one signed byte per
dimension; all zeros for an entry without one), which readers map and
multiply by a query in blocks.  Vectors of other spaces stay in the
``vectors`` table, and a change of space rebuilds the view.

A catch-up writes the records of the entries whose vector came or changed
and appends a record for each new entry; a rebuild writes them all, the same
bytes.  ``_metadata.vector_count`` says how many entries have one, counted from the
ranking records (``recount``) whenever they change.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping

from memlog.eventlog.vectors import q8_size
from memlog.home import Home
from memlog.projections.fold import Entry, Vector, space_key
from memlog.projections.sqlite_view import index_files, packed, store
from memlog.vocabulary import Space

KIND = "vec"
MAGIC = b"MLVEC002"


def in_space(vectors: Mapping[str, Vector], space: Space) -> bytes | None:
    """The ``q8`` bytes of the vector of ``space`` among an entry's ``vectors``, if any."""
    vector = vectors.get(space.key)
    return vector.data if vector is not None and vector.dimensions == space.dimensions else None


def record(entry: Entry, space: Space) -> bytes:
    """An entry's record: its vector in ``space``, or zeros."""
    return in_space(entry.vectors, space) or bytes(q8_size(space.dimensions))


def build(db: sqlite3.Connection, folder: Home, ordinal: int, space: Space,
          ordered: list[Entry]) -> None:  # fmt: skip
    """Write the record of every entry (``ordered``: in slot order) into a new file."""
    name = packed.generation_name(ordinal, f".{KIND}")
    size = q8_size(space.dimensions)
    data = packed.header(MAGIC, size, space.dimensions) + b"".join(
        record(e, space) for e in ordered
    )
    index_files.point(db, KIND, packed.write(folder.index, name, data),
                      len(ordered))  # fmt: skip
    count = sum(1 for e in ordered if in_space(e.vectors, space) is not None)
    store.set_meta(db, {"vector_count": str(count)})


def patch(
    db: sqlite3.Connection,
    folder: Home,
    space: Space,
    changed: Iterable[tuple[int, Entry]],
    slots: int,
) -> bool:
    """Write the records of ``changed`` (slot, entry) so the file covers ``slots``
    entries; False without a file to patch."""
    found = index_files.pointer(db, KIND)
    if found is None:
        return False
    rows = [(slot, record(entry, space)) for slot, entry in changed]
    size = q8_size(space.dimensions)
    if not packed.patch(folder.index, found[0], size, found[1], rows):
        return False
    index_files.point(db, KIND, found[0], slots)
    return True


def recount(db: sqlite3.Connection, folder: Home) -> None:
    """Set ``vector_count`` to what the ranking records this transaction wrote say (how
    many have a vector): computed from what the view holds, never added to a count one
    process believed the view held."""
    from memlog.projections.sqlite_view import ranks  # (it reads the flag this counts)

    store.set_meta(db, {"vector_count": str(ranks.vectored(db, folder))})


def vector_count(db: sqlite3.Connection) -> int:
    """How many entries have a vector in the space in force (the view's snapshot)."""
    return int(store.get_meta(db, "vector_count", "0") or 0)


def read(db: sqlite3.Connection, folder: Home, space: Space) -> index_files.Slots | None:
    """The records this snapshot covers, when they are of ``space``'s dimensions and the
    view is in ``space``; None otherwise."""
    if store.space_of(db) != space:
        return None
    found = index_files.slots(db, folder, KIND, MAGIC)
    if found is None or found.extra != space.dimensions:
        return None
    return found if found.record == q8_size(space.dimensions) else None


def attach(db: sqlite3.Connection, folder: Home, entries: Mapping[str, Entry]) -> None:
    """Give ``entries`` (read from the rows) their vector of the space in force."""
    from memlog.projections.sqlite_view import ranks  # (it reads the flag this sets)

    space = store.space_of(db)
    found = read(db, folder, space) if space is not None and entries else None
    flags = ranks.read(db, folder) if found is not None else None
    if space is None or found is None or flags is None:
        return
    key = space_key(space.provider, space.model)
    for entry_id, slot in store.slots_of(db, entries.keys()).items():
        if not 0 <= slot < min(found.total, flags.total) or not ranks.has_vector(flags, slot):
            continue
        data = bytes(found.data[slot * found.record : (slot + 1) * found.record])
        entries[entry_id].vectors[key] = Vector(space.dimensions, data)
