"""The session start's context within ``memory_injection_max_chars``: rank order, category
minimums first, condensed before left out, the last line saying what more there is."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlog.api import recall
from memlog.api.capturing import import_files
from memlog.config import Config, load_config
from memlog.eventlog.log import EventLog
from memlog.home import Home
from memlog.projections.fold import Entry, fold
from memlog.projections.runner import catch_up
from memlog.retrieval import budget
from memlog.retrieval.budget import Block, fill_order, fit, size
from memlog.retrieval.render import condensed_block, entry_block, useful_line
from memlog.tests.retrieval.helpers import HEADER, filler, seed
from memlog.tests.support import FIXTURES
from memlog.vocabulary import SECTION_TITLES
from memlog.workspace import Workspace

BANK = FIXTURES / "knowledge-bank-08a38d02"
FEATURES = FIXTURES / "iflow-features-08a38d02"
HASHING = Config(memory_embedding_provider="hashing")


def test_size_counts_as_javascript_does() -> None:
    assert size("abc") == 3 and size("é") == 1 and size("😀") == 2 and size("日本") == 2


def test_fill_order_puts_each_categorys_best_first() -> None:
    categories = ["patterns"] * 5 + ["heuristics"] * 4
    scores = [9, 8, 7, 6, 5, 4, 3, 2, 1]
    assert fill_order(categories, scores, balanced=True) == [0, 1, 2, 5, 6, 7, 3, 4, 8]
    assert fill_order(categories, scores, balanced=False) == list(range(9))


def blocks(lengths: list[tuple[int, int]]) -> list[Block]:
    return [Block(str(i), "patterns", "w" * w, "c" * c) for i, (w, c) in enumerate(lengths)]


def test_an_entry_is_condensed_before_any_is_left_out() -> None:
    found = fit(blocks([(100, 40), (100, 40), (100, 40), (100, 40)]), fixed=10, room=300)
    heading = len("### Patterns to Follow") + 1
    # 10 + (2 + heading + 100) + 2 + 100 = 237; the third whole would pass 300, condensed fits
    assert found.kept == ["0", "1", "2"] and found.condensed == {"2"} and found.left == ["3"]
    assert (
        10 + 2 + heading + 100 + 2 + 100 + 2 + 40
        <= 300
        < 10 + 2 + heading + 100 + 2 + 100 + 2 + 40 + 42
    )


def test_once_one_is_condensed_the_later_ones_are_too() -> None:
    found = fit(blocks([(100, 40), (500, 40), (10, 5)]), fixed=0, room=220)
    assert found.condensed == {"1", "2"} and found.left == []


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 900), st.integers(1, 300)), max_size=30),
    st.integers(0, 4000),
)
def test_what_fits_never_passes_the_room(lengths: list[tuple[int, int]], room: int) -> None:
    kinds = ("patterns", "heuristics")
    shaped = [
        Block(b.id, kinds[int(b.id) % 2], b.whole, b.condensed[: len(b.whole)])
        for b in blocks(lengths)
    ]
    found = fit(shaped, fixed=50, room=room)
    kept = [b for b in shaped if b.id in set(found.kept)]
    text_size = (
        50
        + sum(2 + size(b.condensed if b.id in found.condensed else b.whole) for b in kept)
        + sum(len(budget.SECTION_TITLES[c]) + 1 for c in {b.category for b in kept})
    )
    assert text_size <= max(room, 50) and set(found.kept) | set(found.left) == {
        b.id for b in shaped
    }
    assert set(found.kept).isdisjoint(found.left)


def test_a_condensed_entry_keeps_its_most_useful_line() -> None:
    entry = Entry(
        id="0" * 16, name="Swallowed errors", description="A bare except hides failures.",
        category="anti-patterns", created_at="", updated_at="", source="import",
        details=["Observed in: Feature #12", "Cost: two days", "Instead: catch what you handle"],
        reasoning="It hid a disk full error.",
    )  # fmt: skip
    assert useful_line(entry) == "Instead: catch what you handle"
    assert condensed_block(entry) == (
        "### Anti-Pattern: Swallowed errors\nA bare except hides failures.\n"
        "- Instead: catch what you handle"
    )
    assert len(condensed_block(entry)) < len(entry_block(entry))
    plain = Entry(id="1" * 16, name="N", description="D", category="heuristics", created_at="",
                  updated_at="", source="manual", reasoning="Because " * 80)  # fmt: skip
    assert useful_line(plain).startswith("Why: Because") and useful_line(plain).endswith("…")


def test_a_budget_over_the_cap_is_refused_with_one_warning() -> None:
    config, warnings = load_config(None, {"MEMLOG_INJECTION_MAX_CHARS": "12000"})
    assert config.memory_injection_max_chars == 9000
    assert warnings == [
        "memory_injection_max_chars: 12000 is not characters from 1,000 to 10,000 (Claude Code "
        "gives the model a longer context only as a preview); using 9000"
    ]
    assert (
        load_config(None, {"MEMLOG_INJECTION_MAX_CHARS": "10000"})[0].memory_injection_max_chars
        == 10000
    )


@pytest.mark.parametrize("cap", [1000, 2500, 6000, 10000])
def test_the_context_holds_to_the_budget(memlog_home: Path, tmp_path: Path, cap: int) -> None:
    seed(memlog_home, filler(20, "patterns"), filler(20, "heuristics"), filler(20, "anti-patterns"))
    root = tmp_path / "project"
    (root / ".claude").mkdir(parents=True)
    (root / ".claude" / "iflow-dev.local.md").write_text(
        f"---\nmemory_injection_max_chars: {cap}\nmemory_injection_limit: -1\n---\n"
    )
    result = recall.inject(Workspace.open(root, home=memlog_home))
    assert size(result.text) <= cap and result.text.startswith(HEADER)
    assert len(result.chosen) + len(result.left_out) == 60
    last = result.text.rstrip("\n").rsplit("\n", 1)[1]
    if result.left_out:
        assert last.startswith(f"*{len(result.left_out)} more entries are in memory: the search")
        assert {o.reason for o in result.left_out} == {recall.NO_ROOM}
        # nothing left out would have fitted, even condensed (ties in the ranking move which
        # entry comes last, so whether one is condensed depends on the run)
        entries = {
            e.name: e for e in fold(r.event for r in EventLog(memlog_home).read()).entries.values()
        }
        largest = max(size(condensed_block(entries[o.name])) for o in result.left_out)
        heading = max(size(t) + 1 for t in SECTION_TITLES.values())
        assert cap - size(result.text) < budget.GAP + heading + largest


# -- the real bank ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bank_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("bank") / "home"
    import_files(Workspace(Home(home), None, HASHING), sorted(BANK.glob("*.md")))
    catch_up(home, HASHING.space)
    return home


def feature_project(parent: Path, feature: Path) -> Path:
    root = parent / feature.name
    target = root / "docs" / "features" / feature.name
    (root / ".git").mkdir(parents=True)
    shutil.copytree(feature, target)
    meta = {"slug": feature.name.split("-", 1)[1], "status": "active"}
    (target / ".meta.json").write_text(__import__("json").dumps(meta))
    return root


def test_the_default_block_of_the_real_bank_holds_ten_entries_within_the_cap(
    bank_home: Path, tmp_path: Path
) -> None:
    """For every real feature of the bank's repository, and for none."""
    features = sorted(p for p in FEATURES.iterdir() if p.is_dir())
    roots = [feature_project(tmp_path, f) for f in features[::6]] + [tmp_path / "bare"]
    (tmp_path / "bare" / ".git").mkdir(parents=True)
    for root in roots:
        ws = Workspace(Home(bank_home), root, HASHING)
        result = recall.inject(ws)
        assert size(result.text) <= 9000 < 10_000, root
        assert len(result.chosen) >= 10, root
        headings = ("\n### Anti-Patterns to Avoid", "\n### Heuristics\n", "\n### Patterns to")
        entries = result.text.count("\n### ") - sum(result.text.count(h) for h in headings)
        assert entries == len(result.chosen)
        assert result.text.rsplit("\n", 2)[-2].startswith(f"*{result.more} more entries ")
        assert result.more > 0 and (result.query is None) == ("are in memory" in result.text)
