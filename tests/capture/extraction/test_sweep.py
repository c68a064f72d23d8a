"""The sweep: one extractor at a time, at most 20 sessions, idle sessions adopted."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from memlog.api import reading
from memlog.capture.extraction import sweep
from memlog.errors import RateLimited
from memlog.eventlog import devices
from memlog.eventlog.events import SessionPending
from memlog.eventlog.log import EventLog
from memlog.home import Home
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
            sweep.sweep(ws, lambda _: chain(Scripted()), later())


@pytest.mark.ac("004:max-branches-per-run")
def test_at_most_twenty_sessions_a_run_oldest_first(ws: Workspace) -> None:
    assert ws.root is not None
    for n, path in enumerate(transcripts(ws, 23, substantive=False)):
        pend(ws, f"s{n:02d}", path, ws.root)
    report = sweep.sweep(ws, lambda _: chain(Scripted()), later())
    assert [o.session_id for o in report.outcomes] == [f"s{n:02d}" for n in range(20)]
    assert {o.status for o in report.outcomes} == {"skipped"}
    assert [s.id for s in sweep.select(ws.home)] == ["s20", "s21", "s22"]


def test_a_rate_limit_ends_the_run_and_the_rest_stay_pending(ws: Workspace) -> None:
    assert ws.root is not None
    for n, path in enumerate(transcripts(ws, 3)):
        pend(ws, f"s{n}", path, ws.root)
    model = Scripted(RateLimited("claude-cli: rate limited (429): slow down"))
    report = sweep.sweep(ws, lambda _: chain(model), later())
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
    report = sweep.sweep(ws, lambda _: chain(model), later())
    assert [(o.session_id, o.status) for o in report.outcomes] == [("idle", "extracted")]
    assert session_of(ws, "busy").status == "open"
    adopted = session_of(ws, "idle")
    assert adopted.trigger == "sweep" and adopted.status == "extracted"


def test_a_finished_session_asked_for_again_without_news_changes_nothing(ws: Workspace) -> None:
    assert ws.root is not None
    (path,) = transcripts(ws, 1)
    pend(ws, "s1", path, ws.root)
    model = Scripted(extraction(item(ANSWER)))
    sweep.sweep(ws, lambda _: chain(model), later())
    count = sum(1 for _ in ws.log().read())
    again = sweep.sweep(ws, lambda _: chain(model), later(), ids=["s1"])
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
    report = sweep.sweep(ws, lambda _: chain(model), later())
    assert [(o.session_id, o.status) for o in report.outcomes] == [("mine", "extracted")]
    assert [(sid, "daily budget" in why) for sid, why in report.deferred] == [("theirs", True)]


def from_another_machine(ws: Workspace, tmp_path: Path, event: SessionPending) -> None:
    """``event`` as sync brings it: in another device's folder of this home's log."""
    theirs = tmp_path / "their-home"
    if not devices.is_per_device(ws.home):
        devices.to_devices(ws.home)
    EventLog(theirs).append([event])
    devices.to_devices(Home(theirs))
    (device,) = devices.device_dirs(Home(theirs))
    shutil.copytree(theirs / "events" / device, ws.home.device(device))
    ws.catch_up()


def their_session(ws: Workspace, tmp_path: Path, session_id: str) -> None:
    assert ws.root is not None
    gone = str(tmp_path / "on-their-machine" / f"{session_id}.jsonl")
    from_another_machine(ws, tmp_path, SessionPending(
        session_id=session_id, transcript=gone, cwd=str(ws.root), project=ws.root.name,
        trigger="SessionEnd", size=4000,
    ))  # fmt: skip


def test_a_session_whose_transcript_is_on_another_machine_is_left_to_it(
    ws: Workspace, tmp_path: Path
) -> None:
    """A synced log holds every machine's sessions; each machine extracts its own."""
    assert ws.root is not None
    (here,) = transcripts(ws, 1, substantive=False)
    pend(ws, "mine", here, ws.root)
    their_session(ws, tmp_path, "theirs")
    report = sweep.sweep(ws, lambda _: chain(Scripted()), later())
    assert [o.session_id for o in report.outcomes] == ["mine"]
    assert session_of(ws, "theirs").status == "pending"
    assert sweep.select(ws.home, ids=["theirs"])  # asked for by name, it is still there
    counted = reading.extraction(ws)["sessions"]  # what stats says: none waits here
    assert counted["pending"] == 0 and counted["elsewhere"] == 1  # type: ignore[index]


@pytest.mark.parametrize("flat", [True, False])
def test_a_session_of_this_machine_without_a_transcript_is_skipped(
    ws: Workspace, tmp_path: Path, flat: bool
) -> None:
    """``claude -p --no-session-persistence`` writes no transcript; an old one is deleted:
    the session settles as skipped, with the reason, in a log kept per device or not."""
    assert ws.root is not None
    if not flat:
        their_session(ws, tmp_path, "theirs")
    never = ws.root.parent / "never-written.jsonl"
    never.write_text("")
    pend(ws, "gone", never, ws.root)
    never.unlink()
    ws.log("test").append(
        [SessionPending(session_id="none", cwd=str(ws.root), trigger="SessionEnd")]
    )
    report = sweep.sweep(ws, lambda _: chain(Scripted()), later())
    outcomes = {o.session_id: (o.status, o.reason) for o in report.outcomes}
    assert outcomes == {
        "gone": ("skipped", f"no transcript: {never} is not there (never written, or deleted)"),
        "none": ("skipped", "no transcript: Claude Code gave no transcript path"),
    }
    assert session_of(ws, "gone").status == "skipped"


def test_a_session_that_started_without_a_transcript_settles_once_idle(ws: Workspace) -> None:
    assert ws.root is not None
    never = ws.root.parent / "never.jsonl"
    never.write_text("")
    pend(ws, "started", never, ws.root, trigger="SessionStart")
    never.unlink()
    assert sweep.stale_open(ws.home, time.time()) == []  # just started: it may still write
    late = time.time() + sweep.IDLE_SECONDS + 1
    (stale,) = sweep.stale_open(ws.home, late)
    sweep.adopt(ws, [stale])
    report = sweep.sweep(ws, lambda _: chain(Scripted()), later())
    assert [(o.session_id, o.status) for o in report.outcomes] == [("started", "skipped")]
