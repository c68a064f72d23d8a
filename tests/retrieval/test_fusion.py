"""The fused ranking: its arithmetic by hand, and end to end on a small view."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from memlog.eventlog.events import content_hash
from memlog.retrieval.fusion import FusionWeights, exact_sum, fuse, neighbour_means, zscores
from memlog.retrieval.inject import build
from memlog.tests.retrieval.helpers import (
    HASHING,
    HASHING_D3,
    PARSER,
    entry,
    filler,
    make_request,
    seed,
)


def test_zscores_by_hand() -> None:
    # mean 2, population standard deviation sqrt(2/3)
    z = zscores(np.array([1.0, 2.0, 3.0]), 3)
    assert z.tolist() == pytest.approx([-math.sqrt(1.5), 0.0, math.sqrt(1.5)])
    assert zscores(np.array([4.0, 4.0]), 2).tolist() == [0.0, 0.0]  # constant: no signal
    assert zscores(None, 2).tolist() == [0.0, 0.0]  # missing: no signal


def test_neighbour_means_by_hand() -> None:
    scores = np.array([1.0, 2.0, 4.0, 8.0])
    neighbours = np.array([[1, 2], [0, -1], [-1, -1], [0, 1]])
    assert neighbour_means(scores, neighbours).tolist() == [3.0, 1.0, 0.0, 1.5]
    assert neighbour_means(scores, None).tolist() == [0.0] * 4
    # below-average neighbours never pull an entry down
    signed = np.array([1.0, -3.0, 1.0])
    assert neighbour_means(signed, np.array([[1, 2], [0, 2], [1, -1]])).tolist() == [0.0, 1.0, 0.0]


def test_two_entries_that_neighbour_each_other_keep_their_order() -> None:
    weights = FusionWeights(1.0, 0.25, 0.05, 1.0)
    got = fuse(np.array([2.0, 0.0]), None, np.array([0.5, 0.5]), np.array([[1], [0]]), weights)
    assert got.final[0] > got.final[1]


def test_fused_score_by_hand() -> None:
    lexical = np.array([3.0, 0.0, 0.0])  # z: [sqrt(2), -1/sqrt(2), -1/sqrt(2)]
    vector = np.array([0.5, 0.7, 0.3])  # z: [0, sqrt(1.5), -sqrt(1.5)]
    prominence = np.array([0.2, 0.2, 0.8])  # z: [-1/sqrt(2), -1/sqrt(2), sqrt(2)]
    neighbours = np.array([[1], [0], [-1]])
    weights = FusionWeights(lexical=1.0, vector=0.5, prominence=0.1, neighbours=0.5)
    got = fuse(lexical, vector, prominence, neighbours, weights)
    r2, r15 = math.sqrt(2), math.sqrt(1.5)
    fused = [r2 - 0.1 / r2, -1 / r2 + 0.5 * r15 - 0.1 / r2, -1 / r2 - 0.5 * r15 + 0.1 * r2]
    assert got.fused.tolist() == pytest.approx(fused)
    assert fused[1] < 0 < fused[0]  # so entry 0 is not raised by entry 1, but 1 is by 0
    assert got.neighbours.tolist() == pytest.approx([0.0, fused[0], 0.0])
    final = [fused[0], fused[1] + 0.5 * fused[0], fused[2]]
    assert got.final.tolist() == pytest.approx(final)
    assert got.lexical_raw is lexical and got.weights == weights


def test_missing_signals_weigh_nothing() -> None:
    prominence = np.array([0.1, 0.9])
    got = fuse(None, None, prominence, None, FusionWeights(1.0, 1.0, 0.05, 1.0))
    assert got.final.tolist() == pytest.approx([-0.05, 0.05])
    assert got.lexical_raw.tolist() == [0.0, 0.0] and got.vector.tolist() == [0.0, 0.0]


def test_default_ranking_is_fused_and_explains_every_signal(memlog_home: Path) -> None:
    seed(memlog_home, entry("Parser error handling", PARSER), filler(8, "patterns"))
    result = build(make_request(memlog_home, None, query="file parser error handling"))
    assert result.mode == "semantic" and result.notes == []
    first = result.chosen[0]
    assert first.id == content_hash(PARSER)
    signals = {
        "lexical_raw", "lexical", "vector_raw", "vector", "prominence_raw", "prominence",
        "observations", "confidence", "recency", "recall", "fused", "neighbours", "final",
        "usefulness", "weight_lexical", "weight_vector", "weight_prominence",
        "weight_neighbours", "weight_usefulness",
        "cosine", "coverage", "relevance",  # a search: how relevant on its own
    }  # fmt: skip
    assert set(first.components) == signals
    assert first.components["lexical_raw"] > 0 and first.components["weight_neighbours"] == 1.0
    parts = first.components
    expected = parts["fused"] + parts["weight_neighbours"] * parts["neighbours"]
    assert parts["final"] == pytest.approx(expected, abs=1e-5)
    assert [c.score for c in result.chosen] == sorted(
        (c.score for c in result.chosen), reverse=True
    )


def test_d3_and_fused_read_the_same_view(memlog_home: Path) -> None:
    seed(memlog_home, entry("Parser error handling", PARSER), filler(8, "patterns"))
    query = "file parser error handling"
    d3 = build(make_request(memlog_home, None, HASHING_D3, query=query))
    fused = build(make_request(memlog_home, None, HASHING, query=query))
    assert {"keyword", "weight_keyword"} <= set(d3.chosen[0].components)
    assert "lexical" in fused.chosen[0].components
    assert d3.chosen[0].id == fused.chosen[0].id == content_hash(PARSER)


def test_without_the_lexical_index_fts5_stands_in(memlog_home: Path) -> None:
    seed(memlog_home, entry("Parser error handling", PARSER), filler(6, "patterns"))
    build(make_request(memlog_home, None, query="parser"))  # the views exist now
    for path in (memlog_home / "index").glob("*.lex"):
        path.unlink()
    result = build(make_request(memlog_home, None, query="parser error handling", catch_up=False))
    assert any("lexical index unavailable" in n for n in result.notes)
    assert result.chosen[0].id == content_hash(PARSER)


@given(st.lists(st.floats(allow_nan=False, allow_infinity=False, width=64), max_size=80))
@example([8.988465674311579e307, 8.98846567431158e307, -1.0])  # fsum overflows on the way
def test_exact_sum_is_fsum(values: list[float]) -> None:
    """The z-scores' sums are ``math.fsum``'s, sign of a zero included, whatever the
    magnitudes (an overflow raises as fsum does)."""
    try:
        expected = math.fsum(values)
    except OverflowError:
        with pytest.raises(OverflowError):
            exact_sum(np.asarray(values, dtype=np.float64))
        return
    found = exact_sum(np.asarray(values, dtype=np.float64))
    assert (found, math.copysign(1.0, found)) == (expected, math.copysign(1.0, expected))


def test_exact_sum_of_many_values() -> None:
    rng = np.random.default_rng(7)
    for values in (rng.normal(size=100_000), rng.normal(size=50_000) * 1e-300,
                   np.round(rng.normal(size=30_000), 2) ** 2):  # fmt: skip
        assert exact_sum(values) == math.fsum(values.tolist())
