"""The fused ranking without numpy, when no vector is compared.

A start that needs no query embedding (``memory_fusion_vector_weight: 0``,
or no vectors in the space in force) and finds the views current
is ranked here, by ``plain``'s arithmetic over lists: the same scores and
choice as ``semantic``'s numpy ranking, without numpy's import, which alone
costs more than the rest of such a start.  Anything else (D3, a query to
embed, views to catch up, no lexical index) is ``semantic``'s: ``run`` then
answers None before it has read a candidate.  ``inject.build`` has judged the
views' freshness by then: a request still asking for a catch-up is behind.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

from memlog.projections.sqlite_view.plain import View
from memlog.retrieval import outcome, plain
from memlog.retrieval.context import text_and_query
from memlog.retrieval.request import Injection, Request


def run(request: Request) -> Injection | None:
    """The injection by the fused recipe in plain Python, or None when ``semantic``
    must rank instead."""
    config = request.config
    if config.memory_ranking == "d3":
        return None
    timings: dict[str, float] = {}
    if request.catch_up:
        return None  # views to catch up first (``inject.build`` found them behind)
    weights = plain.weights_of(config)
    with View(request.home) as view:
        if weights.vector > 0 and view.has_vectors(request.ws.space):
            return None  # before the query is built: ``semantic`` builds it again
        text, query = text_and_query(request.ws.root, request.query, config.memory_ranking)
        started = time.perf_counter()
        found = view.columns(request.wanted_categories, datetime.now(UTC))
        timings["candidates_ms"] = _ms(started)
        started = time.perf_counter()
        lexical = view.lexical_list(query, found.ids) if query else None
        if query and lexical is None:
            return None  # no packed index: ``semantic`` ranks with FTS5
        timings["lexical_ms"] = _ms(started)
        started = time.perf_counter()
        reference = request.reference(found.categories)
        parts = plain.prominence_parts(
            found.observation_count, found.confidence, found.days, found.recall_count, reference
        )
        around = view.neighbour_lists(found.ids) if weights.neighbours > 0 else None
        useful = (
            plain.usefulness(view.history(found.ids), len(found.ids))
            if weights.usefulness > 0
            else None
        )
        scores = plain.fuse(lexical, plain.prominence(parts), around, weights, reference, useful)
        limit, balanced = request.effective_limit, request.categories is None
        shown = request.shown(found.categories, found.ids)
        picked = plain.select(
            found.categories, scores.final, limit, balanced, shown, scores.prominence_raw
        )
        ids = [found.ids[i] for i in picked]
        entries = view.entries(ids)
        timings["rank_ms"] = _ms(started)
        judged = None
        if request.query is not None:  # a search: how relevant each pick is on its own
            from memlog.retrieval.relevance import of_picked

            judged = of_picked(view, query, entries, ids, None)
    matches = sum(1 for score in scores.lexical_raw if score)
    ranked = outcome.Ranked(
        found.ids, found.categories, picked, scores, parts, matches, 0, shown, judged
    )  # fmt: skip
    return outcome.injection(request, ranked, entries, query, timings, [], text)


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
