"""The semantic pipeline: rank the SQLite view's entries for the project at hand.

One ``SemanticRun`` per request: catch the views up (a large catch-up is
left to a background process), build the query from the project's context,
start embedding it (within its own deadline; a late vector is dropped, not
waited for), read candidates, FTS5 bm25 and vector cosine from one
snapshot, score (the fused recipe of ``fusion`` by default, the D3 formula
under ``memory_ranking: d3``), balance categories, and render.  The run
keeps its own timings and notes.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

import numpy as np
import numpy.typing as npt

from memlog.config import Config
from memlog.embeddings.base import EmbeddingProvider
from memlog.errors import MemlogError
from memlog.projections.fold import Entry
from memlog.projections.freshness import lag_bytes
from memlog.projections.sqlite_view.reading import Candidates, Snapshot
from memlog.retrieval import fusion, outcome, plain, ranking, relevance
from memlog.retrieval.context import text_and_query
from memlog.retrieval.request import Injection, Request

Vector = npt.NDArray[np.float32]
Scored = ranking.Scores | fusion.Fused


class Late(Exception):
    """The query embedding was not ready in time."""


class Pending:
    """The query vector another thread delivers (``concurrent.futures`` would load
    ``logging``, a twentieth of a start, for this one handover)."""

    def __init__(self) -> None:
        self._done = threading.Event()
        self._value: Vector | None = None
        self._error: BaseException | None = None

    def set_result(self, value: Vector) -> None:
        self._value = value
        self._done.set()

    def set_exception(self, error: BaseException) -> None:
        self._error = error
        self._done.set()

    def result(self, timeout: float) -> Vector:
        """The vector; ``Late`` when it takes longer, the thread's error when it failed."""
        if not self._done.wait(timeout):
            raise Late
        if self._error is not None:
            raise self._error
        assert self._value is not None
        return self._value


class Unavailable(Exception):
    """The embedding provider could not be made (the note says so, not "failed")."""


def embed_in_background(
    make: Callable[[], EmbeddingProvider], text: str, deadline: float
) -> Pending:
    """Make the provider and embed ``text`` on a daemon thread (loading a local model
    overlaps the caller's reads); the caller waits only as long as it may."""
    future = Pending()

    def work() -> None:
        try:
            try:
                provider = make()
            except MemlogError as exc:
                raise Unavailable(str(exc)) from None
            try:
                future.set_result(provider.with_deadline(deadline).embed(text, "query"))
            finally:
                provider.close()
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller
            future.set_exception(exc)

    threading.Thread(target=work, name="memlog-embed", daemon=True).start()
    return future


def vector_weight(config: Config) -> float:
    """The weight of the query vector in the ranking configured (0: no query embedding)."""
    if config.memory_ranking == "d3":
        return config.memory_vector_weight
    return config.memory_fusion_vector_weight


class SemanticRun:
    """One ranking of the SQLite view for one request."""

    def __init__(self, request: Request) -> None:
        self.request = request
        self.space = request.ws.space
        self.timings: dict[str, float] = {}
        self.notes: list[str] = []
        self.text: str | None = None
        self.query: str | None = None
        self._parts: tuple[ranking.Floats, ...] = ()

    def execute(self) -> Injection:
        """Rank; the query embedding starts before the catch-up when the view already
        holds vectors of the space, so the two overlap."""
        request = self.request
        recipe = request.config.memory_ranking
        self.text, self.query = text_and_query(request.ws.root, request.query, recipe)
        embedding = self._start_embedding() if self._had_vectors() else None
        started = time.perf_counter()
        if self.request.catch_up:
            self._catch_up()
        self.timings["catch_up_ms"] = _ms(started)
        with Snapshot(request.home) as view:
            if embedding is None and view.has_vectors(self.space):
                embedding = self._start_embedding()
            return self._rank(view, embedding)

    def _had_vectors(self) -> bool:
        """Whether the view, as it stands before catching up, holds vectors of the space
        (no view yet: perhaps, the log may hold some)."""
        try:
            with Snapshot(self.request.home) as view:
                return view.has_vectors(self.space)
        except (MemlogError, sqlite3.Error, OSError):
            return True

    @property
    def d3(self) -> bool:
        return self.request.config.memory_ranking == "d3"

    def _catch_up(self) -> None:
        """Catch the views up, unless they are too far behind for the time there is.

        A catch-up cut off by the deadline would roll back and fail the same way
        at every start, so a large one is left to a background process instead.
        """
        home, most = self.request.home, self.request.max_catch_up_bytes
        # Only runs for views ``inject.build`` found behind: the projectors load here.
        from memlog.projections.runner import catch_up, catch_up_in_background

        try:
            behind = lag_bytes(home)
            if most is not None and behind > most:
                self.notes.append(
                    f"views are {behind} bytes behind the log; catching up in the background"
                )
                catch_up_in_background(home, self.request.ws.root)
                return
            catch_up(home, self.space, lock_wait=self.request.lock_wait)
        except (MemlogError, OSError) as exc:
            self.notes.append(f"views not caught up ({exc}); read as they are")

    def _start_embedding(self) -> Pending | None:
        if not self.query or vector_weight(self.request.config) <= 0:
            return None
        deadline = min(self.request.deadline, time.monotonic() + self.request.embedding_budget)
        return embed_in_background(self.request.ws.provider, self.query, deadline)

    def _rank(self, view: Snapshot, embedding: Pending | None) -> Injection:
        started = time.perf_counter()
        found = view.candidates(self.request.wanted_categories, datetime.now(UTC))
        self.timings["candidates_ms"] = _ms(started)
        started = time.perf_counter()
        keyword = self._keyword(view, found) if self.query else None
        self.timings["fts_ms" if self.d3 else "lexical_ms"] = _ms(started)
        vector, matches = self._vector(view, embedding, found)
        started = time.perf_counter()
        reference = self.request.reference(found.categories)
        scores = (
            self._score(found, vector, keyword, reference)
            if self.d3
            else self._fuse(view, found, vector, keyword, reference)
        )
        balanced = self.request.categories is None
        limit = self.request.effective_limit
        shown = self.request.shown(found.categories, found.ids)
        then = None if isinstance(scores, ranking.Scores) else scores.prominence_raw
        picked = ranking.select(found.categories, scores.final, limit, balanced, shown, then)
        ids = [found.ids[i] for i in picked]
        entries = view.entries(ids)
        self.timings["rank_ms"] = _ms(started)
        judged = self._relevance(view, scores, (picked, ids), entries, matches > 0)
        ranked = outcome.Ranked(
            found.ids, found.categories, picked, scores, self._parts,
            self._matched(scores), matches, shown, judged,
        )  # fmt: skip
        return outcome.injection(
            self.request, ranked, entries, self.query, self.timings, self.notes, self.text
        )

    def _keyword(self, view: Snapshot, found: Candidates) -> ranking.Floats | None:
        """bm25 scores, or None when no index can be read (the signal is dropped).

        The fused recipe reads the packed lexical index; D3, and the fused
        recipe when that index is missing, FTS5.
        """
        try:
            if not self.d3 and self.query:
                lexical = view.lexical(self.query, found.ids)
                if lexical is not None:
                    return lexical
                self.notes.append("lexical index unavailable; ranked with FTS5 bm25")
            return view.bm25(self.query, view.rowid_positions(found.ids))
        except sqlite3.Error as exc:
            self.notes.append(f"keyword search unavailable ({exc}); ranked without it")
            return None

    def _vector(
        self,
        view: Snapshot,
        embedding: Pending | None,
        found: Candidates,
    ) -> tuple[ranking.Floats | None, int]:
        if embedding is None:
            return None, 0
        started = time.perf_counter()
        wait = min(self.request.deadline - time.monotonic(), self.request.embedding_budget)
        try:
            query_vector = embedding.result(timeout=max(wait, 0.0))
        except Late:
            self.notes.append("query embedding was late; ranked without it")
            return None, 0
        except Unavailable as exc:
            self.notes.append(f"embedding provider unavailable: {exc}")
            return None, 0
        except Exception as exc:  # noqa: BLE001 - any provider failure drops the signal only
            self.notes.append(f"query embedding failed ({exc}); ranked without it")
            return None, 0
        finally:
            self.timings["embed_wait_ms"] = _ms(started)
        scores, matches = view.cosines(self.space, query_vector, found)
        return (scores if matches else None), matches

    def _score(
        self,
        found: Candidates,
        vector: ranking.Floats | None,
        keyword: ranking.Floats | None,
        reference: Sequence[bool] | None,
    ) -> ranking.Scores:
        config = self.request.config
        weights = ranking.Weights(
            config.memory_vector_weight,
            config.memory_keyword_weight,
            config.memory_prominence_weight,
        )
        return ranking.score(
            vector, keyword, found.observation_count, found.confidence, found.days,
            found.recall_count, weights, reference,
        )  # fmt: skip

    def _fuse(
        self,
        view: Snapshot,
        found: Candidates,
        vector: ranking.Floats | None,
        lexical: ranking.Floats | None,
        reference: Sequence[bool] | None,
    ) -> fusion.Fused:
        weights = fusion.weights_of(self.request.config)
        parts = ranking.prominence_parts(
            found.observation_count, found.confidence, found.days, found.recall_count, reference
        )
        self._parts = parts
        # with no query signal and no weight on prominence every fused score is 0, and so
        # is every neighbour mean: the lists (10 per candidate) are not read
        signal = lexical is not None or vector is not None or weights.prominence != 0
        around = view.neighbours(found.ids) if weights.neighbours > 0 and signal else None
        prominence = (parts[0] + parts[1] + parts[2] + parts[3]) / 4.0
        mask = None if reference is None else np.asarray(reference, dtype=bool)
        useful = None
        if weights.usefulness > 0:
            found_use = plain.usefulness(view.history(found.ids), len(found.ids))
            useful = None if found_use is None else np.asarray(found_use, dtype=np.float64)
        return fusion.fuse(lexical, vector, prominence, around, weights, mask, useful)

    def _relevance(
        self,
        view: Snapshot,
        scores: Scored,
        picked: tuple[list[int], list[str]],
        entries: list[Entry],
        vector: bool,
    ) -> list[dict[str, float]] | None:
        """For a search, how relevant each pick (candidate places and ids, best first) is
        on its own (``relevance``)."""
        if self.request.query is None:
            return None
        places, ids = picked
        cosines = [float(scores.vector_raw[i]) for i in places] if vector else None
        return relevance.of_picked(view, self.query, entries, ids, cosines)

    @staticmethod
    def _matched(scores: Scored) -> int:
        """Candidates with a keyword or lexical score."""
        raw = scores.keyword_raw if isinstance(scores, ranking.Scores) else scores.lexical_raw
        return int(np.count_nonzero(raw))


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
