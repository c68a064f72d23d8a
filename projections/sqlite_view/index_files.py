"""The packed files of ``index/``: pointers to them, sweeping, and mapping them to read.

``packed_sets`` holds, for each kind, the file the committed view reads and
how many records of it (slots) that view covers, in the rows' transaction.
The kinds:

    rnk  what ranking reads of every entry (``ranks``)
    vec  the vectors of the space in force (``vectors``)
    nbr  the neighbour lists (``neighbours``)
    lex  the lexical index (``lexicon``): its base, and ``lxd`` the changes since

A missing or damaged file (``packsums``: each has its block checksums) costs
only the signal it carries: readers rank without it, and the next rebuild
writes it again.
"""

from __future__ import annotations

import contextlib
import mmap
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from memlog.home import Home
from memlog.projections.sqlite_view import packed, packsums, store

ID_WIDTH = 16
SUFFIXES = (".rnk", ".vec", ".nbr", ".lex", ".lxd")
#: the packed files' little-endian types and their sizes
SIZES = {"<u8": 8, "<i8": 8, "<f8": 8, "<u4": 4, "<i4": 4, "<f4": 4, "<u2": 2, "<u1": 1, "<i1": 1}


def preparing(folder: Home) -> contextlib.AbstractContextManager[None]:
    """Hold off sweeps of ``folder/index`` while files are written and the view names them."""
    return packed.preparing(folder.index)


def named(db: sqlite3.Connection) -> set[str]:
    """The files this snapshot's view names."""
    return {str(row[0]) for row in db.execute("SELECT file FROM packed_sets")}


@contextlib.contextmanager
def undoable(db: sqlite3.Connection, folder: Home) -> Iterator[None]:
    """Inside the view's write transaction on ``db``: the records it patches are put back
    unless it commits, and records a writer killed before its commit patched are put back
    first (``packed.undoable``).  Call ``packed.committed`` once it has."""
    token = db.execute(
        "SELECT group_concat(key || '=' || value, ';') FROM "
        "(SELECT key, value FROM _metadata WHERE key LIKE 'log_%' ORDER BY key)"
    ).fetchone()[0]
    with packed.undoable(folder.index, str(token or ""), named(db)):
        yield


def committed(folder: Home) -> None:
    """The write transaction committed: its patches stand."""
    packed.committed(folder.index)


def pointer(db: sqlite3.Connection, kind: str) -> tuple[str, int] | None:
    """The file and count ``packed_sets`` points at for ``kind`` in this snapshot."""
    row = db.execute("SELECT file, count FROM packed_sets WHERE kind = ?", (kind,)).fetchone()
    return (str(row[0]), int(row[1])) if row is not None else None


def point(db: sqlite3.Connection, kind: str, name: str | None, count: int) -> None:
    """Point ``kind`` at ``name`` (none: drop it), inside the caller's write transaction."""
    if name is None:
        db.execute("DELETE FROM packed_sets WHERE kind = ?", (kind,))
    else:
        db.execute(
            "INSERT INTO packed_sets(kind, file, count) VALUES (?, ?, ?) ON CONFLICT(kind) "
            "DO UPDATE SET file = excluded.file, count = excluded.count",
            (kind, name, count),
        )


def sweep(folder: Home, db_path: Path, wait: bool = False, spare: bool = True) -> list[str]:
    """Remove index files the committed view no longer points at (but the newest delta
    of the lexical index unless not ``spare``: ``packed.sweep``); the names removed."""

    def referenced() -> set[str]:
        with store.opened(db_path, readonly=True) as db:
            return named(db)

    if not db_path.exists():
        return []
    spared = (".lxd",) if spare else ()
    return packed.sweep(folder.index, SUFFIXES, referenced, wait, spared)


def mapped(folder: Home, name: str) -> memoryview | None:
    """The file ``index/name`` mapped read-only; None when it is gone, empty or damaged
    (``packsums.quick``: ranked without it, and ``packsums.noticed`` says so)."""
    path = folder.index / name
    if packsums.quick(folder, path) is not None:
        return None
    try:
        with open(path, "rb") as handle:
            return memoryview(mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ))
    except (OSError, ValueError):  # gone (swept), or empty
        return None


class Slots(NamedTuple):
    """The committed records of a slot file: how many, their size, the kind's ``extra``,
    and their bytes (``total × record``, nothing decoded)."""

    total: int
    record: int
    extra: int
    data: memoryview


def slots(db: sqlite3.Connection, folder: Home, kind: str, magic: bytes) -> Slots | None:
    """The records this snapshot covers of its ``kind`` file; None when there is none, or
    it is not a file of ``magic`` or shorter than its count says (its structure, what a
    reader checks of a file patched in place: noted as damage, ``packsums.note``)."""
    found = pointer(db, kind)
    raw = mapped(folder, found[0]) if found else None
    if found is None or raw is None:
        return None
    got, record, extra = b"", 0, 0
    if len(raw) >= packed.HEADER.size:
        got, record, _, extra, _ = packed.HEADER.unpack(raw[: packed.HEADER.size])
    end = packed.HEADER.size + found[1] * max(record, 0)
    if got != magic or record <= 0 or end > len(raw):
        why = "shorter than its count" if got == magic and record > 0 else "not its kind's header"
        packsums.note(folder, folder.index / found[0], why)
        return None
    return Slots(found[1], record, extra, raw[packed.HEADER.size : end])


def arrays(
    raw: memoryview, start: int, parts: list[tuple[str, int]]
) -> list[tuple[str, memoryview]] | None:
    """The arrays ``parts`` (dtype, items) laid one after another from ``start``; None when
    the file is shorter than they say."""
    found, at = [], start
    for dtype, items in parts:
        end = at + SIZES[dtype] * items
        if end > len(raw):
            return None
        found.append((dtype, raw[at:end]))
        at = end
    return found


_CODES = {"<f4": "f", "<f8": "d", "<u8": "Q", "<i8": "q", "<u4": "I", "<i4": "i", "<u2": "H",
          "<u1": "B", "<i1": "b"}  # fmt: skip


def typed(raw: memoryview, dtype: str) -> memoryview[Any]:
    """``raw`` read as items of ``dtype`` without numpy (native order: callers check
    ``little_endian``)."""
    view: memoryview[Any] = raw.cast(_CODES[dtype])  # type: ignore[call-overload]
    return view


def little_endian() -> bool:
    """Whether the machine reads the files' little-endian numbers natively."""
    return sys.byteorder == "little"
