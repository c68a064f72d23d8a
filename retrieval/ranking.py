"""Hybrid ranking (semantic memory spec D3): pure arithmetic over numpy arrays.

``final = wv·vector + wk·keyword + wp·prominence`` where vector and keyword
scores are divided by their maximum over the candidates, and prominence is
the mean of four parts in [0, 1]: observation count over the maximum count,
confidence (high 3, medium 2, low 1, over 3), recency ``1/(1+days/30)`` on
``updated_at`` (an imported entry's ``Last observed``; the view counts the
days), and recall ``min(n/10, 1)``.  A signal that is missing or whose
maximum is 0 gives its weight to the others in proportion.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from memlog.projections.sqlite_view.reading import Coded
from memlog.vocabulary import (
    BALANCE_FROM,
    CATEGORIES,
    CONFIDENCE_RANK,
    MIN_PER_CATEGORY,
    TOP_CONFIDENCE,
)

Floats = npt.NDArray[np.float64]
CATEGORY_ORDER = CATEGORIES


class Weights(NamedTuple):
    vector: float
    keyword: float
    prominence: float


class Scores(NamedTuple):
    """Every component of every candidate's score, and the weights in force."""

    vector_raw: Floats
    vector: Floats
    keyword_raw: Floats
    keyword: Floats
    observations: Floats
    confidence: Floats
    recency: Floats
    recall: Floats
    prominence: Floats
    final: Floats
    weights: Weights


def normalise(
    raw: Floats | None, reference: Sequence[bool] | None = None
) -> tuple[Floats | None, bool]:
    """``raw`` divided by its maximum over the ``reference`` candidates (all by default),
    clipped to [0, 1]; unavailable when that maximum is ≤ 0."""
    if raw is None or raw.size == 0:
        return None, False
    among = raw if reference is None else raw[np.asarray(reference, dtype=bool)]
    top = float(among.max()) if among.size else 0.0
    if top <= 0.0:
        return None, False
    return np.clip(raw / top, 0.0, 1.0), True


def effective_weights(weights: Weights, vector: bool, keyword: bool) -> Weights:
    """Weights of missing signals given to the others in proportion (prominence alone if none)."""
    kept = Weights(
        weights.vector if vector else 0.0, weights.keyword if keyword else 0.0, weights.prominence
    )
    total = sum(kept)
    if total <= 0.0:
        return Weights(0.0, 0.0, 1.0)
    return Weights(*(w / total for w in kept))


def prominence_parts(
    observations: Floats,
    confidence: Sequence[str],
    days: Floats,
    recalls: Floats,
    reference: Sequence[bool] | None = None,
) -> tuple[Floats, Floats, Floats, Floats]:
    """Observations over the most of the ``reference`` candidates (all by default),
    confidence, recency and recall, each in [0, 1]."""
    among = observations if reference is None else observations[np.asarray(reference, bool)]
    top = float(among.max()) if among.size else 0.0
    obs = observations / top if top > 0 else np.zeros_like(observations)
    conf = _confidence_ranks(confidence) / TOP_CONFIDENCE
    recency = 1.0 / (1.0 + days / 30.0)
    recall = np.minimum(recalls / 10.0, 1.0)
    return obs, conf, recency, recall


def _confidence_ranks(confidence: Sequence[str]) -> Floats:
    """Each level's rank (anything but high or low ranks as medium)."""
    ranks = [float(CONFIDENCE_RANK[c]) for c in ("high", "low", "medium")]
    if isinstance(confidence, Coded):  # the packed records' codes, read whole
        table = [float(CONFIDENCE_RANK.get(name, CONFIDENCE_RANK["medium"])) for name in
                 confidence.names] + [ranks[2]]  # fmt: skip
        codes = np.minimum(confidence.codes, len(confidence.names))
        return np.asarray(table, dtype=np.float64)[codes]
    levels = np.asarray(confidence, dtype=object)
    return np.select([levels == "high", levels == "low"], ranks[:2], ranks[2])


def score(
    vector_raw: Floats | None,
    keyword_raw: Floats | None,
    observations: Floats,
    confidence: Sequence[str],
    days: Floats,
    recalls: Floats,
    weights: Weights,
    reference: Sequence[bool] | None = None,
) -> Scores:
    """Score every candidate; ``None`` for a retrieval signal that was not available;
    the maxima of the ``reference`` candidates (all by default)."""
    size = observations.size
    zeros = np.zeros(size, dtype=np.float64)
    vector, has_vector = normalise(vector_raw, reference)
    keyword, has_keyword = normalise(keyword_raw, reference)
    used = effective_weights(weights, has_vector, has_keyword)
    parts = prominence_parts(observations, confidence, days, recalls, reference)
    prominence = (parts[0] + parts[1] + parts[2] + parts[3]) / 4.0
    vector_n = vector if vector is not None else zeros
    keyword_n = keyword if keyword is not None else zeros
    final = used.vector * vector_n + used.keyword * keyword_n + used.prominence * prominence
    return Scores(
        vector_raw if vector_raw is not None else zeros, vector_n,
        keyword_raw if keyword_raw is not None else zeros, keyword_n,
        *parts, prominence, final, used,
    )  # fmt: skip


def select(
    categories: Sequence[str],
    final: Floats,
    limit: int,
    balanced: bool = True,
    shown: Sequence[bool] | None = None,
    then: Floats | None = None,
) -> list[int]:
    """Indices chosen: min 3 per non-empty category when the limit allows, then by score.

    Ties break by ``then`` (higher first: the fused recipe's prominence, which orders what
    relevance cannot tell apart), then by candidate order (ids), so selection is
    deterministic.
    Returned grouped by category (anti-patterns, heuristics, patterns,
    facts), best first within each; unbalanced, simply best first.  Only
    candidates ``shown`` are chosen (all by default).
    """
    if limit == 0:
        return []
    allowed = None if shown is None else np.asarray(shown, dtype=bool)
    codes = _category_codes(categories) if balanced else None
    within = _contenders(final, codes, limit, allowed)
    if within is None:
        order = (
            np.argsort(-final, kind="stable") if then is None else np.lexsort((-then, -final))
        )  # both stable: equal keys keep candidate order
        if allowed is not None:
            order = order[allowed[order]]
    else:  # the same order, of the only candidates it can choose (ascending: as stable)
        ties = None if then is None else -then[within]
        ranked = (
            np.argsort(-final[within], kind="stable")
            if ties is None
            else np.lexsort((ties, -final[within]))
        )
        order = within[ranked]
    if not balanced or codes is None:
        return [int(i) for i in (order if limit < 0 else order[:limit])]
    whole = within is None and (limit < 0 or limit >= len(order))
    chosen = order if whole else _balanced(codes, order, limit)
    rank = np.empty(len(final), dtype=np.int64)
    rank[order] = np.arange(len(order))
    grouped = chosen[np.lexsort((rank[chosen], codes[chosen]))]
    return [int(i) for i in grouped]


def _contenders(
    final: Floats, codes: npt.NDArray[np.int64] | None, limit: int,
    allowed: npt.NDArray[np.bool_] | None,
) -> npt.NDArray[np.intp] | None:  # fmt: skip
    """The candidates ``select`` can choose, in candidate order: of each category (of all,
    unbalanced) those whose score reaches its ``limit``-th best, which holds every
    pick (a category's minimum is among its best, and an entry chosen after them has
    fewer than ``limit`` of its category before it).  None: every allowed candidate
    (no limit, no more candidates than it, or a score that does not compare)."""
    total = len(final) if allowed is None else int(allowed.sum())
    if limit < 0 or limit >= total or not np.isfinite(final).all():
        return None
    groups = [None] if codes is None else range(len(CATEGORY_ORDER) + 1)
    keep = np.zeros(len(final), dtype=bool)
    for code in groups:
        group = np.ones(len(final), dtype=bool) if code is None else codes == code
        if allowed is not None:
            group &= allowed
        values = final[group]
        if len(values) > limit:
            group &= final >= np.partition(values, len(values) - limit)[len(values) - limit]
        keep |= group
    return np.flatnonzero(keep)


def _category_codes(categories: Sequence[str]) -> npt.NDArray[np.int64]:
    """Each candidate's category as its place in CATEGORY_ORDER (unknown ones last)."""
    if isinstance(categories, Coded) and categories.names == CATEGORY_ORDER:
        return categories.codes.astype(np.int64)  # the packed records' codes: the same
    names = np.asarray(categories, dtype=object)
    codes = np.full(len(names), len(CATEGORY_ORDER), dtype=np.int64)
    for code, category in enumerate(CATEGORY_ORDER):
        codes[names == category] = code
    return codes


def _balanced(
    codes: npt.NDArray[np.int64], order: npt.NDArray[np.intp], limit: int
) -> npt.NDArray[np.intp]:
    # the categories that may be chosen (np.unique would import numpy.ma, ~40 ms)
    present = np.flatnonzero(np.bincount(codes[order]))
    picked = np.zeros(len(codes), dtype=bool)
    if limit >= BALANCE_FROM and limit >= MIN_PER_CATEGORY * len(present):
        for code in present:
            picked[order[codes[order] == code][:MIN_PER_CATEGORY]] = True
    rest = order[~picked[order]][: max(limit - int(picked.sum()), 0)]
    picked[rest] = True
    return order[picked[order]]
