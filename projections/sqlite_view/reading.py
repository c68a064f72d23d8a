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
from abc import abstractmethod
from collections.abc import Collection, Sequence
from datetime import datetime
from types import TracebackType
from typing import NamedTuple, overload

import numpy as np
import numpy.typing as npt

from memlog.eventlog.vectors import floats
from memlog.home import Home
from memlog.projections.sqlite_view import lexicon, neighbours, ranks, vectors
from memlog.projections.sqlite_view.plain import DAYS, View
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


class Lazy(Sequence[str]):
    """Strings made one by one when asked (``one``), of packed bytes read whole."""

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> list[str]: ...
    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [self.one(n) for n in range(len(self))[index]]
        return self.one(range(len(self))[index])

    @abstractmethod
    def one(self, at: int) -> str:
        """The string at ``at`` (a place inside)."""


class Coded(Lazy):
    """Names kept as the packed records' codes (a category, a confidence level): a name
    is made only when one is asked, and rankers read ``codes`` whole."""

    def __init__(self, codes: npt.NDArray[np.uint8], names: Sequence[str]) -> None:
        self.codes = codes
        self.names = tuple(names)

    def __len__(self) -> int:
        return len(self.codes)

    def one(self, at: int) -> str:
        return self.names[int(self.codes[at])]

    def among(self, names: Collection[str]) -> npt.NDArray[np.bool_]:
        """Which of them are one of ``names``."""
        codes = [code for code, name in enumerate(self.names) if name in names]
        return np.isin(self.codes, codes)


class Candidates(NamedTuple):
    """Live entries eligible for injection, as parallel columns (``days``: see
    ``plain.DAYS``), in id order; ``slots``: each one's slot (−1: not known)."""

    ids: Sequence[str]
    categories: Sequence[str]
    observation_count: Floats
    confidence: Sequence[str]
    days: Floats
    recall_count: Floats
    slots: npt.NDArray[np.int64] | None = None

    def positions(self) -> dict[str, int]:
        return {entry_id: i for i, entry_id in enumerate(self.ids)}


class Matrix(NamedTuple):
    ids: list[str]
    vectors: npt.NDArray[np.float32]


def id_order(ids: npt.NDArray[np.bytes_]) -> npt.NDArray[np.intp]:
    """The order that sorts 16-byte ids: their bytes as two big-endian numbers compare as
    the ids do; the first sorts them all, the second only the few that share the first."""
    halves = np.frombuffer(ids.tobytes(), dtype=">u8").reshape(len(ids), 2).astype(np.uint64)
    order: npt.NDArray[np.intp] = np.argsort(halves[:, 0], kind="stable")
    first = halves[order, 0]
    tied = np.flatnonzero(first[1:] == first[:-1])
    if len(tied):
        runs = np.unique(np.concatenate([tied, tied + 1]))
        ranked = np.lexsort((halves[order[runs], 1], first[runs]))
        order[runs] = order[runs][ranked]
    return order


class PackedIds(Lazy):
    """Candidates' ids as the packed records hold them, decoded one by one when asked (a
    ranking reads a few of 100k)."""

    def __init__(self, raw: bytes) -> None:
        self._raw = raw

    def __len__(self) -> int:
        return len(self._raw) // 16

    def one(self, at: int) -> str:
        return self._raw[16 * at : 16 * at + 16].decode("ascii")


class Snapshot(View):
    """The view at one moment, read-only, with numpy: ``with Snapshot(folder) as view: …``."""

    def __init__(self, folder: Home) -> None:
        super().__init__(folder)
        self._fts_db: sqlite3.Connection | None = None

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._fts_db is not None:
            self._fts_db.close()
        super().__exit__(kind, exc, tb)

    def records(self) -> npt.NDArray[np.void] | None:
        """The packed ranking records (``ranks``) as a structured array over the mapping."""
        found = ranks.read(self.db, self.folder)
        if found is None:
            return None
        return np.frombuffer(found.data, dtype=np.dtype(ranks.DTYPE), count=found.total)

    def candidates(self, categories: Sequence[str], now: datetime) -> Candidates:
        packed = self._packed_candidates(categories, now)
        if packed is not None:
            return packed
        found = self.columns(categories, now)
        slots = np.asarray(self.slots_of(found.ids), dtype=np.int64)
        return Candidates(
            ids=found.ids,
            categories=found.categories,
            observation_count=np.asarray(found.observation_count, dtype=np.float64),
            confidence=found.confidence,
            days=np.asarray(found.days, dtype=np.float64),
            recall_count=np.asarray(found.recall_count, dtype=np.float64),
            slots=slots,
        )

    def _packed_candidates(self, categories: Sequence[str], now: datetime) -> Candidates | None:
        """``candidates`` from the packed records, as arrays over their mapping; None as
        ``columns`` falls back."""
        wanted = [CATEGORIES.index(c) for c in categories if c in CATEGORIES]
        records = self.records()
        if records is None or len(wanted) != len(set(categories)):
            return None
        live = (records["flags"] & ranks.LIVE) != 0
        slots = np.flatnonzero(live & np.isin(records["code"], wanted))
        named = records["id"][slots]
        order = id_order(named)
        slots, ids = slots[order], PackedIds(named[order].tobytes())
        self._last = (ids, slots.tolist())
        return Candidates(
            ids=ids,
            categories=Coded(records["code"][slots], CATEGORIES),
            observation_count=records["count"][slots].astype(np.float64),
            confidence=Coded(records["level"][slots], ranks.LEVELS),
            days=np.maximum(self.julian(now) - records["since"][slots], 0.0),
            recall_count=records["recalls"][slots].astype(np.float64),
            slots=slots.astype(np.int64),
        )

    def _slots(self, ids: Sequence[str] | Candidates) -> npt.NDArray[np.int64]:
        if isinstance(ids, Candidates) and ids.slots is not None:
            return ids.slots
        wanted = ids.ids if isinstance(ids, Candidates) else ids
        return np.asarray(self.slots_of(wanted), dtype=np.int64)

    def rowid_positions(self, ids: Sequence[str]) -> dict[int, int]:
        """The ``entries`` rowids of ``ids`` (the rowids of ``bm25``'s index), each to its
        position."""
        where = {entry_id: i for i, entry_id in enumerate(ids)}
        rows = self.db.execute("SELECT rowid, id FROM entries WHERE status = 'live'")
        return {rowid: where[i] for rowid, i in rows if i in where}

    def bm25(self, query: str | None, by_rowid: dict[int, int]) -> Floats:
        """Negated FTS5 bm25 per candidate (higher is better; 0 where the query does not
        match), as spec #024's D3 ranks: an FTS5 index of every entry's name,
        description, keywords and reasoning (with its metadata lines), built in memory
        the first time this snapshot is asked (the view keeps one index of its text, the
        packed lexical one).

        ``by_rowid`` maps the candidates' ``entries`` rowids to their positions.
        """
        scores = np.zeros(len(by_rowid), dtype=np.float64)
        expression = fts_query(query)
        if expression is None or not by_rowid:
            return scores
        rows = self._fts().execute(
            "SELECT rowid, -bm25(entries_fts) FROM entries_fts WHERE entries_fts MATCH ?",
            (expression,),
        )
        for rowid, score in rows:
            index = by_rowid.get(rowid)
            if index is not None:
                scores[index] = max(float(score), 0.0)
        return scores

    def _fts(self) -> sqlite3.Connection:
        found = self._fts_db
        if found is None:
            found = sqlite3.connect(":memory:")
            found.execute(
                "CREATE VIRTUAL TABLE entries_fts USING fts5(name, description, keywords, "
                "reasoning, tokenize='porter unicode61 remove_diacritics 2')"
            )
            rows = self.db.execute(
                "SELECT rowid, name, description, keywords, reasoning || ' ' || details "
                "FROM entries"
            )
            found.executemany(
                "INSERT INTO entries_fts(rowid, name, description, keywords, reasoning) "
                "VALUES (?, ?, ?, ?, ?)",
                rows,
            )
            self._fts_db = found
        return found

    def matrix(self, space: Space) -> Matrix:
        """Every vector of ``space`` (ids in slot order), as float32."""
        return load_matrix(self.db, self.folder, space)

    def cosines(
        self, space: Space, query: npt.NDArray[np.float32],
        where: dict[str, int] | Candidates,
    ) -> tuple[Floats, int]:  # fmt: skip
        """Cosine of the query with each candidate's vector in ``space`` (0 without one),
        and how many candidates have one; ``where``: the candidates, or their ids to their
        positions."""
        if isinstance(where, Candidates):
            return vector_scores(self.db, self.folder, space, query, self._slots(where))
        ids = sorted(where, key=where.__getitem__)
        return vector_scores(self.db, self.folder, space, query, self._slots(ids))

    def lexical(self, query: str, ids: Sequence[str] | Candidates) -> Floats | None:
        """BM25 of the packed lexical index for each candidate; None without an index."""
        index = lexicon.load(self.db, self.folder)
        if index is None:
            return None
        slots = self._slots(ids)
        scores = index.score(query_units(query), max(self.slot_count(), index.files.slots))
        inside = (slots >= 0) & (slots < len(scores))
        return np.where(inside, scores[np.where(inside, slots, 0)], 0.0)

    def neighbours(self, ids: Sequence[str] | Candidates) -> npt.NDArray[np.int64] | None:
        """Each candidate's neighbours as positions among them (−1: none, or not among them)."""
        graph = neighbours.lists(self.db, self.folder)
        if graph is None:
            return None
        slots, size = self._slots(ids), len(graph)
        place = np.full(size + 1, -1, dtype=np.int64)  # the last: −1 and beyond
        known = (slots >= 0) & (slots < size)
        place[slots[known]] = np.flatnonzero(known)
        lists = graph[slots[known]]
        lists = np.where((lists < 0) | (lists >= size), size, lists)
        if known.all():
            return place[lists]
        found = np.full((len(slots), graph.shape[1]), -1, dtype=np.int64)
        found[known] = place[lists]
        return found


def vector_scores(
    db: sqlite3.Connection,
    folder: Home,
    space: Space,
    query: npt.NDArray[np.float32],
    slots: npt.NDArray[np.int64],
) -> tuple[Floats, int]:
    """Cosine of the query with the vector of each of ``slots`` in ``space`` (0 without
    one), and how many of them have one."""
    scores = np.zeros(len(slots), dtype=np.float64)
    found = vectors.read(db, folder, space)
    records = ranks.read(db, folder)
    if found is None or records is None or not len(slots):
        return scores, 0
    count = min(found.total, records.total)
    flags = np.frombuffer(records.data, dtype=np.dtype(ranks.DTYPE), count=records.total)["flags"]
    inside = (slots >= 0) & (slots < count)
    have = np.zeros(len(slots), dtype=bool)
    have[inside] = (flags[slots[inside]] & ranks.VECTOR) != 0
    if not have.any():
        return scores, 0
    table = np.frombuffer(found.data, dtype=np.uint8, count=found.total * found.record)
    rows = table.reshape(found.total, found.record)
    products = _products(rows, query.astype(np.float32), count)
    scores[have] = products[slots[have]]
    return scores, int(have.sum())


_BLOCK = 8192


def _products(rows: npt.NDArray[np.uint8], query: npt.NDArray[np.float32], count: int) -> Floats:
    """scale × (levels · query) for the first ``count`` records, a block at a time (the
    int8 levels become float32 a block at a time, never the whole matrix)."""
    out = np.empty(count, dtype=np.float64)
    # one buffer for every block's levels: a fresh one per block costs its pages again
    buffer = np.empty((min(_BLOCK, count), rows.shape[1] - 4), dtype=np.float32)
    for start in range(0, count, _BLOCK):
        block = rows[start : min(start + _BLOCK, count)]
        scale = block[:, :4].copy().view("<f4").ravel()
        levels = buffer[: len(block)]
        levels[...] = block[:, 4:].view(np.int8)
        out[start : start + len(block)] = (levels @ query) * scale
    return out


def load_matrix(db: sqlite3.Connection, folder: Home, space: Space) -> Matrix:
    """Every vector of ``space`` in ``db``'s snapshot (those of the space in force, from its
    packed file; another space's, from the rows), as float32, ids in slot (row) order."""
    found = vectors.read(db, folder, space)
    records = ranks.read(db, folder)
    if found is not None and records is not None:
        table = np.frombuffer(records.data, dtype=np.dtype(ranks.DTYPE), count=records.total)
        count = min(found.total, records.total)
        have = np.flatnonzero((table["flags"][:count] & ranks.VECTOR) != 0)
        rows = np.frombuffer(found.data, dtype=np.uint8, count=found.total * found.record)
        rows = rows.reshape(found.total, found.record)[have]
        scale = rows[:, :4].copy().view("<f4")
        levels = rows[:, 4:].view(np.int8).astype(np.float32)
        ids = [i.decode("ascii") for i in table["id"][have].tolist()]
        return Matrix(ids, (levels * scale).astype(np.float32))
    others = space_rows(db, space)
    return Matrix([r[0] for r in others], _dequantised([r[1] for r in others], space.dimensions))


def space_rows(db: sqlite3.Connection, space: Space) -> list[tuple[str, bytes]]:
    """Every ``(entry_id, q8 vector)`` of ``space`` in the table of other spaces' vectors."""
    return db.execute(
        "SELECT entry_id, vector FROM vectors WHERE provider = ? AND model = ? "
        "AND dimensions = ? ORDER BY entry_id",
        space,
    ).fetchall()


def _dequantised(rows: list[bytes], dimensions: int) -> npt.NDArray[np.float32]:
    if not rows:
        return np.zeros((0, dimensions), dtype=np.float32)
    return np.stack([floats(data) for data in rows]).astype(np.float32)
