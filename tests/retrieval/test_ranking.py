"""Hybrid ranking and category-balanced selection (semantic memory spec D3, AC 1b, 9a, 12).

Expected scores are worked out by hand in each test from the formula:
``final = wv·vector/max + wk·keyword/max + wp·prominence`` where prominence
is the mean of observations/max, confidence/3, ``1/(1+days/30)`` and
``min(recalls/10, 1)``.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from memlog.eventlog.vectors import q8_size, quantise_rows
from memlog.home import Home
from memlog.projections.sqlite_view import packed, ranks, reading, store, vectors
from memlog.retrieval import ranking
from memlog.vocabulary import Space

W = ranking.Weights(0.5, 0.2, 0.3)


def floats(*values: float) -> np.ndarray:
    return np.array(values, dtype=np.float64)


# Four candidates used by the arithmetic tests below.
#            c0      c1        c2     c3
VECTOR = floats(0.8, 0.4, -0.2, 0.0)  # / 0.8  -> 1, .5, 0 (clipped), 0
KEYWORD = floats(0.0, 3.0, 1.5, 6.0)  # / 6    -> 0, .5, .25, 1
OBS = floats(4, 2, 1, 1)  # / 4  -> 1, .5, .25, .25
CONF = ["high", "medium", "low", "medium"]  # /3 -> 1, 2/3, 1/3, 2/3
DAYS = floats(0, 30, 90, 60)  # 1/(1+d/30) -> 1, 1/2, 1/4, 1/3
RECALLS = floats(0, 5, 10, 20)  # min(n/10, 1) -> 0, .5, 1, 1

# prominence = mean of the four parts
PROMINENCE = [
    (1 + 1 + 1 + 0) / 4,  # 0.75
    (0.5 + 2 / 3 + 0.5 + 0.5) / 4,  # 0.541666…
    (0.25 + 1 / 3 + 0.25 + 1) / 4,  # 0.458333…
    (0.25 + 2 / 3 + 1 / 3 + 1) / 4,  # 0.5625
]


def run(vector: np.ndarray | None, keyword: np.ndarray | None, weights: ranking.Weights = W):
    return ranking.score(vector, keyword, OBS, CONF, DAYS, RECALLS, weights)


# -- score ---------------------------------------------------------------------------------


def test_all_signals_present_hand_computed() -> None:
    scores = run(VECTOR, KEYWORD)
    assert scores.weights == pytest.approx((0.5, 0.2, 0.3))
    assert scores.vector == pytest.approx([1.0, 0.5, 0.0, 0.0])
    assert scores.keyword == pytest.approx([0.0, 0.5, 0.25, 1.0])
    assert scores.observations == pytest.approx([1.0, 0.5, 0.25, 0.25])
    assert scores.confidence == pytest.approx([1.0, 2 / 3, 1 / 3, 2 / 3])
    assert scores.recency == pytest.approx([1.0, 0.5, 0.25, 1 / 3])
    assert scores.recall == pytest.approx([0.0, 0.5, 1.0, 1.0])
    assert scores.prominence == pytest.approx(PROMINENCE)
    # c0: .5·1 + .2·0 + .3·.75 = .725
    # c1: .5·.5 + .2·.5 + .3·.541667 = .5125
    # c2: .5·0 + .2·.25 + .3·.458333 = .1875
    # c3: .5·0 + .2·1 + .3·.5625 = .36875
    assert scores.final == pytest.approx([0.725, 0.5125, 0.1875, 0.36875])
    # raw values are kept as given, for --explain
    assert scores.vector_raw == pytest.approx(VECTOR)
    assert scores.keyword_raw == pytest.approx(KEYWORD)


def test_missing_vector_signal_redistributes_its_weight() -> None:
    scores = run(None, KEYWORD)
    # keyword .2/.5 = .4, prominence .3/.5 = .6
    assert scores.weights == pytest.approx((0.0, 0.4, 0.6))
    expected = [0.4 * k + 0.6 * p for k, p in zip([0, 0.5, 0.25, 1], PROMINENCE, strict=True)]
    assert expected == pytest.approx([0.45, 0.525, 0.375, 0.7375])
    assert scores.final == pytest.approx(expected)
    assert scores.vector == pytest.approx([0, 0, 0, 0])


def test_all_zero_keyword_signal_counts_as_missing() -> None:
    scores = run(VECTOR, floats(0, 0, 0, 0))
    # vector .5/.8 = .625, prominence .3/.8 = .375
    assert scores.weights == pytest.approx((0.625, 0.0, 0.375))
    assert scores.final == pytest.approx(
        [0.625 * v + 0.375 * p for v, p in zip([1, 0.5, 0, 0], PROMINENCE, strict=True)]
    )


def test_negative_only_vector_signal_counts_as_missing() -> None:
    scores = run(floats(-0.1, -0.5, -0.2, -0.9), KEYWORD)
    assert scores.weights == pytest.approx((0.0, 0.4, 0.6))


def test_no_query_means_prominence_only() -> None:
    scores = run(None, None)
    assert scores.weights == (0.0, 0.0, 1.0)
    assert scores.final == pytest.approx(PROMINENCE)
    # prominence only: c0 (.75) > c3 (.5625) > c1 (.5417) > c2 (.4583)
    assert ranking.select(["patterns"] * 4, scores.final, -1, balanced=False) == [0, 3, 1, 2]


def test_ties_are_broken_by_then_then_by_candidate_order() -> None:
    final = np.array([1.0, 2.0, 1.0, 1.0, 2.0])
    then = np.array([0.1, 0.0, 0.9, 0.1, 0.5])
    assert ranking.select(["patterns"] * 5, final, -1, balanced=False) == [1, 4, 0, 2, 3]
    assert ranking.select(["patterns"] * 5, final, -1, False, then=then) == [4, 1, 2, 0, 3]


def test_zero_weights_everywhere_fall_back_to_prominence() -> None:
    scores = run(VECTOR, KEYWORD, ranking.Weights(0.0, 0.0, 0.0))
    assert scores.weights == (0.0, 0.0, 1.0)
    assert scores.final == pytest.approx(PROMINENCE)


def test_identical_signal_values_normalise_to_one() -> None:
    scores = run(floats(0.3, 0.3, 0.3, 0.3), None)
    assert scores.vector == pytest.approx([1.0, 1.0, 1.0, 1.0])
    # vector .5/.8, prominence .3/.8; the vector signal adds the same .625 to all
    assert scores.final == pytest.approx([0.625 + 0.375 * p for p in PROMINENCE])


def test_custom_weights_are_normalised_to_sum_one() -> None:
    scores = run(VECTOR, KEYWORD, ranking.Weights(1.0, 1.0, 2.0))
    assert scores.weights == pytest.approx((0.25, 0.25, 0.5))
    # c0: .25·1 + .25·0 + .5·.75 = .625
    assert scores.final[0] == pytest.approx(0.625)


def test_unknown_confidence_counts_as_medium_and_zero_counts_are_safe() -> None:
    parts = ranking.prominence_parts(floats(0, 0), ["bogus", "low"], floats(0, 0), floats(0, 0))
    assert parts[0] == pytest.approx([0, 0])
    assert parts[1] == pytest.approx([2 / 3, 1 / 3])


def test_empty_candidate_set() -> None:
    empty = np.zeros(0)
    scores = ranking.score(empty, empty, empty, [], empty, empty, W)
    assert scores.final.size == 0
    assert ranking.select([], scores.final, 20) == []


# -- select --------------------------------------------------------------------------------

AP, H, P, F = "anti-patterns", "heuristics", "patterns", "facts"


def test_limit_zero_selects_nothing() -> None:
    assert ranking.select([AP, H], floats(1, 2), 0) == []
    assert ranking.select([AP, H], floats(1, 2), 0, balanced=False) == []


def test_limit_minus_one_selects_all_grouped_by_category() -> None:
    cats = [P, AP, H, AP, P]
    final = floats(0.9, 0.1, 0.5, 0.7, 0.3)
    assert ranking.select(cats, final, -1) == [3, 1, 2, 0, 4]
    assert ranking.select(cats, final, -1, balanced=False) == [0, 3, 2, 4, 1]


def test_limit_larger_than_candidates_selects_all() -> None:
    assert sorted(ranking.select([AP, H, P], floats(1, 2, 3), 50)) == [0, 1, 2]


def balanced_case() -> tuple[list[str], np.ndarray]:
    # ten strong anti-patterns, three weak heuristics, three weak patterns
    cats = [AP] * 10 + [H] * 3 + [P] * 3
    final = np.concatenate([np.linspace(0.9, 0.8, 10), floats(0.3, 0.2, 0.1, 0.3, 0.2, 0.1)])
    return cats, final


def test_min_three_per_non_empty_category_when_limit_at_least_nine() -> None:
    cats, final = balanced_case()
    chosen = ranking.select(cats, final, 9)
    assert [cats[i] for i in chosen] == [AP] * 3 + [H] * 3 + [P] * 3
    assert chosen[:3] == [0, 1, 2]  # the best of each category
    chosen = ranking.select(cats, final, 10)
    assert [cats[i] for i in chosen].count(AP) == 4


def test_below_nine_selection_is_by_score_alone() -> None:
    cats, final = balanced_case()
    assert ranking.select(cats, final, 8) == list(range(8))


def test_categories_with_fewer_than_three_give_what_they_have() -> None:
    cats = [AP] * 12 + [H]
    final = np.concatenate([np.linspace(1.0, 0.5, 12), floats(0.01)])
    chosen = ranking.select(cats, final, 9)
    assert 12 in chosen and len(chosen) == 9
    assert [cats[i] for i in chosen].count(AP) == 8


def test_remaining_slots_go_by_score_not_category_priority() -> None:
    # the three anti-patterns are weak; the fourth-best heuristic outranks them
    cats = [AP] * 5 + [H] * 6 + [P] * 3
    final = floats(0.20, 0.19, 0.18, 0.17, 0.16, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.25, 0.22)
    chosen = ranking.select(cats, final, 11)
    picked = [cats[i] for i in chosen]
    assert picked.count(AP) == 3 and picked.count(P) == 3
    assert picked.count(H) == 5
    assert chosen == [0, 1, 2, 5, 6, 7, 8, 9, 11, 12, 13]


def test_four_categories_below_twelve_fall_back_to_score_order() -> None:
    # three per category would need 12 slots: with limit 10 none is guaranteed
    cats = [AP] * 10 + [H, P, F]
    final = np.concatenate([np.linspace(0.9, 0.8, 10), floats(0.1, 0.1, 0.1)])
    assert ranking.select(cats, final, 10) == list(range(10))
    chosen = ranking.select(cats, final, 12)
    assert {cats[i] for i in chosen} == {AP, H, P, F}


def test_ties_break_by_candidate_order_deterministically() -> None:
    cats = [AP, H, AP, H, AP, H]
    final = floats(0.5, 0.5, 0.5, 0.5, 0.5, 0.5)
    assert ranking.select(cats, final, 3, balanced=False) == [0, 1, 2]
    assert ranking.select(cats, final, 4) == [0, 2, 1, 3]
    for _ in range(3):
        assert ranking.select(cats, final, 4) == [0, 2, 1, 3]


# -- AC 1b: ranking isolated from embedding quality --------------------------------------------


def unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=-1, keepdims=True)


def vectors_at(query: np.ndarray, cosines: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Unit vectors whose cosine with the unit ``query`` is exactly ``cosines``."""
    noise = rng.standard_normal((cosines.size, query.size))
    noise -= np.outer(noise @ query, query)  # orthogonal to the query
    noise = unit(noise)
    return cosines[:, None] * query + np.sqrt(1 - cosines[:, None] ** 2) * noise


@pytest.mark.ac("024:1b")
def test_ac1b_relevant_entries_fill_the_top_25() -> None:
    rng = np.random.default_rng(7)
    dims = 768
    query = unit(rng.standard_normal(dims))
    cosines = np.concatenate([rng.uniform(0.81, 0.99, 20), rng.uniform(-0.3, 0.29, 30)])
    matrix = vectors_at(query, cosines, rng)
    assert np.all(matrix[:20] @ query > 0.8) and np.all(matrix[20:] @ query < 0.3)
    cats = [[AP, H, P][i % 3] for i in range(50)]
    observations = rng.integers(1, 4, 50).astype(np.float64)  # similar counts
    confidence = list(rng.choice(["high", "medium", "low"], 50))
    days = rng.uniform(0, 120, 50)
    recalls = rng.integers(0, 12, 50).astype(np.float64)
    # the irrelevant ones even get the keyword signal, to make it harder
    keyword = np.concatenate([np.zeros(20), rng.uniform(0, 1, 30)])
    scores = ranking.score(matrix @ query, keyword, observations, confidence, days, recalls, W)
    chosen = ranking.select(cats, scores.final, 25)
    assert len(chosen) == 25
    assert sum(1 for i in chosen if i < 20) >= 18


# -- AC 9a: the local computation at 10k × 768 --------------------------------------------------


def packed_view(
    folder: Path, ids: list[str], matrix: np.ndarray, space: Space
) -> sqlite3.Connection:
    """A view holding only the packed files ``vector_scores`` reads: every entry live with
    its vector (``q8``), one record per slot."""
    ranked = b"".join(ranks.RECORD.pack(i.encode(), 0.0, 1, 0, 0, 2, ranks.LIVE | ranks.VECTOR)
                      for i in ids)  # fmt: skip
    folder = folder / "index"
    packed.write(folder, "1.rnk", packed.header(ranks.MAGIC, ranks.RECORD.size) + ranked)
    size = q8_size(space.dimensions)
    rows = b"".join(quantise_rows(matrix))
    packed.write(folder, "1.vec", packed.header(vectors.MAGIC, size, space.dimensions) + rows)
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE packed_sets (kind TEXT PRIMARY KEY, file TEXT, count INTEGER)")
    db.executemany("INSERT INTO packed_sets VALUES (?, ?, ?)",
                   [("rnk", "1.rnk", len(ids)), ("vec", "1.vec", len(ids))])  # fmt: skip
    db.execute("CREATE TABLE _metadata (key TEXT PRIMARY KEY, value TEXT)")
    store.set_meta(db, {"embedding_provider": space.provider, "embedding_model": space.model,
                        "embedding_dimensions": str(space.dimensions)})  # fmt: skip
    return db


@pytest.mark.ac("024:9a")
def test_ac9a_vector_scores_scoring_and_selection_at_10k_by_768(tmp_path: Path) -> None:
    n, dims = 10_000, 768
    rng = np.random.default_rng(9)
    matrix = unit(rng.standard_normal((n, dims)).astype(np.float32)).astype(np.float32)
    planted = 4321
    query = matrix[planted].copy()
    ids = [f"{i:016x}" for i in range(n)]
    space = Space("gemini", "gemini-embedding-001", dims)
    db = packed_view(tmp_path, ids, matrix, space)
    slots = np.arange(n, dtype=np.int64)

    cosines, matches = reading.vector_scores(db, Home(tmp_path), space, query, slots)
    assert matches == n
    # q8 keeps each value within half a step of its row's scale (~1/254 of its peak)
    np.testing.assert_allclose(cosines, matrix.astype(np.float64) @ query, atol=2e-3)
    assert cosines[planted] == pytest.approx(1.0, abs=2e-3)
    assert int(np.argmax(cosines)) == planted

    cats = [[AP, H, P, F][i % 4] for i in range(n)]
    observations = rng.integers(1, 10, n).astype(np.float64)
    confidence = list(rng.choice(["high", "medium", "low"], n))
    days = rng.uniform(0, 365, n)
    recalls = rng.integers(0, 20, n).astype(np.float64)
    scores = ranking.score(cosines, None, observations, confidence, days, recalls, W)
    assert scores.weights == pytest.approx((0.5 / 0.8, 0.0, 0.3 / 0.8))
    assert np.all((scores.final >= 0) & (scores.final <= 1))
    chosen = ranking.select(cats, scores.final, 20)
    assert len(chosen) == 20 and len(set(chosen)) == 20
    assert planted in chosen
    picked = [cats[i] for i in chosen]
    assert all(picked.count(c) >= 3 for c in (AP, H, P, F))
    # every category's picks are its best-scored candidates
    for category in (AP, H, P, F):
        members = [i for i in chosen if cats[i] == category]
        best = sorted((i for i in range(n) if cats[i] == category), key=lambda i: -scores.final[i])
        assert members == best[: len(members)]
