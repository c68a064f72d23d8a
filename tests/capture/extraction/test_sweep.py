"""The sweep: one extractor at a time, at most 20 sessions, idle sessions adopted."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from memlog.capture.extraction import sweep
from memlog.errors import RateLimited
from memlog.tests.capture.extraction.helpers import (
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

ANSWER = "The importer keeps the BOM in the first header unless the file is read as utf-8-sig."


@pytest.fixture
def ws(memlog_home: Path, tmp_path: Path) -> Workspace:
    return Workspace.open(git_project(tmp_path), home=memlog_home)


def transcripts(ws: Workspace, count: int, substantive: bool = True) -> list[Path]:
    assert ws.root is not None
    made = []
    for n in range(count):
        path = ws.root.parent / f"t{n}.jsonl"
        pair = (f"Question {n} about the importer?", ANSWER) if substantive else ("hi", "yo")
        made.append(write_transcript(path, ws.root, "feature/x", [pair]))
    return made


def later() -> float:
    return time.monotonic() + 60


def test_one_extractor_at_a_time(ws: Workspace) -> None:
    with sweep.locked(ws.home):
        with pytest.raises(sweep.Busy, match="another extraction is running"):
            sweep.sweep(ws.home, lambda _: chain(Scripted()), later())


@pytest.mark.ac("004:max-branches-per-run")
def test_at_most_twenty_sessions_a_run_oldest_first(ws: Workspace) -> None:
    assert ws.root is not None
    for n, path in enumerate(transcripts(ws, 23, substantive=False)):
        pend(ws, f"s{n:02d}", path, ws.root)
    report = sweep.sweep(ws.home, lambda _: chain(Scripted()), later())
    assert [o.session_id for o in report.outcomes] == [f"s{n:02d}" for n in range(20)]
    assert {o.status for o in report.outcomes} == {"skipped"}
    assert [s.id for s in sweep.select(ws.home)] == ["s20", "s21", "s22"]


def test_a_rate_limit_ends_the_run_and_the_rest_stay_pending(ws: Workspace) -> None:
    assert ws.root is not None
    for n, path in enumerate(transcripts(ws, 3)):
        pend(ws, f"s{n}", path, ws.root)
    model = Scripted(RateLimited("claude-cli: rate limited (429): slow down"))
    report = sweep.sweep(ws.home, lambda _: chain(model), later())
    assert len(model.calls) == 1 and report.outcomes == []
    assert "rate limited" in report.stopped
    assert [sid for sid, _ in report.deferred] == ["s0", "s1", "s2"]
    assert {session_of(ws, f"s{n}").status for n in range(3)} == {"pending"}


def test_a_session_that_never_ended_is_adopted_once_idle(ws: Workspace) -> None:
    assert ws.root is not None
    busy, idle = transcripts(ws, 2)
    pend(ws, "busy", busy, ws.root, trigger="SessionStart")
    pend(ws, "idle", idle, ws.root, trigger="SessionStart")
    old = time.time() - sweep.IDLE_SECONDS - 60
    os.utime(idle, (old, old))
    model = Scripted(extraction(item(ANSWER)))
    report = sweep.sweep(ws.home, lambda _: chain(model), later())
    assert [(o.session_id, o.status) for o in report.outcomes] == [("idle", "extracted")]
    assert session_of(ws, "busy").status == "open"
    adopted = session_of(ws, "idle")
    assert adopted.trigger == "sweep" and adopted.status == "extracted"


def test_a_finished_session_asked_for_again_without_news_changes_nothing(ws: Workspace) -> None:
    assert ws.root is not None
    (path,) = transcripts(ws, 1)
    pend(ws, "s1", path, ws.root)
    model = Scripted(extraction(item(ANSWER)))
    sweep.sweep(ws.home, lambda _: chain(model), later())
    count = sum(1 for _ in ws.log().read())
    again = sweep.sweep(ws.home, lambda _: chain(model), later(), ids=["s1"])
    assert [(o.status, o.reason) for o in again.outcomes] == [
        ("extracted", "nothing new since the last extraction")
    ]
    assert sum(1 for _ in ws.log().read()) == count and len(model.calls) == 1


def test_each_session_uses_its_own_projects_configuration(ws: Workspace, tmp_path: Path) -> None:
    assert ws.root is not None
    other = git_project(tmp_path, "quiet")
    (other / ".claude").mkdir()
    (other / ".claude" / "iflow-dev.local.md").write_text(
        "---\nmemory_extraction_daily_budget_usd: 0\n---\n"
    )
    (mine,) = transcripts(ws, 1)
    theirs = write_transcript(tmp_path / "q.jsonl", other, "feature/x", [("Why?", ANSWER)])
    pend(ws, "mine", mine, ws.root)
    pend(ws, "theirs", theirs, other)
    model = Scripted(extraction(item(ANSWER)))
    report = sweep.sweep(ws.home, lambda _: chain(model), later())
    assert [(o.session_id, o.status) for o in report.outcomes] == [("mine", "extracted")]
    assert [(sid, "daily budget" in why) for sid, why in report.deferred] == [("theirs", True)]


def test_a_session_whose_transcript_is_on_another_machine_is_left_to_it(ws: Workspace) -> None:
    """A synced log holds every machine's sessions; each machine extracts its own."""
    assert ws.root is not None
    here, elsewhere = transcripts(ws, 2, substantive=False)
    pend(ws, "mine", here, ws.root)
    pend(ws, "theirs", elsewhere, ws.root)
    elsewhere.unlink()  # as it looks from a machine that received the session by sync
    report = sweep.sweep(ws.home, lambda _: chain(Scripted()), later())
    assert [o.session_id for o in report.outcomes] == ["mine"]
    assert session_of(ws, "theirs").status == "pending"
    assert sweep.select(ws.home, ids=["theirs"])  # asked for by name, it is still there
