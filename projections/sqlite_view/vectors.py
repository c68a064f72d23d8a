"""The packed vector matrix of one provider+model space, memory-mapped by readers.

Reading 10k vectors row by row out of SQLite costs ~14 ms; a packed file
mapped into memory costs well under one.  The file ``vectors/<sha256>.vec``
is a sequence of rows, each a 16-byte ASCII entry id followed by ``d``
little-endian float32 values; ``vector_sets`` names the file of the space in
force and how many rows of it are committed.  It follows the rules of
``packed`` (named by content, written before it is named, committed rows never
changed, swept once unnamed):

* a full write (a rebuild, a new space, a vector replaced) packs every vector
  of the space in id order into a new content-named file, so a rebuild of the
  same log always makes the same file;
* a catch-up that only adds vectors appends their rows to the file in force
  (one row for one new vector, not the whole matrix); the matrix is then no
  longer in id order, which readers never assume.

A file of another format (the ``.f32`` files of earlier versions) is never
mapped: readers use the rows, and the next catch-up writes a ``.vec`` file.
Mapping is the reading side's business (``reading.load_matrix``); this module
writes, appends and sweeps.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path

from memlog.projections.fold import Entry, Vector
from memlog.projections.sqlite_view import packed, store
from memlog.vocabulary import Space

VECTOR_DIR = "vectors"
SUFFIX = ".vec"
#: packed files of earlier versions (ids, then the matrix): swept, never mapped
LEGACY_SUFFIX = ".f32"
ID_WIDTH = 16


def row_size(dimensions: int) -> int:
    """Bytes per row: the id, then the float32 values."""
    return ID_WIDTH + 4 * dimensions


def pack_rows(rows: Iterable[tuple[str, bytes]]) -> bytes:
    """The bytes of ``(entry_id, vector)`` rows as a packed file holds them."""
    return b"".join(entry_id.encode("ascii") + vector for entry_id, vector in rows)


def space_rows(db: sqlite3.Connection, space: Space) -> list[tuple[str, bytes]]:
    """Every ``(entry_id, vector)`` of ``space``, in id order."""
    return db.execute(
        "SELECT entry_id, vector FROM vectors WHERE provider = ? AND model = ? "
        "AND dimensions = ? ORDER BY entry_id",
        space,
    ).fetchall()


def packed_file(db: sqlite3.Connection, space: Space) -> tuple[int, str] | None:
    """The committed row count and file name of the packed matrix of ``space``, if any."""
    row = db.execute(
        "SELECT count, file FROM vector_sets WHERE provider = ? AND model = ? AND dimensions = ?",
        space,
    ).fetchone()
    return (int(row[0]), str(row[1])) if row is not None else None


def referenced(db: sqlite3.Connection) -> set[str]:
    """The packed files the view names."""
    return {str(r[0]) for r in db.execute("SELECT file FROM vector_sets")}


def write_packed(db: sqlite3.Connection, folder: Path, space: Space) -> None:
    """Pack the space's vectors into a content-named file and point ``vector_sets`` at it.

    Runs inside the caller's write transaction, after the rows are written,
    and inside ``packed.preparing(folder)``.
    """
    rows = space_rows(db, space)
    name = packed.write(folder, pack_rows(rows), SUFFIX)
    _point(db, space, len(rows), name)


def append_packed(
    db: sqlite3.Connection, folder: Path, space: Space, added: list[tuple[str, bytes]]
) -> bool:
    """Append the rows of vectors new to the space; False when a full write is needed."""
    current = packed_file(db, space)
    if current is None or not current[1].endswith(SUFFIX):
        return False
    count, name = current
    size = count * row_size(space.dimensions)
    if not packed.append(folder, name, size, pack_rows(sorted(added))):
        return False
    _point(db, space, count + len(added), name)
    return True


def sync_packed(
    db: sqlite3.Connection,
    folder: Path,
    space: Space,
    added: list[tuple[str, bytes]],
    replaced: bool,
) -> None:
    """Bring the packed file in step with the rows: append ``added``, or write anew."""
    if replaced or not added or not append_packed(db, folder, space, added):
        write_packed(db, folder, space)


def in_space(vectors: Mapping[str, Vector], space: Space) -> bytes | None:
    """The bytes of the vector of ``space`` among an entry's ``vectors``, if it has one."""
    vector = vectors.get(space.key)
    return vector.data if vector is not None and vector.dimensions == space.dimensions else None


def follow_entries(
    db: sqlite3.Connection,
    folder: Path,
    space: Space,
    touched: Iterable[Entry],
    had: Mapping[str, bytes | None],
) -> None:
    """After ``touched`` were written: append the vectors new to the space, or write the
    file anew when one changed or went (``had``: each entry's vector before)."""
    added, replaced = [], False
    for entry in touched:
        old, new = had.get(entry.id), in_space(entry.vectors, space)
        if old == new:
            continue
        if old is None and new is not None:
            added.append((entry.id, new))
        else:
            replaced = True
    if added or replaced:
        sync_packed(db, folder, space, added, replaced)


def sweep(folder: Path, db_path: Path, wait: bool = False) -> list[str]:
    """Remove packed vector files the committed view no longer names."""

    def named() -> set[str]:
        with store.opened(db_path, readonly=True) as db:
            return referenced(db)

    if not db_path.exists():
        return []
    return packed.sweep(folder, (SUFFIX, LEGACY_SUFFIX), named, wait)


def _point(db: sqlite3.Connection, space: Space, count: int, name: str) -> None:
    db.execute("DELETE FROM vector_sets")  # only the space in force is packed
    db.execute(
        "INSERT INTO vector_sets(provider, model, dimensions, count, file) VALUES (?, ?, ?, ?, ?)",
        (space.provider, space.model, space.dimensions, count, name),
    )
