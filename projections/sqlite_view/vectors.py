"""The packed vector matrix of one provider+model space, memory-mapped by readers.

Reading 10k vectors row by row out of SQLite costs ~14 ms; a packed file
mapped into memory costs well under one.  The file (``vectors/<sha256>.f32``:
``n`` 16-byte ASCII ids, then an ``n × d`` float32 matrix) is written and
fsynced *before* the transaction that points ``vector_sets`` at it commits,
and never changed afterwards, so a reader that follows the pointer it read
in its own snapshot always maps a complete file consistent with its rows.
A missing file falls back to the rows.  Mapping it is the reading side's
business (``reading.load_matrix``); this module only writes and sweeps.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time
from pathlib import Path

from memlog.files import atomic_write
from memlog.vocabulary import Space

VECTOR_DIR = "vectors"
ID_WIDTH = 16
_GRACE_SECONDS = 60.0


def space_rows(db: sqlite3.Connection, space: Space) -> list[tuple[str, bytes]]:
    """Every ``(entry_id, vector)`` of ``space``, in id order."""
    return db.execute(
        "SELECT entry_id, vector FROM vectors WHERE provider = ? AND model = ? "
        "AND dimensions = ? ORDER BY entry_id",
        space,
    ).fetchall()


def packed_file(db: sqlite3.Connection, space: Space) -> tuple[int, str] | None:
    """The count and file name of the packed matrix of ``space``, if there is one."""
    row = db.execute(
        "SELECT count, file FROM vector_sets WHERE provider = ? AND model = ? AND dimensions = ?",
        space,
    ).fetchone()
    return (int(row[0]), str(row[1])) if row is not None else None


def write_packed(db: sqlite3.Connection, folder: Path, space: Space) -> None:
    """Pack the space's vectors into a new file and point ``vector_sets`` at it.

    Runs inside the caller's write transaction, after the rows are written.
    """
    rows = space_rows(db, space)
    folder.mkdir(mode=0o700, exist_ok=True)
    data = b"".join(r[0].encode("ascii") for r in rows) + b"".join(r[1] for r in rows)
    name = f"{hashlib.sha256(data).hexdigest()[:32]}.f32"  # named by content: same views, same name
    atomic_write(folder / name, data)
    db.execute("DELETE FROM vector_sets")  # only the space in force is packed
    db.execute(
        "INSERT INTO vector_sets(provider, model, dimensions, count, file) VALUES (?, ?, ?, ?, ?)",
        (space.provider, space.model, space.dimensions, len(rows), name),
    )


def collect_garbage(db: sqlite3.Connection, folder: Path) -> None:
    """Remove packed files no longer referenced, once no reader can still be opening them."""
    keep = {r[0] for r in db.execute("SELECT file FROM vector_sets")}
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return
    cutoff = time.time() - _GRACE_SECONDS
    for name in names:
        path = folder / name
        if name in keep:
            continue
        try:
            if path.stat().st_mtime < cutoff:
                path.unlink()
        except OSError:
            continue
