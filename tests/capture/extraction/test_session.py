"""One session end to end: skip rules, retries, limits, evolution, and never twice."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from memlog.capture.extraction.session import Budget, Deferred, Run, Stopped, memorize
from memlog.errors import ProviderError, RateLimited
from memlog.eventlog.events import MemoryEvolved, Observed, SessionProgress, content_hash
from memlog.llm.base import StructuredModel
from memlog.projections import branch_memory
from memlog.projections.sqlite_view import ledger
from memlog.tests.capture.extraction.helpers import (
    FIXTURES,
    Scripted,
    chain,
    extraction,
    git_project,
    item,
    pend,
    session_of,
    write_transcript,
)
from memlog.workspace import Workspace

CSV = "Open user-supplied CSV files with encoding utf-8-sig so the byte order mark goes."
BOM = "Excel exports start with a BOM that sticks to the first header when read as utf-8."
LONG_ANSWER = "The importer drops the first column because the header keeps a BOM. " * 3


def run_of(model: StructuredModel, limit_usd: float = 0.5, max_tokens: int = 40_000) -> Run:
    budget = Budget(round(limit_usd * 1e6), 0, max_tokens)
    return Run(chain(model), budget, time.monotonic() + 60)


@pytest.fixture
def ws(memlog_home: Path, tmp_path: Path) -> Workspace:
    root = git_project(tmp_path)
    return Workspace.open(root, home=memlog_home)


def transcript(ws: Workspace, name: str = "t.jsonl", pairs: int = 2) -> Path:
    assert ws.root is not None
    chat = [(f"Why does import {i} drop a column?", LONG_ANSWER) for i in range(pairs)]
    return write_transcript(ws.root.parent / name, ws.root, "feature/x", chat)


def events(ws: Workspace) -> list[object]:
    return [r.event for r in ws.log().read()]


@pytest.mark.ac("004:extract")
def test_a_session_becomes_entries_audits_and_progress(ws: Workspace) -> None:
    assert ws.root is not None
    path = transcript(ws)
    session = pend(ws, "s1", path, ws.root)
    model = Scripted(extraction(item(CSV), item(BOM, "bug-patterns", 0.7)))
    done = memorize(ws, run_of(model), session)
    assert done.status == "extracted" and done.added == 2
    assert len(model.calls) == 1  # one call per session, not per turn
    log = events(ws)
    observed = [e for e in log if isinstance(e, Observed)]
    found = [(o.category, o.section, o.branch, o.project, o.source, o.confidence) for o in observed]
    assert found == [
        ("patterns", "conventions", "feature/x", "shop", "extraction", "high"),
        ("anti-patterns", "bug-patterns", "feature/x", "shop", "extraction", "medium"),
    ]  # fmt: skip
    (audit,) = [e for e in log if isinstance(e, MemoryEvolved)]
    assert audit.mode == "created" and [op.op for op in audit.operations] == ["add", "add"]
    # the audit carries the call that taught it; the progress, no call a second time
    assert (audit.usage.calls, audit.usage.tokens_in, audit.usage.model) == (
        1, 1000, "claude-haiku-4-5",
    )  # fmt: skip
    (progress,) = [e for e in log if isinstance(e, SessionProgress)]
    assert progress.status == "extracted" and progress.offset == path.stat().st_size
    assert progress.usage.calls == 0 and done.usage.calls == 1
    assert progress.batch_end == progress.seq  # entries, audit and progress: one batch
    stored = session_of(ws, "s1")
    assert (stored.status, stored.offset, stored.cost_micros) == (
        "extracted",
        path.stat().st_size,
        2000,
    )
    live = branch_memory.live_entries(ws.home, "shop", "feature/x")
    assert [e.description for e in live] == [CSV, BOM]


def test_the_same_session_is_never_read_twice_and_a_resumed_one_incrementally(
    ws: Workspace,
) -> None:
    assert ws.root is not None
    path = transcript(ws)
    first = Scripted(extraction(item(CSV)))
    memorize(ws, run_of(first), pend(ws, "s1", path, ws.root))
    size = path.stat().st_size
    write_transcript(path, ws.root, "feature/x", [("And the dates?", LONG_ANSWER)], start=3,
                     append=True)  # fmt: skip
    session = pend(ws, "s1", path, ws.root)
    assert session.status == "pending" and session.offset == size
    second = Scripted(extraction(item(CSV)), {"operations": [{"op": "keep", "id": 1}]})
    done = memorize(ws, run_of(second), session)
    assert done.status == "extracted"
    sent = second.calls[0]["prompt"]
    assert "And the dates?" in sent and "Why does import 0" not in sent  # only what is new
    assert session_of(ws, "s1").offset == path.stat().st_size


@pytest.mark.ac("004:empty-trivial")
@pytest.mark.parametrize(
    ("name", "reason"),
    [("sdk_session.jsonl", "Agent SDK session"), ("empty.jsonl", "empty session"),
     ("trivial.jsonl", "trivial session"), ("missing.jsonl", "no transcript: ")],
)  # fmt: skip
def test_skipped_sessions_make_no_call(
    ws: Workspace, tmp_path: Path, name: str, reason: str
) -> None:
    assert ws.root is not None
    path = tmp_path / name
    if name == "sdk_session.jsonl":
        path.write_bytes((FIXTURES / name).read_bytes())
    elif name == "trivial.jsonl":
        write_transcript(path, ws.root, "feature/x", [("hi", "hello")])
    else:
        path.write_text("")
    size = path.stat().st_size if path.exists() else 0
    if name == "missing.jsonl":
        path.write_text("")
        session = pend(ws, "s1", path, ws.root)
        path.unlink()
    else:
        session = pend(ws, "s1", path, ws.root)
    model = Scripted(extraction(item(CSV)))
    done = memorize(ws, run_of(model), session)
    assert done.status == "skipped" and done.reason.startswith(reason)
    assert model.calls == []
    assert session_of(ws, "s1").offset == size


@pytest.mark.ac("004:retry")
def test_an_invalid_answer_is_asked_again_then_accepted(ws: Workspace) -> None:
    assert ws.root is not None
    model = Scripted({"extractions": [{"section": "opinions", "content": "x", "confidence": 1}]},
                     extraction(item(CSV)))  # fmt: skip
    done = memorize(ws, run_of(model), pend(ws, "s1", transcript(ws), ws.root))
    assert done.status == "extracted" and len(model.calls) == 2
    assert done.usage.calls == 2 and session_of(ws, "s1").calls == 2


@pytest.mark.ac("004:retry")
@pytest.mark.parametrize(
    "bad",
    [None, {"items": []}, extraction(item(CSV, confidence=1.5)), extraction(item("   ")),
     extraction(item(CSV, section="rumours"))],
)  # fmt: skip
def test_three_invalid_answers_mark_the_session_error(ws: Workspace, bad: object) -> None:
    assert ws.root is not None
    path = transcript(ws)
    model = Scripted(bad)
    done = memorize(ws, run_of(model), pend(ws, "s1", path, ws.root))
    assert done.status == "error" and "invalid answer 3 times" in done.reason
    assert len(model.calls) == 3
    stored = session_of(ws, "s1")
    assert stored.status == "error" and stored.offset == 0 and stored.calls == 3
    assert not [e for e in events(ws) if isinstance(e, Observed)]


def test_a_rate_limit_stops_the_run_and_leaves_the_session_pending(ws: Workspace) -> None:
    assert ws.root is not None
    session = pend(ws, "s1", transcript(ws), ws.root)
    with pytest.raises(Stopped, match="rate limited"):
        memorize(ws, run_of(Scripted(RateLimited("x: rate limited (429)", 3))), session)
    assert session_of(ws, "s1").status == "pending"
    assert not [e for e in events(ws) if isinstance(e, SessionProgress)]


def test_passing_failures_are_retried_by_later_runs_then_marked_error(ws: Workspace) -> None:
    assert ws.root is not None
    session = pend(ws, "s1", transcript(ws), ws.root)
    model = Scripted(ProviderError("claude-cli: no answer within 180 s"))
    statuses = []
    for _ in range(3):
        statuses.append(memorize(ws, run_of(model), session).status)
        session = session_of(ws, "s1")
    assert statuses == ["pending", "pending", "error"]
    assert "no answer within" in session.reason


def test_the_daily_budget_and_the_input_cap_leave_sessions_pending(ws: Workspace) -> None:
    assert ws.root is not None
    session = pend(ws, "s1", transcript(ws), ws.root)
    model = Scripted(extraction(item(CSV)))
    with pytest.raises(Deferred, match="daily budget"):
        memorize(ws, run_of(model, limit_usd=0.0001), session)
    with pytest.raises(Deferred, match="memory_extraction_max_input_tokens"):
        memorize(ws, run_of(model, max_tokens=100), session)
    assert model.calls == [] and session_of(ws, "s1").status == "pending"


@pytest.mark.ac("004:evolve")
def test_existing_branch_memory_is_evolved_by_operations(ws: Workspace) -> None:
    assert ws.root is not None
    memorize(ws, run_of(Scripted(extraction(item(CSV), item(BOM, "bug-patterns")))),
             pend(ws, "s1", transcript(ws, "a.jsonl"), ws.root))  # fmt: skip
    newer = "Open user-supplied CSV files with encoding utf-8-sig; the csv module needs newline=''."
    fact = "The importer streams rows; files over 1 GB are fine."
    ops = {"operations": [
        {"op": "update", "id": 1, "content": newer, "reason": "the newline rule is new"},
        {"op": "remove", "id": 2, "reason": "fixed for good in the reader"},
        {"op": "add", "section": "facts", "content": fact},
    ]}  # fmt: skip
    model = Scripted(extraction(item(newer), item(fact, "facts")), ops)
    done = memorize(ws, run_of(model), pend(ws, "s2", transcript(ws, "b.jsonl"), ws.root))
    assert done.status == "extracted" and "feature/x: evolved" in done.reason
    assert "[1] (conventions) " + CSV in model.calls[1]["prompt"]
    live = [e.description for e in branch_memory.live_entries(ws.home, "shop", "feature/x")]
    assert live == [newer, fact]
    audit = [e for e in events(ws) if isinstance(e, MemoryEvolved)][-1]
    assert [(op.op, op.entry_id) for op in audit.operations] == [
        ("update", content_hash(CSV)), ("remove", content_hash(BOM)), ("add", content_hash(fact)),
    ]  # fmt: skip
    assert audit.usage.calls == 2  # the extraction and the evolution call, on its audit
    (progress,) = [e for e in events(ws) if isinstance(e, SessionProgress) and e.session_id == "s2"]
    assert progress.usage.calls == 0 and done.usage.calls == 2


def test_a_session_that_teaches_nothing_leaves_no_audit_and_its_cost_once(ws: Workspace) -> None:
    """No item, or only what the branch already holds: no ``memory.evolved`` (so no line
    under the branch's ``## Changes``); the call's cost is in the session's progress, and
    the day's spend counts every call once."""
    assert ws.root is not None
    memorize(ws, run_of(Scripted(extraction(item(CSV)))), pend(ws, "s1", transcript(ws), ws.root))
    for n, items in enumerate(([], [item(CSV)]), 2):
        done = memorize(ws, run_of(Scripted(extraction(*items))),
                        pend(ws, f"s{n}", transcript(ws, f"{n}.jsonl"), ws.root))  # fmt: skip
        assert done.status == "extracted" and done.added == 0
    audits = [e for e in events(ws) if isinstance(e, MemoryEvolved)]
    assert [a.session_id for a in audits] == ["s1"]
    progress = {e.session_id: e.usage.calls for e in events(ws) if isinstance(e, SessionProgress)}
    assert progress == {"s1": 0, "s2": 1, "s3": 2}  # s3 also asked to evolve the memory
    day = time.strftime("%Y-%m-%d", time.gmtime())
    assert ledger.spend(ws.home, day).calls == 4 == sum(a.usage.calls for a in audits) + 3


@pytest.mark.ac("004:evolve-fallback")
def test_a_rejected_evolution_falls_back_to_adding_new_items(ws: Workspace) -> None:
    assert ws.root is not None
    memorize(ws, run_of(Scripted(extraction(item(CSV), item(BOM, "bug-patterns")))),
             pend(ws, "s1", transcript(ws, "a.jsonl"), ws.root))  # fmt: skip
    new = "Dates in exports are ISO 8601 in UTC."
    wipe = {"operations": [
        {"op": "remove", "id": 1, "reason": "x"}, {"op": "remove", "id": 2, "reason": "y"},
    ]}  # fmt: skip
    model = Scripted(extraction(item(CSV), item(new, "facts")), wipe)
    done = memorize(ws, run_of(model), pend(ws, "s2", transcript(ws, "b.jsonl"), ws.root))
    assert "feature/x: fallback" in done.reason
    live = [e.description for e in branch_memory.live_entries(ws.home, "shop", "feature/x")]
    assert live == [CSV, BOM, new]  # nothing removed, the repeated item not added twice
    audit = [e for e in events(ws) if isinstance(e, MemoryEvolved)][-1]
    assert audit.mode == "fallback" and "removes all 2 items" in audit.note


def test_a_branch_switch_gives_each_branch_its_own_memory(ws: Workspace, tmp_path: Path) -> None:
    assert ws.root is not None
    path = tmp_path / "switch.jsonl"
    write_transcript(path, ws.root, "feature/x", [("Why the BOM?", LONG_ANSWER)])
    write_transcript(path, ws.root, "main", [("And on main?", LONG_ANSWER)], start=2, append=True)
    model = Scripted(
        extraction(item(CSV, scope="feature/x"), item(BOM, "bug-patterns", scope="main"))
    )
    done = memorize(ws, run_of(model), pend(ws, "s1", path, ws.root))
    assert done.status == "extracted"
    scope = model.calls[0]["schema"]["properties"]["extractions"]["items"]["properties"]["scope"]
    assert scope["enum"] == ["feature/x", "main"]
    assert [e.description for e in branch_memory.live_entries(ws.home, "shop", "feature/x")] == [
        CSV
    ]
    assert [e.description for e in branch_memory.live_entries(ws.home, "shop", "main")] == [BOM]


def test_spend_is_kept_by_day(ws: Workspace) -> None:
    assert ws.root is not None
    memorize(ws, run_of(Scripted(extraction(item(CSV)))), pend(ws, "s1", transcript(ws), ws.root))
    day = time.strftime("%Y-%m-%d", time.gmtime())
    today = ledger.spend(ws.home, day)
    assert (today.calls, today.tokens_in, today.tokens_out, today.cost_micros) == (
        1,
        1000,
        200,
        2000,
    )
