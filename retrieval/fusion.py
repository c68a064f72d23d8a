"""The default ranking: z-scored signals summed, then raised by the neighbours' scores.

Each signal is turned into z-scores over the candidates (its mean taken
away, divided by its standard deviation), so no signal's scale decides its
weight, and the weighted z-scores are summed:

    fused = wl·z(lexical) + wv·z(vector) + wp·z(prominence)

lexical is BM25 over stemmed, identifier-split terms (the packed lexical
index), vector the cosine of the query with the entry's vector, prominence
D3's mean of observations, confidence, recency and recalls (``ranking``).
A signal that is missing or constant has z-scores of 0.  Then every
candidate is raised by the mean fused score of its nearest neighbours among
the candidates (lists kept by the projection), when that mean is above the
average (0): neighbours that score well pull an entry up, neighbours that
score badly never push it down (in a small view, where everyone is
everyone's neighbour, the mean would otherwise cancel the scores out):

    final = fused + wn · max(0, mean(fused[neighbours])) + wu · usefulness

where usefulness (``plain.usefulness``) is 0 for every lesson no session was judged
on, and the term is left out whole when none was: without a history of use the
ranking is exactly what it was.

Entries whose final scores tie are ordered by prominence, then by
candidate (id) order (``ranking.select``'s ``then``): prominence has no
weight by default, since it does not help find what is relevant, but it
orders what the signals cannot tell apart (a start without a query, the
entries nothing matched).  The weights' defaults (lexical 1, vector 1,
prominence 0, neighbours 1) were chosen across the retrieval benchmark's
blind label sets by leaving one set out (README).

The means, deviations and neighbour scores are taken over the *reference*
candidates only (all of them by default): the categories the hook ranks.
A search that also shows other categories (facts) scores them against the
same statistics, so an entry's score for a text never depends on what else
the caller asked to see.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from memlog.retrieval.plain import Weights as FusionWeights
from memlog.retrieval.plain import weights_of

__all__ = ["Fused", "FusionWeights", "fuse", "neighbour_means", "weights_of", "zscores"]

Floats = npt.NDArray[np.float64]
Positions = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]


class Fused(NamedTuple):
    """Every signal of every candidate, raw and z-scored, and the weights in force."""

    lexical_raw: Floats
    lexical: Floats
    vector_raw: Floats
    vector: Floats
    prominence_raw: Floats
    prominence: Floats
    fused: Floats
    neighbours: Floats
    final: Floats
    weights: FusionWeights
    #: each candidate's usefulness (``plain.usefulness``; zeros without a history)
    usefulness: Floats | None = None


def _spread(values: Floats) -> tuple[float, float]:
    """``plain.spread`` with the squares taken by numpy: the same IEEE products, summed
    correctly rounded (``exact_sum``, as ``math.fsum``), so the same two numbers."""
    count = values.size
    mean = exact_sum(values) / count
    deviations = values - mean
    return mean, math.sqrt(exact_sum(deviations * deviations) / count)


#: mantissas are split in two halves so 2**26 sums of them stay exact in float64
_HALF = 26
#: values below 2**974 (2**26 of them sum below 2**1000) never overflow, in fsum or here
_LARGEST_POWER = 1000 - _HALF


def exact_sum(values: Floats) -> float:
    """The sum of ``values`` correctly rounded: ``math.fsum``'s very result, without a
    Python float per value.  Each value is an integer mantissa times a power of two;
    the mantissas' halves are summed per power (exactly: each sum stays below 2**53),
    the sums become one Python integer, and its division by a power of two rounds
    once, correctly.  ``fsum`` itself for what it alone defines: values that are not
    finite or so large that it may overflow, a sum of 0 (its sign), too many values."""
    if not values.size or values.size >= 1 << _HALF or not np.isfinite(values).all():
        return math.fsum(values.tolist())
    mantissas, powers = np.frexp(values)
    if powers.max() > _LARGEST_POWER:
        return math.fsum(values.tolist())
    whole = mantissas * float(1 << 53)  # an integer of 53 bits, exactly
    upper = np.floor(whole * (1.0 / (1 << _HALF)))  # its top half, exactly
    low = powers.min()
    bins = (powers - low).astype(np.intp)
    high = np.bincount(bins, weights=upper)
    rest = np.bincount(bins, weights=whole - upper * float(1 << _HALF))
    total = 0
    for shift in np.flatnonzero((high != 0) | (rest != 0)).tolist():
        total += ((int(high[shift]) << _HALF) + int(rest[shift])) << shift
    if total == 0:
        return math.fsum(values.tolist())
    scale = int(low) - 53
    return float(total << scale) if scale >= 0 else total / (1 << -scale)


def zscores(raw: Floats | None, size: int, reference: Mask | None = None) -> Floats:
    """``(raw − mean) / std``, the mean and deviation of the ``reference`` candidates (all
    by default); zeros when the signal is missing or constant."""
    if raw is None or raw.size == 0:
        return np.zeros(size, dtype=np.float64)
    among = raw if reference is None else raw[reference]
    if among.size == 0:
        return np.zeros(size, dtype=np.float64)
    mean, deviation = _spread(among)  # correctly rounded, as ``plain`` has them
    if deviation <= 1e-12:
        return np.zeros(size, dtype=np.float64)
    return (raw - mean) / deviation


def neighbour_means(
    scores: Floats, neighbours: Positions | None, reference: Mask | None = None
) -> Floats:
    """For each candidate, the mean score of its neighbours among the (reference)
    candidates (−1: none), or 0 when that mean is negative."""
    if neighbours is None or neighbours.size == 0:
        return np.zeros_like(scores)
    size = len(scores)
    # one place past the candidates stands for "none": score 0, never counted
    valued = np.zeros(size + 1, dtype=np.float64)
    counted = np.zeros(size + 1, dtype=bool)
    valued[:size] = scores if reference is None else np.where(reference, scores, 0.0)
    counted[:size] = True if reference is None else reference
    places = np.where(neighbours >= 0, neighbours, size).T  # slot by slot, each contiguous
    taken, present = valued[places], counted[places]
    counts = present.sum(axis=0)
    total = taken[0].copy()
    for slot in range(1, len(taken)):  # slot by slot, the order ``plain`` adds in
        total += taken[slot]
    means = np.where(counts > 0, total / np.maximum(counts, 1), 0.0)
    return np.maximum(means, 0.0)


def fuse(
    lexical_raw: Floats | None,
    vector_raw: Floats | None,
    prominence_raw: Floats,
    neighbours: Positions | None,
    weights: FusionWeights,
    reference: Mask | None = None,
    useful: Floats | None = None,
) -> Fused:
    """Score every candidate; ``None`` for a signal that was not available; statistics of
    the ``reference`` candidates (all by default); ``useful``: each one's usefulness
    (``plain.usefulness``), added with its weight last."""
    size = prominence_raw.size
    zeros = np.zeros(size, dtype=np.float64)
    lexical = zscores(lexical_raw, size, reference)
    vector = zscores(vector_raw, size, reference)
    prominence = zscores(prominence_raw, size, reference)
    fused = weights.lexical * lexical + weights.vector * vector + weights.prominence * prominence
    around = neighbour_means(fused, neighbours, reference)
    final = fused + weights.neighbours * around
    if useful is not None and weights.usefulness > 0:
        final = final + weights.usefulness * useful
    return Fused(
        lexical_raw if lexical_raw is not None else zeros, lexical,
        vector_raw if vector_raw is not None else zeros, vector,
        prominence_raw, prominence, fused, around, final, weights,
        useful if useful is not None else zeros,
    )  # fmt: skip
