"""Reading ``memory.db`` for ranking with numpy: candidates, FTS5 bm25 and vector cosine.

``Snapshot`` is a ``plain.View``: the view read-only in one transaction, so
every read of one ranking sees the same state.  User text never reaches ``MATCH`` as
syntax: it is cut into word tokens, each quoted as a string, and the tokens
are OR-joined, so hyphens, dots, slashes, colons, quotes, ``NEAR``,
``AND``/``OR``/``NOT``, ``*``, ``^`` and column-like words can neither fail
the query nor filter it.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from memlog.projections.sqlite_view import lexicon, neighbours, packsums, ranks
from memlog.projections.sqlite_view.plain import DAYS, View, decoded_ids
from memlog.projections.sqlite_view.vectors import (
    ID_WIDTH,
    SUFFIX,
    VECTOR_DIR,
    packed_file,
    row_size,
    space_rows,
)
from memlog.projections.terms import query_units
from memlog.vocabulary import CATEGORIES, Space

__all__ = ["DAYS", "Candidates", "Snapshot", "View", "fts_query"]

MAX_TOKENS = 64
_WORD = re.compile(r"\w+", re.UNICODE)

Floats = npt.NDArray[np.float64]

#: function words that match nearly every entry and add nothing to bm25 but time
STOPWORDS = frozenset(
    "a an and are as at be but by can do for from had has have if in into is it its no not "
    "of on or our so than that the their them then there these they this to was we were "
    "what when which who will with you your".split()
)


def fts_query(text: str | None) -> str | None:
    """A safe FTS5 expression for ``text``: quoted word tokens joined by OR (None if none)."""
    if not text:
        return None
    # Only ASCII is lowercased (to merge duplicates): Python folds letters that
    # FTS5's Unicode 6.1 tables do not (Cherokee), and the query would miss them.
    tokens = [
        t.lower() if t.isascii() else t for t in _WORD.findall(text) if len(t) > 1 or t.isdigit()
    ]
    unique = [t for t in dict.fromkeys(tokens) if t not in STOPWORDS][:MAX_TOKENS]
    return " OR ".join(f'"{t}"' for t in unique) if unique else None


class Candidates(NamedTuple):
    """Live entries eligible for injection, as parallel columns (``days``: see
    ``plain.DAYS``)."""

    ids: list[str]
    categories: list[str]
    observation_count: Floats
    confidence: list[str]
    days: Floats
    recall_count: Floats

    def positions(self) -> dict[str, int]:
        return {entry_id: i for i, entry_id in enumerate(self.ids)}


class Matrix(NamedTuple):
    ids: list[str]
    vectors: npt.NDArray[np.float32]


class Snapshot(View):
    """The view at one moment, read-only, with numpy: ``with Snapshot(folder) as view: …``."""

    def candidates(self, categories: Sequence[str], now: datetime) -> Candidates:
        packed = self._packed_candidates(categories, now)
        if packed is not None:
            return packed
        found = self.columns(categories, now)
        return Candidates(
            ids=found.ids,
            categories=found.categories,
            observation_count=np.asarray(found.observation_count, dtype=np.float64),
            confidence=found.confidence,
            days=np.asarray(found.days, dtype=np.float64),
            recall_count=np.asarray(found.recall_count, dtype=np.float64),
        )

    def _packed_candidates(self, categories: Sequence[str], now: datetime) -> Candidates | None:
        """``candidates`` from the packed file as arrays over its mapping (as ``columns``
        reads it, without a list per column); None as ``columns`` falls back."""
        found = self.packed(categories)
        if found is None:
            return None
        keep = np.asarray(found.keep, dtype=np.intp)
        ids = decoded_ids(found.names, found.entries)

        def column(view: memoryview) -> npt.NDArray[Any]:
            return np.frombuffer(view, dtype=view.format)[keep]

        return Candidates(
            ids=[ids[i] for i in found.keep],
            categories=[CATEGORIES[found.codes[i]] for i in found.keep],
            observation_count=column(found.counts).astype(np.float64),
            confidence=[ranks.LEVELS[c] for c in column(found.levels).tolist()],
            days=np.maximum(self.julian(now) - column(found.since), 0.0),
            recall_count=column(found.recalls).astype(np.float64),
        )

    def rowid_positions(self, ids: Sequence[str]) -> dict[int, int]:
        """The ``entries`` rowids (the FTS5 rowids) of ``ids``, each to its position."""
        where = {entry_id: i for i, entry_id in enumerate(ids)}
        rows = self.db.execute("SELECT rowid, id FROM entries WHERE status = 'live'")
        return {rowid: where[i] for rowid, i in rows if i in where}

    def bm25(self, query: str | None, by_rowid: dict[int, int]) -> Floats:
        """Negated bm25 per candidate (higher is better; 0 where the query does not match).

        ``by_rowid`` maps the candidates' ``entries`` rowids (the FTS rowids) to their
        positions; no join back to ``entries``, which at 10k matches costs a third more.
        """
        scores = np.zeros(len(by_rowid), dtype=np.float64)
        expression = fts_query(query)
        if expression is None or not by_rowid:
            return scores
        rows = self.db.execute(
            "SELECT rowid, -bm25(entries_fts) FROM entries_fts WHERE entries_fts MATCH ?",
            (expression,),
        )
        for rowid, score in rows:
            index = by_rowid.get(rowid)
            if index is not None:
                scores[index] = max(float(score), 0.0)
        return scores

    def matrix(self, space: Space) -> Matrix:
        """Every vector of ``space`` (ids in id order): the packed file, else the rows."""
        return load_matrix(self.db, self.folder, space)

    def cosines(
        self, space: Space, query: npt.NDArray[np.float32], where: dict[str, int]
    ) -> tuple[Floats, int]:
        """Cosine of the query with each candidate's vector in ``space`` (0 without one)."""
        return vector_scores(self.db, self.folder, space, query, where)

    def lexical(self, query: str, ids: Sequence[str]) -> Floats | None:
        """BM25 of the packed lexical index for each of ``ids``; None without an index."""
        index = lexicon.load(self.db, self.folder)
        if index is None:
            return None
        where = align(index.ids, np.asarray(ids, dtype="S16"))
        scores = index.score(query_units(query))
        return np.where(where >= 0, scores[np.maximum(where, 0)], 0.0)

    def neighbours(self, ids: Sequence[str]) -> npt.NDArray[np.int64] | None:
        """Each of ``ids``' neighbours as positions in ``ids`` (−1: none, or not among them)."""
        graph = neighbours.load(self.db, self.folder)
        if graph is None:
            return None
        keys = np.asarray(ids, dtype="S16")
        rows = align(graph.ids, keys)
        to_ids = np.append(align(keys, graph.ids), -1)
        found = np.full((len(ids), graph.index.shape[1]), -1, dtype=np.int64)
        have = rows >= 0
        found[have] = to_ids[graph.index[rows[have]]]
        return found


def align(
    source: Sequence[str] | npt.NDArray[np.bytes_], target: Sequence[str] | npt.NDArray[np.bytes_]
) -> npt.NDArray[np.int64]:
    """For each id of ``target``, its position in ``source`` (both ascending), or −1."""
    if not len(source) or not len(target):
        return np.full(len(target), -1, dtype=np.int64)
    left = np.asarray(source, dtype="S16")
    right = np.asarray(target, dtype="S16")
    at = np.minimum(np.searchsorted(left, right), len(left) - 1)
    return np.where(left[at] == right, at, -1).astype(np.int64)


def vector_scores(
    db: sqlite3.Connection,
    folder: Path,
    space: Space,
    query: npt.NDArray[np.float32],
    where: dict[str, int],
) -> tuple[Floats, int]:
    """Cosine of the query with each vector of ``space`` whose id is in ``where``, by position;
    and how many candidates had one."""
    scores = np.zeros(len(where), dtype=np.float64)
    matrix = load_matrix(db, folder, space)
    if not matrix.ids:
        return scores, 0
    cosines = matrix.vectors @ query.astype(np.float32)
    rows = [(where[i], n) for n, i in enumerate(matrix.ids) if i in where]
    if rows:
        target, source = (np.asarray(x) for x in zip(*rows, strict=True))
        scores[target] = cosines[source]
    return scores, len(rows)


def _map(path: Path, count: int, dims: int) -> Matrix | None:
    """The first ``count`` rows of a packed file, mapped; None when it cannot be."""
    width = row_size(dims)
    if packsums.quick(path) is not None:
        return None  # damaged: the rows instead (``packsums.noticed`` says so)
    try:
        if count == 0:
            return Matrix([], np.zeros((0, dims), dtype=np.float32))
        raw = np.memmap(path, dtype=np.uint8, mode="r", shape=(count * width,))
    except (OSError, ValueError):  # gone (swept), or shorter than its pointer says
        return None
    rows = raw.reshape(count, width)
    ids = rows[:, :ID_WIDTH].tobytes().decode("ascii")
    matrix = rows[:, ID_WIDTH:].view("<f4")  # strided: no copy, BLAS reads it as is
    return Matrix([ids[i : i + ID_WIDTH] for i in range(0, len(ids), ID_WIDTH)], matrix)


def load_matrix(db: sqlite3.Connection, folder: Path, space: Space) -> Matrix:
    """Every vector of ``space`` in ``db``'s snapshot; ``folder`` is the view's home."""
    packed = packed_file(db, space)
    if packed is not None and packed[1].endswith(SUFFIX):
        mapped = _map(folder / VECTOR_DIR / packed[1], packed[0], space.dimensions)
        if mapped is not None:
            return mapped
    rows = space_rows(db, space)
    flat = np.frombuffer(b"".join(r[1] for r in rows), dtype="<f4")
    return Matrix([r[0] for r in rows], flat.reshape(len(rows), space.dimensions))
