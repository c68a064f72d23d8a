"""The fused recipe over Python lists, for a ranking that embeds no query.

``fusion`` and ``ranking`` score with numpy, whose import alone costs more
than a session start may spend when no vector is compared.  This module is
the same arithmetic, step for step in the same floating-point order, so it
gives the very same scores, bit for bit, and the same choice (the tests
hold both to that):

- recency from the days the view computes (``plain.DAYS``), for both;
- prominence parts summed left to right, as ``ranking.prominence_parts``;
- z-scores from ``spread``: the mean and standard deviation correctly
  rounded (``math.fsum``), which ``fusion.zscores`` uses too;
- neighbour means summed slot by slot, as ``fusion.neighbour_means``;
- ``select``: the stable order of ``ranking.select`` and its category balance;
- statistics over the reference candidates only, as ``fusion``'s.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, NamedTuple

from memlog.vocabulary import (
    BALANCE_FROM,
    CATEGORIES,
    CONFIDENCE_RANK,
    MIN_PER_CATEGORY,
    TOP_CONFIDENCE,
)

if TYPE_CHECKING:
    from memlog.config import Config
    from memlog.projections.sqlite_view.plain import History, Neighbours

_MICROSECOND = timedelta(microseconds=1)
_DAY_MICROS = 86_400e6


class Weights(NamedTuple):
    """The fused recipe's weights (``fusion.FusionWeights`` has the same fields)."""

    lexical: float
    vector: float
    prominence: float
    neighbours: float
    usefulness: float = 0.0


def weights_of(config: Config) -> Weights:
    """The fused recipe's weights in a configuration."""
    return Weights(
        config.memory_fusion_lexical_weight,
        config.memory_fusion_vector_weight,
        config.memory_fusion_prominence_weight,
        config.memory_neighbour_weight,
        config.memory_usefulness_weight,
    )


#: sessions' worth of the home's rate of use a lesson's own record is weighed against: a
#: lesson judged in five sessions counts half its own rate and half the home's
USEFULNESS_PRIOR = 5.0


def usefulness(history: History | None, size: int) -> list[float] | None:
    """Each candidate's usefulness: its rate of use (sessions that applied it over those
    judged) drawn toward the home's rate by ``USEFULNESS_PRIOR`` sessions, less the home's
    rate, over the spread of that rate (a Bernoulli's deviation): 0 for a lesson never
    judged, so a new lesson is neither helped nor hurt; about +1.7 for one always applied
    and −0.4 for one never applied, in a home that applies a fifth of what it is given.
    None when no candidate was ever judged: the ranking is then exactly as without it."""
    if history is None or not history.places:
        return None
    rate = (history.all_applied + 1.0) / (history.all_judged + 2.0)
    spread = math.sqrt(rate * (1.0 - rate))
    found = [0.0] * size
    for place, applied, judged in zip(history.places, history.applied, history.judged,
                                      strict=True):  # fmt: skip
        found[place] = (applied - rate * judged) / (judged + USEFULNESS_PRIOR) / spread
    return found


class Fused(NamedTuple):
    """Every signal of every candidate, as ``fusion.Fused``, in lists."""

    lexical_raw: list[float]
    lexical: list[float]
    vector_raw: list[float]
    vector: list[float]
    prominence_raw: list[float]
    prominence: list[float]
    fused: list[float]
    neighbours: list[float]
    final: list[float]
    weights: Weights
    #: each candidate's usefulness (``usefulness``; zeros without a history)
    usefulness: list[float] | None = None


def spread(values: Sequence[float]) -> tuple[float, float]:
    """Mean and (population) standard deviation, each correctly rounded."""
    count = len(values)
    mean = math.fsum(values) / count
    return mean, math.sqrt(math.fsum([(v - mean) * (v - mean) for v in values]) / count)


def prominence_parts(
    observations: Sequence[float], confidence: Sequence[str], days: Sequence[float],
    recalls: Sequence[float], reference: Sequence[bool] | None = None,
) -> tuple[list[float], list[float], list[float], list[float]]:  # fmt: skip
    top = max(_among(observations, reference), default=0.0)
    obs = [o / top for o in observations] if top > 0 else [0.0] * len(observations)
    ranks = {level: float(CONFIDENCE_RANK[level]) for level in ("high", "low")}
    medium = float(CONFIDENCE_RANK["medium"])
    conf = [ranks.get(c, medium) / TOP_CONFIDENCE for c in confidence]
    recency = [1.0 / (1.0 + d / 30.0) for d in days]
    recall = [min(r / 10.0, 1.0) for r in recalls]
    return obs, conf, recency, recall


def _among(values: Sequence[float], reference: Sequence[bool] | None) -> Sequence[float]:
    """The values of the reference candidates (all of them without a reference)."""
    if reference is None:
        return values
    return [v for v, kept in zip(values, reference, strict=True) if kept]


def prominence(parts: tuple[list[float], list[float], list[float], list[float]]) -> list[float]:
    return [(a + b + c + d) / 4.0 for a, b, c, d in zip(*parts, strict=True)]


def zscores(
    raw: Sequence[float] | None, size: int, reference: Sequence[bool] | None = None
) -> list[float]:
    """``(raw − mean) / std``, the mean and deviation of the ``reference`` candidates (all
    by default); zeros when the signal is missing or constant."""
    if raw is None or not raw:
        return [0.0] * size
    among = _among(raw, reference)
    if not among:
        return [0.0] * size
    mean, deviation = spread(among)
    if deviation <= 1e-12:
        return [0.0] * size
    return [(r - mean) / deviation for r in raw]


def neighbour_means(
    scores: list[float], neighbours: Neighbours | None, reference: Sequence[bool] | None = None
) -> list[float]:
    """For each candidate, the mean score of its neighbours among the (reference)
    candidates, or 0 when that mean is negative; summed slot by slot, as
    ``fusion.neighbour_means``."""
    if neighbours is None or not neighbours.k or not scores:
        return [0.0] * len(scores)
    k, lists, stride = neighbours.k, neighbours.lists, neighbours.stride
    counted = reference if reference is not None else [True] * len(scores)
    # each place's score; None for a place that is no (reference) candidate, and for −1
    placed = [scores[p] if p >= 0 and counted[p] else None for p in neighbours.where]
    placed.append(None)
    size = len(placed) - 1
    means = []
    for row in neighbours.rows:
        total, present = 0.0, 0
        for j in lists[row * stride : row * stride + k] if row >= 0 else ():
            score = placed[j] if j < size else None
            if score is not None:
                total += score
                present += 1
        mean = total / present if present else 0.0
        means.append(mean if mean > 0.0 else 0.0)
    return means


def fuse(
    lexical_raw: list[float] | None,
    prominence_raw: list[float],
    neighbours: Neighbours | None,
    weights: Weights,
    reference: Sequence[bool] | None = None,
    useful: list[float] | None = None,
) -> Fused:
    """Score every candidate without a vector signal (``None``: no lexical signal);
    statistics of the ``reference`` candidates (all by default); ``useful``: each one's
    usefulness (``usefulness``), added with its weight last."""
    size = len(prominence_raw)
    zeros = [0.0] * size
    lexical = zscores(lexical_raw, size, reference)
    prominent = zscores(prominence_raw, size, reference)
    wl, wv, wp = weights.lexical, weights.vector, weights.prominence
    fused = [wl * a + wv * 0.0 + wp * c for a, c in zip(lexical, prominent, strict=True)]
    around = neighbour_means(fused, neighbours, reference)
    wn, wu = weights.neighbours, weights.usefulness
    final = [f + wn * m for f, m in zip(fused, around, strict=True)]
    if useful is not None and wu > 0:
        final = [f + wu * u for f, u in zip(final, useful, strict=True)]
    return Fused(
        lexical_raw if lexical_raw is not None else zeros, lexical, zeros, zeros,
        prominence_raw, prominent, fused, around, final, weights,
        useful if useful is not None else zeros,
    )  # fmt: skip


def select(
    categories: Sequence[str],
    final: Sequence[float],
    limit: int,
    balanced: bool = True,
    shown: Sequence[bool] | None = None,
    then: Sequence[float] | None = None,
) -> list[int]:
    """Indices chosen, as ``ranking.select``: at least 3 per non-empty category when the
    limit allows, then by score; ties by ``then`` (higher first), then by candidate order;
    grouped by category; only candidates ``shown`` (all by default)."""
    if then is None:
        order = sorted(range(len(final)), key=final.__getitem__, reverse=True)  # stable
    else:
        order = sorted(range(len(final)), key=lambda i: (final[i], then[i]), reverse=True)
    if shown is not None:
        order = [i for i in order if shown[i]]
    if limit == 0:
        return []
    if not balanced:
        return order if limit < 0 else order[:limit]
    codes = [_CODES.get(c, len(CATEGORIES)) for c in categories]
    chosen = order if limit < 0 or limit >= len(order) else _balanced(codes, order, limit)
    rank = {index: place for place, index in enumerate(chosen)}
    return sorted(chosen, key=lambda i: (codes[i], rank[i]))


_CODES: dict[str, int] = {category: code for code, category in enumerate(CATEGORIES)}


def _balanced(codes: list[int], order: list[int], limit: int) -> list[int]:
    """The best ``MIN_PER_CATEGORY`` of each category present (when the limit allows),
    then the best of the rest up to ``limit``, in ``order``."""
    present = {codes[i] for i in order}  # the categories that may be chosen
    picked: set[int] = set()
    if limit >= BALANCE_FROM and limit >= MIN_PER_CATEGORY * len(present):
        taken = dict.fromkeys(present, 0)
        for i in order:
            if taken[codes[i]] < MIN_PER_CATEGORY:
                taken[codes[i]] += 1
                picked.add(i)
                if len(picked) == MIN_PER_CATEGORY * len(present):
                    break
    room = max(limit - len(picked), 0)
    for i in order:
        if room == 0:
            break
        if i not in picked:
            picked.add(i)
            room -= 1
    return [i for i in order if i in picked]
