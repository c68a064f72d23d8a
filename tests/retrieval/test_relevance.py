"""The relevance floor: evidence on scales of its own (raw cosine, idf-weighted coverage),
one relevance in [0, 1], and the configured floor a ranked entry must reach."""

from __future__ import annotations

import math
from pathlib import Path

import msgspec
import pytest

from memlog.config import Config, load_config
from memlog.retrieval import relevance
from memlog.retrieval.inject import build
from memlog.retrieval.relevance import Evidence
from memlog.retrieval.request import Chosen
from memlog.tests.retrieval.helpers import HASHING, PARSER, entry, filler, make_request, seed


def test_idf_is_the_lexical_index_one() -> None:
    assert relevance.idf(10, 0) == pytest.approx(math.log1p(10.5 / 0.5))
    assert relevance.idf(10, 10) == pytest.approx(math.log1p(0.5 / 10.5))
    assert relevance.idf(100, 1) > relevance.idf(100, 50)  # rarer terms weigh more


def test_coverage_is_the_share_of_the_query_terms_weight() -> None:
    weights = {"pars": 3.0, "error": 1.0}
    assert relevance.coverage(weights, {"pars", "error", "other"}) == 1.0
    assert relevance.coverage(weights, {"pars"}) == 0.75
    assert relevance.coverage(weights, set()) == 0.0
    assert relevance.coverage({}, {"pars"}) == 0.0  # a query without terms covers nothing


def test_relevance_is_a_chance_that_grows_with_the_evidence() -> None:
    low, high = Evidence(0.1, 0.0), Evidence(0.7, 0.8)
    assert 0.0 < relevance.relevance(low) < relevance.relevance(high) < 1.0
    assert relevance.relevance(Evidence(0.5, 0.5)) < relevance.relevance(Evidence(0.6, 0.5))
    assert relevance.relevance(Evidence(0.5, 0.2)) < relevance.relevance(Evidence(0.5, 0.3))
    assert relevance.relevance(Evidence(None, 0.2)) < relevance.relevance(Evidence(None, 0.9))
    assert relevance.relevance(Evidence(-1e6, 0.0)) == 0.0  # no overflow


def test_passes_reads_the_relevance_component() -> None:
    chosen = Chosen("a" * 16, "n", "patterns", "global", 1.2, {"relevance": 0.3})
    assert relevance.passes(chosen, 0.3) and not relevance.passes(chosen, 0.31)
    assert not relevance.passes(Chosen("b" * 16, "n", "patterns", "global", 9.0), 0.0)


def test_the_floor_is_configured(tmp_path: Path) -> None:
    assert relevance.floor_of(Config()) == Config().memory_relevance_floor == 0.5
    config, warnings = load_config(None, env={"MEMLOG_RELEVANCE_FLOOR": "0.45"})
    assert warnings == [] and relevance.floor_of(config) == 0.45


@pytest.mark.parametrize("vector_weight", [1.0, 0.0])
def test_a_search_gives_every_pick_its_evidence(memlog_home: Path, vector_weight: float) -> None:
    seed(memlog_home, entry("Parser error handling", PARSER), filler(8, "patterns"))
    config = msgspec.structs.replace(HASHING, memory_fusion_vector_weight=vector_weight)
    result = build(make_request(memlog_home, None, config, query="parser error handling"))
    best, rest = result.chosen[0], result.chosen[1:]
    assert best.components["coverage"] == 1.0  # it holds every term of the query
    assert max(c.components["coverage"] for c in rest) < 1.0
    assert ("cosine" in best.components) == (vector_weight > 0)
    if vector_weight > 0:  # each pick's own cosine
        assert all(c.components["cosine"] == c.components["vector_raw"] for c in result.chosen)
    assert best.components["relevance"] == pytest.approx(
        relevance.relevance(Evidence(best.components.get("cosine"), 1.0)), abs=1e-6
    )
    kept = [c for c in result.chosen if relevance.passes(c, 0.5)]
    assert kept and kept[0] is best and len(kept) < len(result.chosen)


def test_the_hook_is_given_no_evidence(memlog_home: Path) -> None:
    seed(memlog_home, entry("Parser error handling", PARSER), filler(4, "patterns"))
    result = build(make_request(memlog_home, None))
    assert result.chosen and all("relevance" not in c.components for c in result.chosen)
