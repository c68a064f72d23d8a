"""Reading ``memory.db`` for a ranking without numpy: candidates, the lexical index, the
neighbour lists.

``View`` opens the view read-only in one transaction, so every read of one
ranking sees the same state.  Its readers give lists where ``reading``'s
``Snapshot`` (a ``View`` too) gives numpy arrays; the packed index files are
mapped and read through typed memoryviews.  Lexical scores follow
``lexicon.Lexicon.score`` term by term in the same order and precision,
so both give the same numbers.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from datetime import UTC, datetime
from operator import itemgetter
from pathlib import Path
from types import TracebackType
from typing import Any, NamedTuple, Self

from memlog.errors import ViewError
from memlog.projections.fold import Entry
from memlog.projections.sqlite_view import index_files, ranks, store
from memlog.projections.terms import query_units, term_hash
from memlog.vocabulary import CATEGORIES, Space

LEXICON = ("lex", b"MLLEX001")
GRAPH = ("nbr", b"MLNBR001")

#: days from the time recency counts from (``ranks.SINCE``) to a moment, never negative
DAYS = f"coalesce(max(julianday(?) - {ranks.SINCE}, 0.0), 0.0)"
#: the confidence level as ranking reads it (anything unknown ranks as medium)
LEVEL = "CASE confidence WHEN 'high' THEN 'high' WHEN 'low' THEN 'low' ELSE 'medium' END"


class Columns(NamedTuple):
    """Live entries eligible for injection, as parallel lists (``days``: see ``DAYS``)."""

    ids: list[str]
    categories: list[str]
    observation_count: list[float]
    confidence: list[str]
    days: list[float]
    recall_count: list[float]


class View:
    """The view at one moment, read-only: ``with View(folder) as view: …``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        path = folder / store.DB_NAME
        if not path.exists():
            raise ViewError(f"{path} does not exist")
        self.db = store.connect(path, readonly=True)
        self.db.execute("BEGIN")  # one snapshot for every read below
        #: the neighbour lists ``columns`` read with its candidates (``neighbour_lists``)
        self._around: tuple[list[str], list[int], int, int, memoryview[Any]] | None = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.db.close()

    def columns(self, categories: Sequence[str], now: datetime) -> Columns:
        """The candidates of ``categories``, in id order, their recency counted to ``now``:
        from the packed file (``ranks``), else from the rows."""
        moment = now.astimezone(UTC).replace(tzinfo=None).isoformat()
        packed = self._packed_columns(categories, now)
        if packed is not None:
            return packed
        marks = ",".join("?" * len(categories))
        rows = self.db.execute(
            f"SELECT id, category, observation_count, {LEVEL}, {DAYS}, recall_count "
            f"FROM entries WHERE status = 'live' AND category IN ({marks}) ORDER BY id",
            [moment, *categories],
        ).fetchall()
        columns: list[tuple[Any, ...]] = list(zip(*rows, strict=True)) if rows else [()] * 6
        return Columns(
            ids=list(columns[0]),
            categories=list(columns[1]),
            observation_count=[float(n) for n in columns[2]],
            confidence=list(columns[3]),
            days=list(columns[4]),
            recall_count=[float(n) for n in columns[5]],
        )

    def packed(self, categories: Sequence[str]) -> Packed | None:
        """The packed file's columns and which of its entries are in ``categories``; None
        without a file, or for a category it does not name (``columns`` reads the rows)."""
        wanted = {CATEGORIES.index(c) for c in categories if c in CATEGORIES}
        found = index_files.load_plain(self.db, self.folder, ranks.KIND, ranks.MAGIC, ranks.parts)
        if found is None or len(wanted) != len(set(categories)):
            return None
        (count, k, _), names, arrays = found
        codes = arrays[3].tolist()
        keep = [i for i, code in enumerate(codes) if code in wanted]
        return Packed(count, k, names, codes, keep, *arrays)

    def _packed_columns(self, categories: Sequence[str], now: datetime) -> Columns | None:
        found = self.packed(categories)
        if found is None:
            return None
        keep = found.keep
        if not keep:
            return Columns([], [], [], [], [], [])
        julian = self.julian(now)
        take = itemgetter(*keep) if len(keep) > 1 else (lambda values: (values[keep[0]],))
        ids = list(take(decoded_ids(found.names, found.entries)))
        self._around = (ids, keep, found.entries, found.k, found.around)
        return Columns(
            ids=ids,
            categories=[CATEGORIES[c] for c in take(found.codes)],
            observation_count=[float(n) for n in take(found.counts.tolist())],
            confidence=[ranks.LEVELS[c] for c in take(found.levels.tolist())],
            days=[max(julian - s, 0.0) for s in take(found.since.tolist())],
            recall_count=[float(n) for n in take(found.recalls.tolist())],
        )

    def julian(self, now: datetime) -> float:
        """``now`` as SQLite's julianday (the days of ``DAYS`` count from the same)."""
        moment = now.astimezone(UTC).replace(tzinfo=None).isoformat()
        return float(self.db.execute("SELECT julianday(?)", (moment,)).fetchone()[0])

    def has_vectors(self, space: Space) -> bool:
        """Whether any entry has a vector in ``space`` (else a query needs no embedding)."""
        row = self.db.execute(
            "SELECT 1 FROM vectors WHERE provider = ? AND model = ? AND dimensions = ? LIMIT 1",
            space,
        ).fetchone()
        return row is not None

    def entries(self, ids: Sequence[str], vectors: bool = False) -> list[Entry]:
        """The entries of ``ids``, in id order."""
        return store.load_ids(self.db, ids, vectors)

    def lexical_list(self, query: str, ids: Sequence[str]) -> list[float] | None:
        """BM25 of the packed lexical index for each of ``ids``; None without an index.
        The same sums, in the same order, as ``lexicon.Lexicon.score``."""
        found = index_files.load_plain(self.db, self.folder, *LEXICON, lexicon_parts)
        if found is None:
            return None
        (documents, terms, _), names, (hashes, starts, docs, weights) = found

        def postings(term: str) -> list[tuple[int, float]] | None:
            wanted = term_hash(term)
            at = bisect.bisect_left(hashes, wanted)
            if at >= terms or hashes[at] != wanted:
                return None
            begin, end = starts[at], starts[at + 1]
            return list(zip(docs[begin:end].tolist(), weights[begin:end].tolist(), strict=True))

        sums = [0.0] * documents
        for unit in query_units(query):
            _add_unit(sums, unit.weight, [postings(term) for term in unit.terms])
        where = _where(decoded_ids(names, documents))
        return [sums[where[i]] if i in where else 0.0 for i in ids]

    def document_frequencies(self, terms: Sequence[str]) -> tuple[int, list[int]] | None:
        """The number of indexed entries and how many of them hold each of ``terms``
        (stemmed, as ``term_counts`` gives them); None without a lexical index."""
        found = index_files.load_plain(self.db, self.folder, *LEXICON, lexicon_parts)
        if found is None:
            return None
        (documents, count, _), _, (hashes, starts, _, _) = found
        frequencies = []
        for term in terms:
            wanted = term_hash(term)
            at = bisect.bisect_left(hashes, wanted)
            held = at < count and hashes[at] == wanted
            frequencies.append(int(starts[at + 1] - starts[at]) if held else 0)
        return documents, frequencies

    def neighbour_lists(self, ids: Sequence[str]) -> Neighbours | None:
        """Each of ``ids``' neighbours among them: from the packed columns when ``columns``
        gave these ids (no id to map), else from the neighbour file; None without either."""
        if self._around is not None and self._around[0] is ids:
            _, keep, count, k, around = self._around
            if not k:
                return None
            place = [-1] * count
            for i, at in enumerate(keep):
                place[at] = i
            return Neighbours(k, keep, around.tolist(), place)
        found = index_files.load_plain(self.db, self.folder, *GRAPH, graph_parts)
        if found is None:
            return None
        (count, k, _), names, (index, _dots) = found
        graph = decoded_ids(names, count)
        candidate, row = _where(ids), _where(graph)
        to_ids = [candidate.get(g, -1) for g in graph]
        return Neighbours(k, [row.get(i, -1) for i in ids], index.tolist(), to_ids)


class Packed(NamedTuple):
    """The packed columns (``ranks``) over the mapping, and the places of the entries asked
    for; ``codes`` already as a list (the filter read it)."""

    entries: int
    k: int
    names: memoryview
    codes: list[int]
    keep: list[int]
    since: memoryview[Any]
    counts: memoryview[Any]
    recalls: memoryview[Any]
    categories: memoryview[Any]
    levels: memoryview[Any]
    around: memoryview[Any]


class Neighbours(NamedTuple):
    """Neighbour lists: candidate i's are ``lists[rows[i] * k : rows[i] * k + k]`` (no list
    when ``rows[i]`` is −1), places that ``where`` turns into candidates (−1: none)."""

    k: int
    rows: list[int]
    lists: list[int]
    where: list[int]


def decoded_ids(names: memoryview, count: int) -> list[str]:
    """The 16-byte ids of a packed file, decoded."""
    text = bytes(names).decode("ascii")
    width = index_files.ID_WIDTH
    return [text[i * width : i * width + width] for i in range(count)]


def _add_unit(
    sums: list[float], weight: float, found: list[list[tuple[int, float]] | None]
) -> None:
    """Add a query unit's weight times its terms' BM25 weights to ``sums``, in the documents
    that hold every one of its terms (term by term, the order ``lexicon`` adds in)."""
    if not found or any(p is None for p in found):
        return
    if len(found) == 1:
        for doc, value in found[0]:  # type: ignore[union-attr]
            sums[doc] += value if weight == 1.0 else weight * value
        return
    part: dict[int, float] = {}
    held: dict[int, int] = {}
    for postings in found:
        for doc, value in postings:  # type: ignore[union-attr]
            part[doc] = part.get(doc, 0.0) + value
            held[doc] = held.get(doc, 0) + 1
    for doc, total in part.items():
        if held[doc] == len(found):
            sums[doc] += weight * total


def _where(ids: Sequence[str]) -> dict[str, int]:
    return {entry_id: i for i, entry_id in enumerate(ids)}


def lexicon_parts(counts: index_files.Counts) -> list[tuple[str, int]]:
    _, terms, postings = counts
    return [("<u8", terms), ("<u8", terms + 1), ("<u4", postings), ("<f4", postings)]


def graph_parts(counts: index_files.Counts) -> list[tuple[str, int]]:
    return [("<i4", counts[0] * counts[1])] * 2
