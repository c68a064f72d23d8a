"""Evolution: operations validated, applied as events, never destroying memory."""

from __future__ import annotations

from pathlib import Path

import pytest

from memlog.capture.extraction import answers, evolve
from memlog.capture.extraction.answers import Extraction, Invalid, Op
from memlog.capture.extraction.prompts import Scope
from memlog.eventlog.events import Observed, Retired, Superseded, content_hash
from memlog.eventlog.log import EventLog
from memlog.home import Home
from memlog.projections import branch_memory
from memlog.projections.fold import Entry, fold
from memlog.projections.markdown_view.writer import markdown_digest
from memlog.projections.runner import catch_up
from memlog.projections.sqlite_view.digest import sqlite_digest

SCOPE = Scope("shop", "feature/x")
A, B, C = "Use snake_case for modules.", "Dates are stored in UTC.", "Run ruff before commit."


def items(*texts: str) -> list[Extraction]:
    return [Extraction("conventions", t, 0.9) for t in texts]


def seeded(home: Path, *texts: str) -> list[Entry]:
    plan = evolve.created(SCOPE, items(*texts), "s0")
    EventLog(home).append(plan.events)
    catch_up(home)
    return branch_memory.live_entries(Home(home), *SCOPE)


def apply(home: Path, plan: evolve.Plan) -> None:
    EventLog(home).append([*plan.events, plan.audit("s", evolve.Usage())])
    catch_up(home)


def live(home: Path) -> list[str]:
    return [e.description for e in branch_memory.live_entries(Home(home), *SCOPE)]


@pytest.mark.ac("004:evolve")
def test_add_update_remove_keep_become_the_right_events(memlog_home: Path) -> None:
    existing = seeded(memlog_home, A, B, C)
    ops = [
        Op("keep", 1),
        Op("update", 2, content="Dates are stored in UTC with an offset.", reason="newer"),
        Op("remove", 3, reason="ruff runs in CI now"),
        Op("add", section="facts", content="The shop runs on Python 3.12."),
    ]
    plan = evolve.evolved(SCOPE, existing, items("The shop runs on Python 3.12."), ops, "s1")
    kinds = [type(e).__name__ for e in plan.events]
    assert kinds == ["Observed", "Superseded", "Retired", "Observed"]
    new_b = content_hash("Dates are stored in UTC with an offset.")
    superseded = plan.events[1]
    assert isinstance(superseded, Superseded)
    assert (superseded.entry_id, superseded.by, superseded.branch) == (
        content_hash(B), new_b, "shop/feature/x",
    )  # fmt: skip
    retired = plan.events[2]
    assert isinstance(retired, Retired) and retired.reason == "ruff runs in CI now"
    apply(memlog_home, plan)
    assert live(memlog_home) == [A, "Dates are stored in UTC with an offset.",
                                 "The shop runs on Python 3.12."]  # fmt: skip
    # nothing left the log: the old entries are superseded and retired, with their reasons
    state = fold(r.event for r in EventLog(memlog_home).read())
    assert state.entries[content_hash(B)].status == "superseded"
    assert state.entries[content_hash(C)].status_reason == "ruff runs in CI now"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"operations": [{"op": "keep", "id": 4}]}, "unknown item 4"),
        ({"operations": [{"op": "remove", "id": 0, "reason": "x"}]}, "unknown item 0"),
        ({"operations": [{"op": "remove", "id": 1, "reason": "a"},
                         {"op": "remove", "id": 2, "reason": "b"},
                         {"op": "remove", "id": 3, "reason": "c"}]}, "removes all 3 items"),
        ({"operations": [{"op": "keep", "id": 1}, {"op": "remove", "id": 1, "reason": "x"}]},
         "more than one operation"),
        ({"operations": [{"op": "remove", "id": 1}]}, "needs a reason"),
        ({"operations": [{"op": "update", "id": 1, "reason": "x"}]}, "needs content"),
        ({"operations": [{"op": "add", "content": "x"}]}, "needs a section"),
        ({"operations": [{"op": "rewrite", "id": 1}]},
         r"Invalid enum value .rewrite. - at `\$.operations\[0\].op`"),
        ({"sections": {"facts": []}}, "unknown field"),
        (None, "no structured answer"),
    ],
)  # fmt: skip
def test_answers_that_break_the_rules_are_rejected(data: object, message: str) -> None:
    with pytest.raises(Invalid, match=message):
        answers.operations(data, existing=3, new=1)


def test_an_add_without_new_extractions_is_rejected() -> None:
    with pytest.raises(Invalid, match="add without new extractions"):
        answers.operations(
            {"operations": [{"op": "add", "section": "facts", "content": "x"}]}, 2, 0
        )


@pytest.mark.ac("004:idempotent")
def test_the_same_extraction_applied_twice_changes_nothing(memlog_home: Path) -> None:
    existing = seeded(memlog_home, A, B)
    ops = [Op("add", section="conventions", content=C)]
    apply(memlog_home, evolve.evolved(SCOPE, existing, items(C), ops, "s1"))
    views = sqlite_digest(Home(memlog_home)), markdown_digest(Home(memlog_home))
    existing = branch_memory.live_entries(Home(memlog_home), *SCOPE)
    again = evolve.evolved(SCOPE, existing, items(C), ops, "s1")
    assert again.events == [] and [op.op for op in again.operations] == ["keep"]
    apply(memlog_home, again)
    entries_after = [e for e in branch_memory.live_entries(Home(memlog_home), *SCOPE)]
    assert [e.description for e in entries_after] == [A, B, C]
    assert [e.observation_count for e in entries_after] == [1, 1, 1]
    assert markdown_digest(Home(memlog_home)) == views[1]


def test_an_operation_against_a_statement_just_extracted_again_is_a_keep(memlog_home: Path) -> None:
    existing = seeded(memlog_home, A, B)
    ops = [Op("remove", 1, reason="duplicate"), Op("update", 2, content="Other.", reason="z")]
    plan = evolve.evolved(SCOPE, existing, items(A, B), ops, "s1")
    assert plan.events == [] and [op.op for op in plan.operations] == ["keep", "keep"]


def test_the_same_statement_twice_in_one_extraction_is_one_entry(memlog_home: Path) -> None:
    plan = evolve.created(SCOPE, items(A, " Use  snake_case for modules. ".strip(), A), "s1")
    assert len(plan.events) == 1


@pytest.mark.ac("004:evolve-fallback")
def test_fallback_skips_content_hash_and_near_duplicates(memlog_home: Path) -> None:
    existing = seeded(memlog_home, A, B)
    near = "Use snake_case for module names."

    def similar(texts: object, known: object) -> list[str | None]:
        return [content_hash(A) if t == near else None for t in texts]  # type: ignore[attr-defined]

    plan = evolve.fallback(SCOPE, existing, items(A, near, C), "s1", similar, "rejected")
    assert [op.op for op in plan.operations] == ["keep", "keep", "add"]
    assert [e.description for e in plan.events if isinstance(e, Observed)] == [C]
    assert plan.mode == "fallback" and "fell back to adding new items: rejected" in plan.notes


def test_a_branch_scoped_remove_leaves_the_entry_live_on_another_branch(memlog_home: Path) -> None:
    log = EventLog(memlog_home)
    for branch in ("main", "feature/x"):
        log.append(evolve.created(Scope("shop", branch), items(A), "s").events)
    catch_up(memlog_home)
    log.append([Retired(entry_id=content_hash(A), reason="x", branch="shop/feature/x")])
    catch_up(memlog_home)
    assert live(memlog_home) == []
    assert [
        e.description for e in branch_memory.live_entries(Home(memlog_home), "shop", "main")
    ] == [A]
    state = fold(r.event for r in log.read())
    assert state.entries[content_hash(A)].status == "live"


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("Use the csv module. It handles quotes.", "Use the csv module"),
        ("Quote CSV fields before splitting the line on commas because naive splitting breaks "
         "on quoted values and loses data.",
         "Quote CSV fields before splitting the line on commas"),
        ("The importer keeps the BOM in the first header unless the file is read as "
         "utf-8-sig, which Excel exports need.", "The importer keeps the BOM in the first header"),
        ("Retries with exponential backoff (capped at 60 s) keep the provider from rate "
         "limiting the whole batch of embeddings.", "Retries with exponential backoff"),
        ("The ledger service rejects writes after the nightly freeze window starts at midnight "
         "UTC and resumes at two in the morning UTC daily.",
         "The ledger service rejects writes after the nightly freeze window starts at midnight "
         "UTC and resumes at two in the morning UTC daily"),
    ],
)  # fmt: skip
def test_names_end_where_a_phrase_ends(text: str, name: str) -> None:
    """A name is the first sentence, or its first clauses: never cut within a phrase."""
    assert evolve.name_of(text) == name
    assert text.startswith(name)
    assert text[len(name) : len(name) + 1] in ("", ".", ",", " ")
