"""The ranking indexes' packed files (``index/<sha256>.lex``, ``.nbr``): format and pointers.

The files follow the rules of ``packed`` (written before they are named,
named by content, swept once the committed view no longer points at them);
``packed_sets`` holds each kind's pointer (file and count) in the rows'
transaction.  A file starts with a header (magic, three counts), then the
16-byte entry ids, then the kind's arrays.  A missing or damaged file costs
only the signal it carries: readers rank without it.
"""

from __future__ import annotations

import contextlib
import mmap
import sqlite3
import struct
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlog.projections.sqlite_view import packed, packsums, store

if TYPE_CHECKING:
    import numpy as np

INDEX_DIR = "index"
ID_WIDTH = 16
SUFFIXES = (".lex", ".nbr", ".rnk")
#: header of every packed file: magic (8 bytes), then three unsigned 64-bit counts
HEADER = struct.Struct("<8sQQQ")


def write(folder: Path, kind: str, data: bytes) -> str:
    """Store ``data`` under its content name in ``folder/index`` (once); return the name.

    Call inside ``preparing(folder)``, before the transaction that points at it commits.
    """
    return packed.write(folder / INDEX_DIR, data, f".{kind}")


def preparing(folder: Path) -> contextlib.AbstractContextManager[None]:
    """Hold off sweeps of ``folder/index`` while files are written and the view names them."""
    return packed.preparing(folder / INDEX_DIR)


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


def sweep(folder: Path, db_path: Path, wait: bool = False) -> list[str]:
    """Remove index files the committed view no longer points at; the names removed."""

    def named() -> set[str]:
        with store.opened(db_path, readonly=True) as db:
            return {str(row[0]) for row in db.execute("SELECT file FROM packed_sets")}

    if not db_path.exists():
        return []
    return packed.sweep(folder / INDEX_DIR, SUFFIXES, named, wait)


def pack(magic: bytes, counts: tuple[int, int, int], ids: list[str], *arrays: np.ndarray) -> bytes:
    """Header, the 16-byte ids, then each array's little-endian bytes in order."""
    import numpy as np

    parts = [HEADER.pack(magic, *counts), "".join(ids).encode("ascii")]
    parts += [np.ascontiguousarray(a).tobytes() for a in arrays]
    return b"".join(parts)


def open_mapped(
    folder: Path, name: str, magic: bytes
) -> tuple[Counts, memoryview, memoryview] | None:
    """Map a packed file: its counts, its ids' bytes (16 per id, nothing decoded) and the
    bytes after them; None if unusable."""
    path = folder / INDEX_DIR / name
    if packsums.quick(path) is not None:
        return None  # damaged: ranked without it (``packsums.noticed`` says so)
    try:
        with open(path, "rb") as handle:
            raw = memoryview(mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ))
    except (OSError, ValueError):  # gone (swept), or empty
        return None
    if len(raw) < HEADER.size:
        return None
    found, *counts = HEADER.unpack(raw[: HEADER.size])
    end = HEADER.size + counts[0] * ID_WIDTH
    if found != magic or end > len(raw):
        return None
    return (counts[0], counts[1], counts[2]), raw[HEADER.size : end], raw[end:]


Counts = tuple[int, int, int]
#: the packed files' little-endian types and their sizes
SIZES = {"<u8": 8, "<i8": 8, "<f8": 8, "<u4": 4, "<i4": 4, "<f4": 4, "<u1": 1}
Sections = tuple[Counts, memoryview, list[tuple[str, memoryview]]]


def sections(
    db: sqlite3.Connection,
    folder: Path,
    kind: str,
    magic: bytes,
    parts: Callable[[Counts], list[tuple[str, int]]],
) -> Sections | None:
    """The file this snapshot points at for ``kind``, mapped: its counts, its ids' bytes and
    the bytes of each array ``parts(counts)`` describes (dtype, items), with its dtype;
    None when there is none or it is unusable (shorter than its header says)."""
    found = pointer(db, kind)
    opened = open_mapped(folder, found[0], magic) if found else None
    if opened is None:
        return None
    counts, ids, raw = opened
    arrays, at = [], 0
    for dtype, items in parts(counts):
        end = at + SIZES[dtype] * items
        if end > len(raw):
            return None
        arrays.append((dtype, raw[at:end]))
        at = end
    return counts, ids, arrays


def load(
    db: sqlite3.Connection,
    folder: Path,
    kind: str,
    magic: bytes,
    parts: Callable[[Counts], list[tuple[str, int]]],
) -> tuple[Counts, np.ndarray, list[np.ndarray]] | None:
    """``sections`` as numpy arrays over the mapping (the ids as ``S16``, nothing copied)."""
    import numpy as np

    found = sections(db, folder, kind, magic, parts)
    if found is None:
        return None
    counts, ids, arrays = found
    return (
        counts,
        np.frombuffer(ids, dtype=f"S{ID_WIDTH}"),
        [np.frombuffer(data, dtype=dtype) for dtype, data in arrays],
    )


def load_plain(
    db: sqlite3.Connection,
    folder: Path,
    kind: str,
    magic: bytes,
    parts: Callable[[Counts], list[tuple[str, int]]],
) -> tuple[Counts, memoryview, list[memoryview[Any]]] | None:
    """``sections`` without numpy: each array as a typed memoryview over the mapping;
    None also on a big-endian machine (the files are little-endian)."""
    found = sections(db, folder, kind, magic, parts) if sys.byteorder == "little" else None
    if found is None:
        return None
    counts, ids, arrays = found
    return counts, ids, [_typed(data, dtype) for dtype, data in arrays]


def _typed(raw: memoryview, dtype: str) -> memoryview[Any]:
    """``raw`` read as items of ``dtype`` (native order: the caller checked it is little)."""
    if dtype in ("<f4", "<f8"):
        return raw.cast("f" if dtype == "<f4" else "d")
    if dtype in ("<u8", "<i8"):
        return raw.cast("Q" if dtype == "<u8" else "q")
    if dtype == "<u1":
        return raw.cast("B")
    return raw.cast("I" if dtype == "<u4" else "i")
