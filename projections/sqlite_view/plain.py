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
from pathlib import Path
from types import TracebackType
from typing import Any, NamedTuple, Self

from memlog.errors import ViewError
from memlog.eventlog.bounds import utc_moment
from memlog.projections.fold import Entry
from memlog.projections.sqlite_view import index_files, store
from memlog.projections.terms import term_counts, term_hash
from memlog.vocabulary import Space

LEXICON = ("lex", b"MLLEX001")
GRAPH = ("nbr", b"MLNBR001")

#: the ``Last observed`` date of an entry known only from imported files, else ''
_IMPORTED_OBSERVED = (
    "CASE WHEN sources = '[\"import\"]' AND last_observed GLOB "
    "'[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*' THEN last_observed ELSE '' END"
)


def recency_time(updated_at: str, last_observed: str) -> str:
    """The time recency counts from: an imported entry's ``Last observed`` (an ISO date or
    time, as UTC), else ``updated_at`` (the import itself would make every lesson new)."""
    moment = utc_moment(last_observed)
    return moment.replace(tzinfo=None).isoformat() if moment is not None else updated_at


class Columns(NamedTuple):
    """Live entries eligible for injection, as parallel lists (``updated_at``: the time
    recency counts from, see ``recency_time``)."""

    ids: list[str]
    names: list[str]
    categories: list[str]
    observation_count: list[float]
    confidence: list[str]
    updated_at: list[str]
    recall_count: list[float]
    rowids: list[int]


class View:
    """The view at one moment, read-only: ``with View(folder) as view: …``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        path = folder / store.DB_NAME
        if not path.exists():
            raise ViewError(f"{path} does not exist")
        self.db = store.connect(path, readonly=True)
        self.db.execute("BEGIN")  # one snapshot for every read below

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.db.close()

    def columns(self, categories: Sequence[str]) -> Columns:
        """The candidates of ``categories``, in id order."""
        marks = ",".join("?" * len(categories))
        rows = self.db.execute(
            "SELECT id, name, category, observation_count, confidence, updated_at, recall_count, "
            f"rowid, {_IMPORTED_OBSERVED} FROM entries WHERE status = 'live' "
            f"AND category IN ({marks}) ORDER BY id",
            list(categories),
        ).fetchall()
        columns: list[tuple[Any, ...]] = list(zip(*rows, strict=True)) if rows else [()] * 9
        return Columns(
            ids=list(columns[0]),
            names=list(columns[1]),
            categories=list(columns[2]),
            observation_count=[float(n) for n in columns[3]],
            confidence=list(columns[4]),
            updated_at=[
                recency_time(u, o) if o else u for u, o in zip(columns[5], columns[8], strict=True)
            ],
            recall_count=[float(n) for n in columns[6]],
            rowids=list(columns[7]),
        )

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
        """BM25 of the packed lexical index for each of ``ids``; None without an index."""
        found = index_files.load_plain(self.db, self.folder, *LEXICON, lexicon_parts)
        if found is None:
            return None
        (documents, terms, _), names, (hashes, starts, docs, weights) = found
        scores: dict[int, float] = {}
        for term, repeat in term_counts([query]).items():
            wanted = term_hash(term)
            at = bisect.bisect_left(hashes, wanted)
            if at >= terms or hashes[at] != wanted:
                continue
            begin, end = starts[at], starts[at + 1]
            for doc, weight in zip(
                docs[begin:end].tolist(), weights[begin:end].tolist(), strict=True
            ):
                scores[doc] = scores.get(doc, 0.0) + float(repeat) * weight
        where = {entry_id: i for i, entry_id in enumerate(ids)}
        out = [0.0] * len(ids)
        for doc, score in scores.items():
            place = where.get(_id_at(names, doc))
            if place is not None:
                out[place] = score
        return out

    def neighbour_lists(self, ids: Sequence[str]) -> list[list[int]] | None:
        """Each of ``ids``' neighbours as positions in ``ids`` (−1: none, or not among them)."""
        found = index_files.load_plain(self.db, self.folder, *GRAPH, graph_parts)
        if found is None:
            return None
        (count, k, _), names, (index, _dots) = found
        where = {entry_id: i for i, entry_id in enumerate(ids)}
        graph_ids = bytes(names).decode("ascii")
        to_ids = [where.get(graph_ids[r * 16 : r * 16 + 16], -1) for r in range(count)]
        rows: dict[str, int] = {graph_ids[r * 16 : r * 16 + 16]: r for r in range(count)}
        lists = []
        none = [-1] * k
        for entry_id in ids:
            row = rows.get(entry_id)
            if row is None:
                lists.append(none)
                continue
            lists.append([to_ids[j] if j >= 0 else -1 for j in index[row * k : row * k + k]])
        return lists


def _id_at(names: memoryview, position: int) -> str:
    start = position * index_files.ID_WIDTH
    return bytes(names[start : start + index_files.ID_WIDTH]).decode("ascii")


def lexicon_parts(counts: index_files.Counts) -> list[tuple[str, int]]:
    _, terms, postings = counts
    return [("<u8", terms), ("<u8", terms + 1), ("<u4", postings), ("<f4", postings)]


def graph_parts(counts: index_files.Counts) -> list[tuple[str, int]]:
    return [("<i4", counts[0] * counts[1])] * 2
