"""Each entry's nearest neighbours by cosine, kept up to date as vectors come and go.

The graph holds the live entries with a vector in the space in force; each
keeps its ``K`` most similar others, best first, ties broken by id.  It is
packed in ``index/<sha256>.nbr`` (see ``packed``):

    header  b"MLNBR001", entries n, K, quantisation scale s
    ids     n × 16 ASCII bytes, in id order
    index   n × K int32: positions of the neighbours in ``ids`` (−1: none)
    dots    n × K int32: their similarity, the exact dot product of the
            quantised vectors (≈ cosine · s²)

Similarities are computed on the vectors rounded to integers
(``round(v · s)``, ``s`` chosen so a dot product stays below 2²⁴): every
product and partial sum is then an exact integer in float32, whatever
order BLAS adds them in, so an incremental update and a rebuild from the
log produce the same lists, byte for byte.

Updating after events: an entry whose vector is new or changed, or that
lost a neighbour, gets its list computed afresh against every entry; every
other entry merges its old list with the new and changed vectors.  The
result equals computing the whole graph again, at the cost of the changes.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from memlog.projections.sqlite_view import index_files
from memlog.projections.sqlite_view.plain import GRAPH, graph_parts
from memlog.projections.sqlite_view.vectors import space_rows
from memlog.vocabulary import Space

KIND, MAGIC = GRAPH
K = 10
_EXACT = 2**24 - 1
_BLOCK = 512

Ints = npt.NDArray[np.int64]
Matrix = npt.NDArray[np.float32]


def scale(dimensions: int) -> int:
    """The largest integer scale ≤ 127 whose dot products stay exact in float32."""
    return max(1, min(127, math.isqrt(_EXACT // max(dimensions, 1))))


@dataclass(frozen=True)
class Graph:
    ids: npt.NDArray[np.bytes_]  # S16
    index: npt.NDArray[np.int32]
    dots: npt.NDArray[np.int32]


def quantised(db: sqlite3.Connection, space: Space) -> tuple[list[str], Matrix]:
    """The live entries' vectors of ``space``, in id order, rounded to integers."""
    rows = space_rows(db, space)
    live = {r[0] for r in db.execute("SELECT id FROM entries WHERE status = 'live'")}
    kept = [r for r in rows if r[0] in live]
    flat = np.frombuffer(b"".join(r[1] for r in kept), dtype="<f4")
    matrix = flat.reshape(len(kept), space.dimensions).astype(np.float32)
    return [r[0] for r in kept], np.rint(matrix * scale(space.dimensions)).astype(np.float32)


def top(dots: Matrix, rows: Ints, k: int) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]]:
    """For each row of ``dots`` (the similarities of entry ``rows[i]`` with every entry), the
    ``k`` best other entries: highest dot first, then lowest position."""
    size = dots.shape[1]
    key = -dots.astype(np.int64) * (1 << 32) + np.arange(size, dtype=np.int64)
    key[np.arange(len(rows)), rows] = np.iinfo(np.int64).max  # never one's own neighbour
    width = min(k, size - 1)
    index = np.full((len(rows), k), -1, dtype=np.int32)
    best = np.full((len(rows), k), 0, dtype=np.int32)
    if width <= 0:
        return index, best
    part = np.argpartition(key, width - 1, axis=1)[:, :width]
    order = np.take_along_axis(part, np.argsort(np.take_along_axis(key, part, 1), axis=1), 1)
    index[:, :width] = order
    best[:, :width] = np.take_along_axis(dots, order, 1).astype(np.int32)
    return index, best


def compute(matrix: Matrix, rows: Ints, k: int = K) -> tuple[np.ndarray, np.ndarray]:
    """Neighbour lists of ``rows`` against the whole matrix, in blocks."""
    index = np.full((len(rows), k), -1, dtype=np.int32)
    dots = np.zeros((len(rows), k), dtype=np.int32)
    for start in range(0, len(rows), _BLOCK):
        chunk = rows[start : start + _BLOCK]
        index[start : start + len(chunk)], dots[start : start + len(chunk)] = top(
            matrix[chunk] @ matrix.T, chunk, k
        )
    return index, dots


def build(db: sqlite3.Connection, folder: Path, space: Space, changed: Iterable[str] = ()) -> None:
    """Bring the packed graph in line with the vectors; ``changed``: ids whose vector changed
    (every list is computed afresh when there is no graph of this space yet)."""
    ids, matrix = quantised(db, space)
    row = db.execute("SELECT value FROM _metadata WHERE key = 'neighbour_space'").fetchone()
    old = load(db, folder) if row is not None and row[0] == space_tag(space) else None
    if old is None:
        index, dots = compute(matrix, np.arange(len(ids), dtype=np.int64))
    else:
        index, dots = update(old, ids, matrix, set(changed))
    data = index_files.pack(MAGIC, (len(ids), K, scale(space.dimensions)), ids, index, dots)
    index_files.point(db, KIND, index_files.write(folder, KIND, data), len(ids))
    db.execute(
        "INSERT OR REPLACE INTO _metadata(key, value) VALUES ('neighbour_space', ?)",
        (space_tag(space),),
    )


def space_tag(space: Space) -> str:
    return f"{space.key}/{space.dimensions}"


def update(
    old: Graph, ids: list[str], matrix: Matrix, changed: set[str]
) -> tuple[np.ndarray, np.ndarray]:
    """The new lists from the old ones: see the module's docstring."""
    old_ids = [i.decode("ascii") for i in old.ids.tolist()]
    before = {entry_id: n for n, entry_id in enumerate(old_ids)}
    fresh = np.array([i not in before or i in changed for i in ids], dtype=bool)
    position = {entry_id: n for n, entry_id in enumerate(ids)}
    gone = np.array([i not in position or i in changed for i in old_ids] + [False], dtype=bool)
    remap = np.array([position.get(i, -1) for i in old_ids] + [-1], dtype=np.int64)
    lost = np.asarray(gone[old.index].any(axis=1), dtype=bool)  # −1 reads the appended False
    redo = fresh.copy()
    for n, entry_id in enumerate(old_ids):
        if entry_id in position and lost[n]:
            redo[position[entry_id]] = True
    index, dots = np.full((len(ids), K), -1, np.int32), np.zeros((len(ids), K), np.int32)
    rows = np.flatnonzero(redo)
    index[rows], dots[rows] = compute(matrix, rows)
    _merge(old, ids, matrix, before, remap, ~redo, np.flatnonzero(fresh), index, dots)
    return index, dots


def _merge(
    old: Graph, ids: list[str], matrix: Matrix, before: dict[str, int], remap: Ints,
    keep: npt.NDArray[np.bool_], fresh: Ints, index: np.ndarray, dots: np.ndarray,
) -> None:  # fmt: skip
    """Old lists of the ``keep`` entries merged with their similarity to the ``fresh`` ones."""
    rows = np.flatnonzero(keep)
    if not len(rows):
        return
    previous = np.array([before[ids[r]] for r in rows], dtype=np.int64)
    old_index = remap[old.index[previous]]
    old_dots = np.where(old_index >= 0, old.dots[previous], 0).astype(np.float32)
    new_dots = matrix[rows] @ matrix[fresh].T if len(fresh) else np.zeros((len(rows), 0))
    pool_index = np.concatenate([old_index, np.broadcast_to(fresh, new_dots.shape)], axis=1)
    pool_dots = np.concatenate([old_dots, new_dots.astype(np.float32)], axis=1)
    valid = pool_index >= 0
    key = np.where(
        valid, -pool_dots.astype(np.int64) * (1 << 32) + pool_index, np.iinfo(np.int64).max
    )
    order = np.argsort(key, axis=1, kind="stable")[:, :K]
    chosen = np.take_along_axis(pool_index, order, 1)
    chosen_valid = np.take_along_axis(valid, order, 1)
    index[rows] = np.where(chosen_valid, chosen, -1)
    dots[rows] = np.where(chosen_valid, np.take_along_axis(pool_dots, order, 1), 0)


def load(db: sqlite3.Connection, folder: Path) -> Graph | None:
    """The graph this snapshot points at, mapped; None when there is none or it is unusable."""
    found = index_files.load(db, folder, KIND, MAGIC, graph_parts)
    if found is None:
        return None
    (count, k, _), ids, (index, dots) = found
    return Graph(ids, index.reshape(count, k), dots.reshape(count, k))
