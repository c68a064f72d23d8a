"""The plain ranking (no numpy) against the numpy one: the same arithmetic, bit for bit.

By hand and on random signals, each step of ``plain`` equals its numpy
twin in ``fusion`` and ``ranking`` exactly; on the 265 real knowledge-bank
entries and real feature contexts, ``light.run`` chooses the very entries
``SemanticRun`` chooses, with the same scores, components and text; and it
steps aside whenever numpy must rank (D3, a query vector, views behind).
"""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import msgspec
import numpy as np
import pytest

from memlog.api.capturing import import_files
from memlog.config import Config
from memlog.eventlog.events import Observed
from memlog.eventlog.log import EventLog
from memlog.home import Home
from memlog.projections.runner import catch_up
from memlog.projections.sqlite_view import index_files, ranks
from memlog.projections.sqlite_view.plain import Neighbours, View
from memlog.retrieval import fusion, light, plain, ranking
from memlog.retrieval.inject import build
from memlog.retrieval.request import Injection, Request
from memlog.retrieval.semantic import SemanticRun
from memlog.tests.retrieval.helpers import make_request
from memlog.tests.support import FIXTURES
from memlog.workspace import Workspace

BANK = FIXTURES / "knowledge-bank-08a38d02"
FEATURES = FIXTURES / "iflow-features-08a38d02"
#: hashing vectors give the view a neighbour graph; no vector weight: nothing to embed
PLAIN = Config(memory_embedding_provider="hashing", memory_fusion_vector_weight=0.0)
CATEGORIES = ("anti-patterns", "heuristics", "patterns", "facts")


# -- step by step, against numpy ---------------------------------------------------------------


def signals(seed: int, n: int) -> tuple[list[float], list[float], list[list[int]]]:
    """A sparse lexical signal with ties, a prominence with ties, neighbour lists with gaps."""
    rng = random.Random(seed)
    lexical = [rng.choice((0.0, 0.0, 0.0, 1.5, rng.uniform(0, 12))) for _ in range(n)]
    prominence = [rng.choice((0.25, 0.5, rng.random())) for _ in range(n)]
    around = [[rng.choice((-1, rng.randrange(n))) for _ in range(10)] for _ in range(n)]
    return lexical, prominence, around


@pytest.mark.parametrize("seed", range(6))
def test_fuse_equals_numpy_bit_for_bit(seed: int) -> None:
    n = [1, 2, 7, 50, 400, 3000][seed]
    lexical, prominence, around = signals(seed, n)
    weights = plain.Weights(0.8, 0.4, 0.2, 0.3)
    graph = Neighbours(10, list(range(n)), [j for r in around for j in r], list(range(n)), 10)
    ours = plain.fuse(lexical, prominence, graph, weights)
    theirs = fusion.fuse(
        np.array(lexical), None, np.array(prominence), np.array(around, dtype=np.int64), weights
    )
    for field in ("lexical", "prominence", "fused", "neighbours", "final"):
        assert getattr(ours, field) == getattr(theirs, field).tolist(), field


@pytest.mark.parametrize("seed", range(4))
def test_fuse_over_a_reference_equals_numpy_bit_for_bit(seed: int) -> None:
    """Statistics of the reference candidates only (a search showing facts too)."""
    n = [3, 50, 400, 3000][seed]
    lexical, prominence, around = signals(seed, n)
    reference = [random.Random(seed + i).random() < 0.8 for i in range(n)]
    reference[0] = True
    weights = plain.Weights(1.0, 0.25, 0.05, 1.0)
    graph = Neighbours(10, list(range(n)), [j for r in around for j in r], list(range(n)), 10)
    ours = plain.fuse(lexical, prominence, graph, weights, reference)
    theirs = fusion.fuse(
        np.array(lexical), None, np.array(prominence), np.array(around, dtype=np.int64),
        weights, np.array(reference),
    )  # fmt: skip
    for field in ("lexical", "prominence", "fused", "neighbours", "final"):
        assert getattr(ours, field) == getattr(theirs, field).tolist(), field
    alone = plain.fuse([x for x, r in zip(lexical, reference, strict=True) if r],
                       [x for x, r in zip(prominence, reference, strict=True) if r], None,
                       weights._replace(neighbours=0.0))  # fmt: skip
    assert alone.fused == [f for f, r in zip(ours.fused, reference, strict=True) if r]
    counts = [float(i % 7) for i in range(n)]
    assert plain.prominence_parts(counts, ["high"] * n, [0.0] * n, [0.0] * n, reference)[0] == (
        ranking.prominence_parts(
            np.array(counts), ["high"] * n, np.zeros(n), np.zeros(n), reference
        )[0].tolist()
    )


def test_fuse_without_signals_is_zero_and_keeps_candidate_order() -> None:
    weights = plain.Weights(0.8, 0.0, 0.2, 0.3)
    ours = plain.fuse(None, [0.5, 0.5, 0.5], None, weights)
    assert ours.final == [0.0, 0.0, 0.0] and ours.neighbours == [0.0, 0.0, 0.0]
    assert plain.select(["patterns"] * 3, ours.final, 2, balanced=False) == [0, 1]


def test_spread_and_zscores_by_hand() -> None:
    assert plain.spread([1.0, 2.0, 3.0, 4.0]) == (2.5, pytest.approx(1.118033988749895))
    assert plain.zscores([2.0, 4.0], 2) == [-1.0, 1.0]
    assert plain.zscores([3.0, 3.0], 2) == [0.0, 0.0] and plain.zscores(None, 2) == [0.0, 0.0]


def test_neighbour_means_by_hand() -> None:
    scores = [1.0, -3.0, 2.0]
    graph = Neighbours(2, [0, 1, -1], [1, 2, 0, -1], [0, 1, 2], 2)
    assert plain.neighbour_means(scores, graph) == [0.0, 1.0, 0.0]
    wider = Neighbours(2, [0, 1, -1], [1, 2, 7, 0, -1, 7], [0, 1, 2], 3)  # records of 3
    assert plain.neighbour_means(scores, wider) == [0.0, 1.0, 0.0]
    beyond = Neighbours(2, [0, 1], [1, 9, 0, 9], [0, 1], 2)  # past the records: no one
    assert plain.neighbour_means([1.0, 2.0], beyond) == [2.0, 1.0]


@pytest.mark.parametrize("seed", range(4))
def test_prominence_equals_numpy(seed: int) -> None:
    rng = random.Random(seed)
    days = [rng.uniform(0, 900) for _ in range(200)] + [0.0, 1e-9]
    observations = [float(rng.randint(0, 30)) for _ in days]
    confidence = [rng.choice(("high", "medium", "low", "odd")) for _ in days]
    recalls = [float(rng.randint(0, 20)) for _ in days]
    ours = plain.prominence_parts(observations, confidence, days, recalls)
    theirs = ranking.prominence_parts(
        np.array(observations), confidence, np.array(days), np.array(recalls)
    )
    assert [p for p in ours] == [p.tolist() for p in theirs]
    assert plain.prominence(ours) == ((theirs[0] + theirs[1] + theirs[2] + theirs[3]) / 4).tolist()


def test_the_view_counts_days_from_the_right_moment(tmp_path: Path) -> None:
    """Recency's days: from ``updated_at`` (a trailing Z or none), from an imported
    entry's ``Last observed`` (a date, a time, an offset), never negative; the packed
    columns (``ranks``) and the rows give the same."""
    home = tmp_path / "home"
    EventLog(home).append([Observed(name="x", description="Seed.", category="patterns")])
    catch_up(home, PLAIN.space)
    db = sqlite3.connect(home / "memory.db", isolation_level=None)
    base = "INSERT INTO entries(id, name, description, category, created_at, updated_at, source"
    rows = [
        ("a" * 16, "2025-03-01T12:00:00.000000Z", '["manual"]', "2020-01-01", "high"),
        ("b" * 16, "2025-03-31T00:00:00", '["import"]', "2025-03-21", "low"),
        ("c" * 16, "2025-03-31T00:00:00Z", '["import"]', "2025-03-30T14:00:00+02:00", "odd"),
        ("d" * 16, "2025-03-30T00:00:00Z", '["import"]', "Feature #022", "medium"),
        ("e" * 16, "2025-04-02T00:00:00.5Z", '["manual"]', "", "high"),
        ("f" * 16, "not a time", '["manual"]', "", "high"),
    ]
    for slot, (entry_id, updated, sources, observed, level) in enumerate(rows, 1):
        db.execute(
            f"{base}, sources, last_observed, confidence, observation_count, recall_count, "
            "slot) VALUES (?, 'n', 'd', 'patterns', 't', ?, 'm', ?, ?, ?, 3, 4, ?)",
            (entry_id, updated, sources, observed, level, slot),
        )
    with index_files.preparing(Home(home)):
        db.execute("BEGIN")
        ranks.build(db, Home(home), 99, lambda _: False)
        db.execute("COMMIT")
    now = datetime(2025, 3, 31, 12, 0, tzinfo=UTC)
    with View(Home(home)) as view:
        packed = view.columns(["patterns"], now)
    db.execute("DELETE FROM packed_sets WHERE kind = 'rnk'")
    db.close()
    with View(Home(home)) as view:
        assert view.columns(["patterns"], now) == packed  # the rows say the same
    days = dict(zip(packed.ids, packed.days, strict=True))
    expected = {"a": 30.0, "b": 10.5, "c": 1.0, "d": 1.5, "e": 0.0, "f": 0.0}
    assert {k: days[k * 16] for k in expected} == pytest.approx(expected, abs=1e-6)
    levels = dict(zip(packed.ids, packed.confidence, strict=True))
    assert [levels[k * 16] for k in "abcd"] == ["high", "low", "medium", "medium"]


@pytest.mark.parametrize("limit", [-1, 0, 1, 5, 11, 12, 20, 40, 500])
@pytest.mark.parametrize("balanced", [True, False])
def test_select_equals_numpy(limit: int, balanced: bool) -> None:
    rng = random.Random(limit)
    n = 300
    final = [rng.choice((0.0, 1.0, rng.uniform(-2, 2))) for _ in range(n)]
    categories = [rng.choice(CATEGORIES[:3] + ("other",)) if i % 50 else "facts" for i in range(n)]
    assert plain.select(categories, final, limit, balanced) == ranking.select(
        categories, np.array(final), limit, balanced
    )
    then = [rng.choice((0.0, 0.5, rng.random())) for _ in range(n)]  # ties within ties too
    assert plain.select(categories, final, limit, balanced, then=then) == ranking.select(
        categories, np.array(final), limit, balanced, then=np.array(then)
    )


# -- the real corpus ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bank_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The 265 real entries imported, with hashing vectors (so a neighbour graph)."""
    home = tmp_path_factory.mktemp("bank") / "home"
    ws = Workspace(Home(home), None, PLAIN)
    import_files(ws, sorted(BANK.glob("*.md")))
    catch_up(home, PLAIN.space)
    return home


def feature_project(parent: Path, feature: Path) -> Path:
    """A project whose active feature is a real one: its spec, slug and phase."""
    root = parent / f"project-{feature.name}"
    target = root / "docs" / "features" / feature.name
    target.mkdir(parents=True)
    (root / ".claude").mkdir()
    shutil.copy(feature / "spec.md", target / "spec.md")
    slug = feature.name.split("-", 1)[1]
    meta = {"slug": slug, "status": "active", "lastCompletedPhase": "design"}
    (target / ".meta.json").write_text(json.dumps(meta))
    return root


class Frozen(datetime):
    """One moment for both rankings: recency must not move between them."""

    @classmethod
    def now(cls, tz: object = None) -> Frozen:  # type: ignore[override]
        return cls(2026, 11, 23, 12, 0, 0, 123456, tzinfo=UTC)


@pytest.fixture(autouse=True)
def frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    from memlog.retrieval import semantic

    monkeypatch.setattr(light, "datetime", Frozen)
    monkeypatch.setattr(semantic, "datetime", Frozen)


def both(request: Request) -> tuple[Injection, Injection]:
    request = msgspec.structs.replace(request, catch_up=False)  # current: as ``build`` asks
    ours = light.run(request)
    assert ours is not None, "the plain ranking stepped aside"
    return ours, SemanticRun(request).execute()


REAL = sorted(p for p in FEATURES.iterdir() if (p / "spec.md").exists())[::18]


@pytest.mark.parametrize("feature", REAL, ids=lambda p: p.name[:24])
def test_hook_choice_equals_numpy_on_real_contexts(
    bank_home: Path, tmp_path: Path, feature: Path
) -> None:
    root = feature_project(tmp_path, feature)
    request = make_request(bank_home, root, PLAIN)
    ours, theirs = both(request)
    assert msgspec.to_builtins(ours)["chosen"] == msgspec.to_builtins(theirs)["chosen"]
    assert ours.text == theirs.text and ours.mode == theirs.mode == "keyword"
    assert ours.fts_matches == theirs.fts_matches > 0
    assert len(ours.chosen) == PLAIN.memory_injection_limit


QUERIES = [
    "retry provider timeouts",
    "hook",
    "zzz-nothing-matches",
    "why does get_phase disagree with current_phase in EntityDatabase? retry, retry",
]


@pytest.mark.parametrize("query", QUERIES)
def test_search_equals_numpy(bank_home: Path, query: str) -> None:
    request = Request.interactive(Workspace(Home(bank_home), None, PLAIN), limit=15, query=query)
    ours, theirs = both(request)
    assert msgspec.to_builtins(ours)["chosen"] == msgspec.to_builtins(theirs)["chosen"]


def test_it_steps_aside_when_numpy_must_rank(bank_home: Path, tmp_path: Path) -> None:
    root = feature_project(tmp_path, REAL[0])
    d3 = msgspec.structs.replace(PLAIN, memory_ranking="d3")
    assert light.run(make_request(bank_home, root, d3, catch_up=False)) is None
    embedded = msgspec.structs.replace(PLAIN, memory_fusion_vector_weight=0.5)
    vectors = make_request(bank_home, root, embedded, catch_up=False)
    assert light.run(vectors) is None  # vectors to compare


def test_views_behind_are_caught_up_by_the_numpy_ranking_first(tmp_path: Path) -> None:
    home = tmp_path / "home"
    log = EventLog(home)
    log.append([Observed(name="One", description="Pin the tools.", category="patterns")])
    catch_up(home, PLAIN.space)
    current = build(make_request(home, None, PLAIN))
    assert "catch_up_ms" not in current.timings  # the plain ranking: nothing to catch up
    log.append([Observed(name="Two", description="Retry the calls.", category="patterns")])
    assert light.run(make_request(home, None, PLAIN)) is None  # asked to catch up: not its job
    behind = build(make_request(home, None, PLAIN))
    assert "catch_up_ms" in behind.timings and len(behind.chosen) == 2
    again = build(make_request(home, None, PLAIN))
    assert "catch_up_ms" not in again.timings and len(again.chosen) == 2
