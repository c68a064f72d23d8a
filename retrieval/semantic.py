"""The semantic pipeline: rank the SQLite view's entries for the project at hand.

One ``SemanticRun`` per request: catch the views up (a large catch-up is
left to a background process), build the query from the project's context,
start embedding it (within its own deadline; a late vector is dropped, not
waited for), read candidates, FTS5 bm25 and vector cosine from one
snapshot, score with the D3 formula, balance categories, and render.  The
run keeps its own timings and notes.
"""

from __future__ import annotations

import concurrent.futures
import sqlite3
import threading
import time
from datetime import UTC, datetime

import numpy as np
import numpy.typing as npt

from memlog.embeddings.base import EmbeddingProvider
from memlog.errors import MemlogError
from memlog.projections.fold import Entry
from memlog.projections.runner import catch_up, catch_up_in_background, lag_bytes
from memlog.projections.sqlite_view.reading import Candidates, Snapshot
from memlog.retrieval import ranking
from memlog.retrieval.context import collect
from memlog.retrieval.render import render_semantic
from memlog.retrieval.request import Chosen, Injection, Request

Vector = npt.NDArray[np.float32]
COMPONENTS = (
    "vector_raw", "vector", "keyword_raw", "keyword", "observations", "confidence", "recency",
    "recall", "prominence", "final",
)  # fmt: skip


def embed_in_background(
    provider: EmbeddingProvider, text: str
) -> concurrent.futures.Future[Vector]:
    """Embed ``text`` on a daemon thread; the caller waits only as long as it may."""
    future: concurrent.futures.Future[Vector] = concurrent.futures.Future()

    def work() -> None:
        try:
            future.set_result(provider.embed(text, "query"))
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller
            future.set_exception(exc)

    threading.Thread(target=work, name="memlog-embed", daemon=True).start()
    return future


class SemanticRun:
    """One ranking of the SQLite view for one request."""

    def __init__(self, request: Request) -> None:
        self.request = request
        self.space = request.ws.space
        self.timings: dict[str, float] = {}
        self.notes: list[str] = []
        self.query: str | None = None

    def execute(self) -> Injection:
        started = time.perf_counter()
        if self.request.catch_up:
            self._catch_up()
        self.timings["catch_up_ms"] = _ms(started)
        request = self.request
        self.query = request.query if request.query is not None else collect(request.ws.root).query
        with Snapshot(request.home) as view:
            embedding = self._start_embedding() if view.has_vectors(self.space) else None
            return self._rank(view, embedding)

    def _catch_up(self) -> None:
        """Catch the views up, unless they are too far behind for the time there is.

        A catch-up cut off by the deadline would roll back and fail the same way
        at every start, so a large one is left to a background process instead.
        """
        home, most = self.request.home, self.request.max_catch_up_bytes
        try:
            behind = lag_bytes(home)
            if most is not None and behind > most:
                self.notes.append(
                    f"views are {behind} bytes behind the log; catching up in the background"
                )
                catch_up_in_background(home)
                return
            catch_up(home, self.space, lock_wait=self.request.lock_wait)
        except (MemlogError, OSError) as exc:
            self.notes.append(f"views not caught up ({exc}); read as they are")

    def _start_embedding(self) -> concurrent.futures.Future[Vector] | None:
        if not self.query or self.request.config.memory_vector_weight <= 0:
            return None
        try:
            provider = self.request.ws.provider()
        except MemlogError as exc:
            self.notes.append(f"embedding provider unavailable: {exc}")
            return None
        deadline = min(self.request.deadline, time.monotonic() + self.request.embedding_budget)
        future = embed_in_background(provider.with_deadline(deadline), self.query)
        future.add_done_callback(lambda _: provider.close())
        return future

    def _rank(
        self, view: Snapshot, embedding: concurrent.futures.Future[Vector] | None
    ) -> Injection:
        started = time.perf_counter()
        found = view.candidates(self.request.wanted_categories)
        keyword = self._keyword(view, found) if self.query else None
        self.timings["fts_ms"] = _ms(started)
        vector, matches = self._vector(view, embedding, found)
        started = time.perf_counter()
        scores = self._score(found, vector, keyword)
        balanced = self.request.categories is None
        limit = self.request.effective_limit
        picked = ranking.select(found.categories, scores.final, limit, balanced)
        entries = view.entries([found.ids[i] for i in picked])
        self.timings["rank_ms"] = _ms(started)
        return self._result(found, picked, scores, entries, matches)

    def _keyword(self, view: Snapshot, found: Candidates) -> ranking.Floats | None:
        """bm25 scores, or None when the FTS5 index cannot be read (the signal is dropped)."""
        try:
            return view.bm25(self.query, found.rowid_positions())
        except sqlite3.Error as exc:
            self.notes.append(f"keyword search unavailable ({exc}); ranked without it")
            return None

    def _vector(
        self,
        view: Snapshot,
        embedding: concurrent.futures.Future[Vector] | None,
        found: Candidates,
    ) -> tuple[ranking.Floats | None, int]:
        if embedding is None:
            return None, 0
        started = time.perf_counter()
        wait = min(self.request.deadline - time.monotonic(), self.request.embedding_budget)
        try:
            query_vector = embedding.result(timeout=max(wait, 0.0))
        except concurrent.futures.TimeoutError:
            self.notes.append("query embedding was late; ranked without it")
            return None, 0
        except Exception as exc:  # noqa: BLE001 - any provider failure drops the signal only
            self.notes.append(f"query embedding failed ({exc}); ranked without it")
            return None, 0
        finally:
            self.timings["embed_wait_ms"] = _ms(started)
        scores, matches = view.cosines(self.space, query_vector, found.positions())
        return (scores if matches else None), matches

    def _score(
        self, found: Candidates, vector: ranking.Floats | None, keyword: ranking.Floats | None
    ) -> ranking.Scores:
        config = self.request.config
        weights = ranking.Weights(
            config.memory_vector_weight,
            config.memory_keyword_weight,
            config.memory_prominence_weight,
        )
        days = ranking.days_since(found.updated_at, datetime.now(UTC))
        return ranking.score(
            vector, keyword, found.observation_count, found.confidence, days,
            found.recall_count, weights,
        )  # fmt: skip

    def _result(
        self,
        found: Candidates,
        picked: list[int],
        scores: ranking.Scores,
        entries: list[Entry],
        matches: int,
    ) -> Injection:
        by_id = {e.id: e for e in entries}
        project = self.request.ws.project
        chosen = [
            Chosen(
                id=found.ids[i],
                name=by_id[found.ids[i]].name,
                category=found.categories[i],
                origin="local" if by_id[found.ids[i]].source_project == project else "global",
                score=float(scores.final[i]),
                components=components(scores, i),
            )  # fmt: skip
            for i in picked
        ]
        fts = int(np.count_nonzero(scores.keyword_raw))
        mode = "semantic" if matches else ("keyword" if fts else "prominence")
        result = Injection(
            text="", mode=mode, chosen=chosen, query=self.query, total=len(found.ids),
            vector_matches=matches, fts_matches=fts, model=self.space.model,
            timings=self.timings, notes=self.notes,
        )  # fmt: skip
        result.text = render_semantic([by_id[c.id] for c in chosen], result)
        return result


def components(scores: ranking.Scores, i: int) -> dict[str, float]:
    """Every component of candidate ``i``'s score, and the weights in force."""
    found = {n: round(float(getattr(scores, n)[i]), 6) for n in COMPONENTS}
    found.update({f"weight_{k}": round(v, 6) for k, v in scores.weights._asdict().items()})
    return found


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
