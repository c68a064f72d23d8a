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

from bisect import bisect_left
from collections.abc import Sequence
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, NamedTuple, Self

from memlog.errors import ViewError
from memlog.home import Home
from memlog.projections.fold import Entry
from memlog.projections.sqlite_view import index_files, ranks, store, vectors
from memlog.projections.sqlite_view.lexfiles import document_frequency, load_files, scores
from memlog.projections.terms import query_units
from memlog.vocabulary import CATEGORIES, Space

GRAPH = ("nbr", b"MLNBR003")

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


class History(NamedTuple):
    """What sessions did with the candidates judged so far: their places among the
    candidates, how many sessions applied each and how many were judged; and the same
    two counts over every live entry (the home's rate of use)."""

    places: list[int]
    applied: list[int]
    judged: list[int]
    all_applied: int
    all_judged: int


class View:
    """The view at one moment, read-only: ``with View(folder) as view: …``."""

    def __init__(self, folder: Home) -> None:
        self.folder = folder
        path = folder.db
        if not path.exists():
            raise ViewError(f"{path} does not exist")
        self.db = store.connect(path, readonly=True)
        self.db.execute("BEGIN")  # one snapshot for every read below
        #: the candidates ``columns`` read last: their ids and slots (``slots_of``)
        self._last: tuple[Sequence[str], list[int]] | None = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.db.close()

    def columns(self, categories: Sequence[str], now: datetime) -> Columns:
        """The candidates of ``categories``, in id order, their recency counted to ``now``:
        from the packed file (``ranks``), else from the rows."""
        packed = self._packed_columns(categories, now)
        if packed is not None:
            return packed
        moment = now.astimezone(UTC).replace(tzinfo=None).isoformat()
        marks = ",".join("?" * len(categories))
        rows = self.db.execute(
            f"SELECT id, category, observation_count, {LEVEL}, {DAYS}, recall_count, slot "
            f"FROM entries WHERE status = 'live' AND category IN ({marks}) ORDER BY id",
            [moment, *categories],
        ).fetchall()
        columns: list[tuple[Any, ...]] = list(zip(*rows, strict=True)) if rows else [()] * 7
        found = Columns(
            ids=list(columns[0]),
            categories=list(columns[1]),
            observation_count=[float(n) for n in columns[2]],
            confidence=list(columns[3]),
            days=list(columns[4]),
            recall_count=[float(n) for n in columns[5]],
        )
        self._last = (found.ids, [int(s) for s in columns[6]])
        return found

    def _packed_columns(self, categories: Sequence[str], now: datetime) -> Columns | None:
        """``columns`` from the packed records; None without them, or for a category they
        do not name (``columns`` reads the rows)."""
        wanted = {CATEGORIES.index(c) for c in categories if c in CATEGORIES}
        found = ranks.read(self.db, self.folder) if index_files.little_endian() else None
        if found is None or len(wanted) != len(set(categories)):
            return None
        julian = self.julian(now)
        chosen = sorted(
            (entry_id, slot, since, count, recalls, code, level)
            for slot, (entry_id, since, count, recalls, code, level, flags) in enumerate(
                ranks.RECORD.iter_unpack(found.data)
            )
            if flags & ranks.LIVE and code in wanted
        )
        ids = [c[0].decode("ascii") for c in chosen]
        self._last = (ids, [c[1] for c in chosen])
        return Columns(
            ids=ids,
            categories=[CATEGORIES[c[5]] for c in chosen],
            observation_count=[float(c[3]) for c in chosen],
            confidence=[ranks.LEVELS[c[6]] for c in chosen],
            days=[max(julian - c[2], 0.0) for c in chosen],
            recall_count=[float(c[4]) for c in chosen],
        )

    def julian(self, now: datetime) -> float:
        """``now`` as SQLite's julianday (the days of ``DAYS`` count from the same)."""
        moment = now.astimezone(UTC).replace(tzinfo=None).isoformat()
        return float(self.db.execute("SELECT julianday(?)", (moment,)).fetchone()[0])

    def has_vectors(self, space: Space) -> bool:
        """Whether any entry has a vector in ``space`` (else a query needs no embedding)."""
        if store.space_of(self.db) == space:
            return vectors.vector_count(self.db) > 0
        row = self.db.execute(
            "SELECT 1 FROM vectors WHERE provider = ? AND model = ? AND dimensions = ? LIMIT 1",
            space,
        ).fetchone()
        return row is not None

    def history(self, ids: Sequence[str]) -> History | None:
        """What sessions did with the candidates ``ids`` (in id order, as ``columns`` gives
        them); None when no live entry was ever judged (a partial index holds only those)."""
        rows = self.db.execute(
            "SELECT id, applied_count, judged_count FROM entries "
            "WHERE judged_count > 0 AND status = 'live' ORDER BY id"
        ).fetchall()
        if not rows:
            return None
        places, applied, judged = [], [], []
        for entry_id, used, seen in rows:
            at = bisect_left(ids, entry_id)
            if at < len(ids) and ids[at] == entry_id:
                places.append(at)
                applied.append(int(used))
                judged.append(int(seen))
        total = (sum(int(r[1]) for r in rows), sum(int(r[2]) for r in rows))
        return History(places, applied, judged, *total)

    def entries(self, ids: Sequence[str], vectors: bool = False) -> list[Entry]:
        """The entries of ``ids``, in id order."""
        return store.load_ids(self.db, ids, vectors)

    def slots_of(self, ids: Sequence[str]) -> list[int]:
        """The slot of each of ``ids`` (−1: none): the candidates' own when ``columns``
        gave these ids."""
        if self._last is not None and self._last[0] is ids:
            return self._last[1]
        found = store.slots_of(self.db, ids)
        return [found.get(i, -1) for i in ids]

    def slot_count(self) -> int:
        """How many slots the packed records cover (the rows' when there are none)."""
        found = index_files.pointer(self.db, ranks.KIND)
        return found[1] if found is not None else store.slot_count(self.db)

    def lexical_list(self, query: str, ids: Sequence[str]) -> list[float] | None:
        """BM25 of the packed lexical index for each of ``ids``; None without an index.
        The same sums, in the same order, as ``lexicon.Lexicon.score``."""
        files = load_files(self.db, self.folder)
        if files is None:
            return None
        slots = self.slots_of(ids)
        sums = scores(files, query_units(query), max(self.slot_count(), files.slots))
        return [sums[s] if 0 <= s < len(sums) else 0.0 for s in slots]

    def document_frequencies(self, terms: Sequence[str]) -> tuple[int, list[int]] | None:
        """The number of indexed entries and how many of them hold each of ``terms``
        (stemmed, as ``term_counts`` gives them); None without a lexical index."""
        files = load_files(self.db, self.folder)
        if files is None:
            return None
        return files.documents, [document_frequency(files, term) for term in terms]

    def neighbour_lists(self, ids: Sequence[str]) -> Neighbours | None:
        """Each of ``ids``' neighbours among them; None without a neighbour file."""
        found = index_files.slots(self.db, self.folder, GRAPH[0], GRAPH[1])
        if found is None or not index_files.little_endian():
            return None
        slots = self.slots_of(ids)
        where = [-1] * found.total
        for place, slot in enumerate(slots):
            if 0 <= slot < found.total:
                where[slot] = place
        rows = [s if 0 <= s < found.total else -1 for s in slots]
        lists = index_files.typed(found.data, "<i4").tolist()
        return Neighbours(found.extra >> 32, rows, lists, where, found.record // 4)


class Neighbours(NamedTuple):
    """Neighbour lists: candidate i's are ``lists[rows[i] * stride :][:k]`` (no list when
    ``rows[i]`` is −1), places that ``where`` turns into candidates (−1, or past its end:
    none)."""

    k: int
    rows: list[int]
    lists: list[int]
    where: list[int]
    stride: int
