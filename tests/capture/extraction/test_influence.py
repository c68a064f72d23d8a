"""What a session did with the lessons it received: judged by its extraction's one request,
or estimated from its transcript, once, as ``entry.influenced`` events."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from memlog.capture.extraction import influence
from memlog.capture.extraction.session import Budget, Run, memorize
from memlog.capture.extraction.sweep import judge_rest
from memlog.eventlog.events import Influenced, Observed, Recalled, content_hash
from memlog.llm.base import Chain
from memlog.projections.fold import Entry, Session, State, fold
from memlog.projections.sqlite_view import ledger, queries
from memlog.tests.capture.extraction.helpers import (
    Scripted,
    chain,
    extraction,
    git_project,
    item,
    pend,
    session_of,
)
from memlog.workspace import Workspace

JITTER = "Retry failed jobs with exponential backoff, full jitter and a cap on attempts."
TENANT = "Cache keys always carry the tenant id so one tenant never reads another's entry."
SLEEP = "Never put a fixed sleep before asserting on asynchronous work; poll with a deadline."
RETRY_CODE = """\
MAX_ATTEMPTS = 8  # a cap on attempts: then the job goes to the dead-letter queue


def backoff(attempt):
    \"\"\"Exponential backoff with full jitter, for failed jobs.\"\"\"
    return random.uniform(0, min(CAP, BASE * 2 ** attempt))
"""


@pytest.fixture
def ws(memlog_home: Path, tmp_path: Path) -> Workspace:
    return Workspace.open(git_project(tmp_path), home=memlog_home)


def observe(ws: Workspace, *descriptions: str) -> list[str]:
    ws.log("test").append(
        [Observed(name=d.split(",")[0][:40], description=d, category="patterns")
         for d in descriptions]
    )  # fmt: skip
    ws.catch_up()
    return [content_hash(d) for d in descriptions]


def say(kind: str, uuid: str, parent: str | None, at: str, content: Any, cwd: Path) -> str:
    return json.dumps({
        "type": kind, "uuid": uuid, "parentUuid": parent, "timestamp": at, "cwd": str(cwd),
        "sessionId": "s", "isSidechain": False, "gitBranch": "feature/x",
        "message": {"role": kind, "id": f"m{uuid}", "content": content},
    }) + "\n"  # fmt: skip


def session_file(ws: Workspace, turns: list[tuple[str, str, list[dict[str, Any]]]]) -> Path:
    """A transcript of ``(prompt time, prompt, assistant blocks)`` turns."""
    assert ws.root is not None
    text, parent = "", None
    for n, (at, prompt, blocks) in enumerate(turns):
        text += say("user", f"u{n}", parent, at, prompt, ws.root)
        text += say("assistant", f"a{n}", f"u{n}", at.replace("00.000Z", "05.000Z"), blocks,
                    ws.root)  # fmt: skip
        parent = f"a{n}"
    path = ws.root.parent / "session.jsonl"
    path.write_text(text)
    return path


def writes(code: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": "Writing the worker."},
            {"type": "tool_use", "id": "t1", "name": "Write",
             "input": {"file_path": "/p/worker.py", "content": code}}]  # fmt: skip


def received(ws: Workspace, session: str, ids: list[str], trigger: str = "startup") -> None:
    ws.log("inject").append([Recalled(ids=tuple(ids), session_id=session, trigger=trigger)])
    ws.catch_up()


def run_of(model: Scripted) -> Run:
    return Run(chain(model), Budget(500_000, 0, 40_000), time.monotonic() + 60)


def judged(ws: Workspace) -> list[Influenced]:
    return [r.event for r in ws.log().read() if isinstance(r.event, Influenced)]


def entry(ws: Workspace, entry_id: str) -> Entry:
    (found,) = queries.entries(ws.home, [entry_id], vectors=False)
    return found


def test_the_extraction_request_judges_the_lessons_in_its_one_call(ws: Workspace) -> None:
    jitter, tenant = observe(ws, JITTER, TENANT)
    assert ws.root is not None
    path = session_file(ws, [("2026-11-20T10:00:00.000Z", "Add retries to the worker",
                              writes(RETRY_CODE))])  # fmt: skip
    received(ws, "s1", [jitter, tenant])
    session = pend(ws, "s1", path, ws.root)
    assert session.unjudged == 2 and [r.split(" ")[0] for r in session.received] == [jitter, tenant]
    answer = extraction(item("Worker retries are capped at 8 attempts."))
    answer["lessons"] = [{"lesson": 1, "verdict": "applied", "evidence": "BASE * 2 ** attempt"},
                         {"lesson": 2, "verdict": "not used", "evidence": ""}]  # fmt: skip
    model = Scripted(answer)
    outcome = memorize(ws, run_of(model), session)
    assert outcome.status == "extracted" and len(model.calls) == 1  # no request of its own
    asked = model.calls[0]
    assert "Lessons memlog gave this session" in asked["prompt"]
    assert f"[1] (given at the start) {JITTER.split(',')[0][:40]}" in asked["prompt"]
    assert asked["schema"]["properties"]["lessons"]["items"]["properties"]["verdict"]["enum"] == [
        "applied", "contradicted", "not used"]  # fmt: skip
    found = {e.entry_id: e for e in judged(ws)}
    assert found[jitter].verdict == "applied" and found[jitter].source == "extraction"
    assert found[jitter].evidence == "BASE * 2 ** attempt" and found[tenant].verdict == "not used"
    ws.catch_up()
    assert entry(ws, jitter).applied_count == 1 and entry(ws, jitter).judged_count == 1
    assert entry(ws, tenant).applied_count == 0 and session_of(ws, "s1").unjudged == 0


def test_a_lesson_the_answer_leaves_out_is_estimated_locally(ws: Workspace) -> None:
    jitter, tenant = observe(ws, JITTER, TENANT)
    assert ws.root is not None
    path = session_file(ws, [("2026-11-20T10:00:00.000Z", "Add retries", writes(RETRY_CODE))])
    received(ws, "s1", [jitter, tenant])
    answer = extraction()
    answer["lessons"] = [{"lesson": 2, "verdict": "not used", "evidence": ""}]
    memorize(ws, run_of(Scripted(answer)), pend(ws, "s1", path, ws.root))
    found = {e.entry_id: e for e in judged(ws)}
    assert found[tenant].source == "extraction"
    assert found[jitter].source == "local" and found[jitter].verdict == "applied"
    assert found[jitter].evidence.startswith("estimate (")


@pytest.mark.parametrize(
    "lessons",
    [[{"lesson": 3, "verdict": "applied", "evidence": ""}],
     [{"lesson": 1, "verdict": "applied", "evidence": ""}] * 2,
     [{"lesson": 1, "verdict": "used", "evidence": ""}],
     "no list"],
)  # fmt: skip
def test_an_answer_that_judges_an_unknown_lesson_is_asked_again(
    ws: Workspace, lessons: Any
) -> None:
    (jitter,) = observe(ws, JITTER)
    assert ws.root is not None
    path = session_file(ws, [("2026-11-20T10:00:00.000Z", "Add retries", writes(RETRY_CODE))])
    received(ws, "s1", [jitter])
    bad, good = extraction(), extraction()
    bad["lessons"] = lessons
    good["lessons"] = [{"lesson": 1, "verdict": "contradicted", "evidence": "no cap"}]
    model = Scripted(bad, good)
    memorize(ws, run_of(model), pend(ws, "s1", path, ws.root))
    assert len(model.calls) == 2
    assert [(e.verdict, e.source) for e in judged(ws)] == [("contradicted", "extraction")]


def test_a_lesson_given_at_a_prompt_is_judged_on_the_turns_after_it(ws: Workspace) -> None:
    jitter, sleep = observe(ws, JITTER, SLEEP)
    assert ws.root is not None
    path = session_file(ws, [
        ("2026-11-20T10:00:00.000Z", "Add retries", writes(RETRY_CODE)),
        ("2026-11-20T11:00:00.000Z", "Now the README", [{"type": "text", "text": "Done."}]),
    ])  # fmt: skip
    session = Session(
        id="s1",
        transcript=str(path),
        received=[f"{sleep} startup 2026-11-20T10:00:01Z", f"{jitter} prompt 2026-11-20T11:00:01Z"],
    )
    entries = {e.id: e for e in queries.entries(ws.home, vectors=False)}
    given = influence.received(session, entries)
    done, times = influence.actions(path)
    assert [influence.first_turn(g.at, times) for g in given] == [0, 1]
    verdicts = {e.entry_id: e.verdict for e in influence.estimate(given, done, times, "s1")}
    # the retry code came before the lesson was given at the second prompt: not its doing
    assert verdicts == {sleep: "not used", jitter: "not used"}
    early = Session(id="s1", transcript=str(path),
                    received=[f"{jitter} startup 2026-11-20T10:00:01Z"])  # fmt: skip
    (estimate,) = influence.estimate(influence.received(early, entries), done, times, "s1")
    assert estimate.verdict == "applied" and "full jitter, for failed jobs" in estimate.evidence


def test_with_extraction_off_ended_sessions_are_estimated_once(ws: Workspace) -> None:
    jitter, tenant = observe(ws, JITTER, TENANT)
    assert ws.root is not None
    path = session_file(ws, [("2026-11-20T10:00:00.000Z", "Add retries", writes(RETRY_CODE))])
    received(ws, "s1", [jitter, tenant])
    received(ws, "open", [jitter])  # started, never ended: not judged yet
    pend(ws, "s1", path, ws.root)
    assert [s.id for s in ledger.unjudged(ws.home)] == ["s1"]
    judge_rest(ws)
    assert sorted((e.entry_id, e.verdict, e.source) for e in judged(ws)) == sorted(
        [(jitter, "applied", "local"), (tenant, "not used", "local")])  # fmt: skip
    ws.catch_up()
    assert ledger.unjudged(ws.home) == [] and session_of(ws, "s1").unjudged == 0
    judge_rest(ws)
    assert len(judged(ws)) == 2  # nothing judged twice


def test_a_skipped_session_is_estimated_and_the_sweep_with_no_model_too(ws: Workspace) -> None:
    (jitter,) = observe(ws, JITTER)
    assert ws.root is not None
    path = session_file(ws, [("2026-11-20T10:00:00.000Z", "ok", [{"type": "text", "text": "k"}])])
    received(ws, "s1", [jitter])
    outcome = memorize(ws, run_of(Scripted(None)), pend(ws, "s1", path, ws.root))
    assert outcome.status == "skipped"  # trivial: no call
    assert [(e.verdict, e.source) for e in judged(ws)] == [("not used", "local")]
    assert Chain([]).empty


def test_the_fold_keeps_the_best_judge_of_each_session() -> None:
    lesson = Observed(name="Jitter", description=JITTER, category="patterns", ts="t0")
    entry_id = lesson.entry_id

    def said(session: str, verdict: str, source: str) -> Influenced:
        return Influenced(entry_id=entry_id, session_id=session, verdict=verdict,  # type: ignore[arg-type]
                          source=source, ts="t1")  # type: ignore[arg-type]  # fmt: skip

    state = fold([
        lesson,
        said("a", "applied", "local"), said("a", "not used", "extraction"),  # extraction wins
        said("b", "applied", "extraction"), said("b", "not used", "extraction"),  # applied stays
        said("c", "not used", "agent"), said("c", "applied", "extraction"),  # the agent's word
        said("d", "contradicted", "local"),
    ], State())  # fmt: skip
    found = state.entries[entry_id]
    assert found.verdicts == {"a": "not used/extraction", "b": "applied/extraction",
                              "c": "not used/agent", "d": "contradicted/local"}  # fmt: skip
    assert (found.judged_count, found.applied_count, found.contradicted_count) == (4, 1, 1)
    assert state.sessions["a"].judged == [entry_id]
