"""Usefulness in the ranking: nothing moves without a history of use; with one, a lesson
sessions apply rises, one they never apply sinks, one never judged keeps its score; the
plain ranking and the numpy one agree bit for bit either way."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from memlog.api.capturing import import_files
from memlog.config import Config
from memlog.eventlog.events import Influenced
from memlog.eventlog.log import EventLog
from memlog.home import Home
from memlog.projections.runner import catch_up
from memlog.retrieval import light, plain
from memlog.retrieval.request import Injection
from memlog.retrieval.semantic import SemanticRun
from memlog.tests.retrieval.helpers import make_request
from memlog.tests.retrieval.test_light import (
    BANK,
    REAL,
    Frozen,
    feature_project,
)
from memlog.workspace import Workspace

#: no vector weight: the plain ranking runs too (``light``)
ON = Config(memory_embedding_provider="hashing", memory_fusion_vector_weight=0.0)
OFF = msgspec.structs.replace(ON, memory_usefulness_weight=0.0)
WITH_VECTORS = Config(memory_embedding_provider="hashing")


@pytest.fixture(autouse=True)
def frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    from memlog.retrieval import semantic

    monkeypatch.setattr(light, "datetime", Frozen)
    monkeypatch.setattr(semantic, "datetime", Frozen)


@pytest.fixture
def bank_home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    import_files(Workspace(Home(home), None, ON), sorted(BANK.glob("*.md")))
    catch_up(home, ON.space)
    return home


def ranked(home: Path, root: Path, config: Config) -> tuple[Injection, Injection]:
    request = msgspec.structs.replace(make_request(home, root, config), catch_up=False)
    ours = light.run(request) if config.memory_fusion_vector_weight == 0 else None
    return ours or SemanticRun(request).execute(), SemanticRun(request).execute()


def chosen(result: Injection) -> list[tuple[str, float, dict[str, float]]]:
    return [(c.id, c.score, {**c.components, "weight_usefulness": 0.0}) for c in result.chosen]


def judge(home: Path, entry_id: str, applied: int, of: int) -> None:
    EventLog(home).append([
        Influenced(entry_id=entry_id, session_id=f"s{n}", source="extraction",
                   verdict="applied" if n < applied else "not used")
        for n in range(of)
    ])  # fmt: skip
    catch_up(home, ON.space)


@pytest.mark.parametrize("config", [ON, WITH_VECTORS], ids=["plain", "vectors"])
def test_with_no_history_the_ranking_is_the_same_bit_for_bit(
    bank_home: Path, tmp_path: Path, config: Config
) -> None:
    off = msgspec.structs.replace(config, memory_usefulness_weight=0.0)
    for feature in REAL:
        root = feature_project(tmp_path, feature)
        with_weight, _ = ranked(bank_home, root, config)
        without, _ = ranked(bank_home, root, off)
        assert chosen(with_weight) == chosen(without) and with_weight.text == without.text
        assert all(c.components["usefulness"] == 0.0 for c in with_weight.chosen)


def test_history_moves_a_lesson_only_once_it_has_one(bank_home: Path, tmp_path: Path) -> None:
    root = feature_project(tmp_path, REAL[0])
    before, _ = ranked(bank_home, root, ON)
    first, last = before.chosen[0], before.chosen[-1]
    judge(bank_home, first.id, 0, 12)  # given twelve times, never applied
    judge(bank_home, last.id, 10, 10)  # applied every time
    after, numpy = ranked(bank_home, root, ON)
    assert chosen(after) == chosen(numpy)  # the plain ranking and numpy agree
    score = {c.id: c for c in after.chosen}
    assert first.id not in score or score[first.id].score < first.score
    assert score[last.id].score > last.score and score[last.id].components["usefulness"] > 0.5
    untouched = [c for c in before.chosen if c.id not in (first.id, last.id) and c.id in score]
    assert untouched and all(score[c.id].score == c.score for c in untouched)  # to the bit
    assert all(score[c.id].components["usefulness"] == 0.0 for c in untouched)
    off, _ = ranked(bank_home, root, OFF)
    assert [c.id for c in off.chosen] == [c.id for c in before.chosen]  # weight 0: as before


def test_usefulness_is_zero_without_judgments_and_signed_by_the_rate() -> None:
    from memlog.projections.sqlite_view.plain import History

    assert plain.usefulness(None, 3) is None
    assert plain.usefulness(History([], [], [], 5, 20), 3) is None  # none of these judged
    found = plain.usefulness(History([0, 2], [0, 6], [10, 6], 6, 16), 3)
    assert found is not None and found[1] == 0.0 and found[0] < 0 < found[2]
