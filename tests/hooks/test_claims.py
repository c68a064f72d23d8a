"""One injection per session start: the claim, and two registrations of the hook at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from memlog.eventlog.events import Observed, Recalled
from memlog.eventlog.log import EventLog
from memlog.home import Home
from memlog.hooks.claims import CLAIM_SECONDS, SWEEP_SECONDS, claim, claim_key
from memlog.hooks.recorder import settled

START = {"session_id": "abc", "source": "startup"}


def test_the_first_run_claims_and_a_second_is_refused(tmp_path: Path) -> None:
    assert claim(Home(tmp_path), START) is True
    assert claim(Home(tmp_path), START) is False
    assert claim(Home(tmp_path), {**START, "source": "compact", "prompt_id": "p1"}) is True
    assert claim(Home(tmp_path), {**START, "source": "compact", "prompt_id": "p2"}) is True
    assert claim(Home(tmp_path), {**START, "session_id": "other"}) is True


def test_a_stale_claim_is_taken_over(tmp_path: Path) -> None:
    assert claim(Home(tmp_path), START)
    later = time.time() + CLAIM_SECONDS + 1
    assert claim(Home(tmp_path), START, now=later) is True  # the same session resumed later
    assert claim(Home(tmp_path), START) is False


def test_no_session_id_never_dedupes(tmp_path: Path) -> None:
    assert claim_key({"source": "startup"}) is None
    assert claim(Home(tmp_path), {}) and claim(Home(tmp_path), {})
    assert not (tmp_path / ".hook-claims").exists()


def test_old_claims_are_swept(tmp_path: Path) -> None:
    assert claim(Home(tmp_path), START)
    old = tmp_path / ".hook-claims" / str(claim_key(START))
    os.utime(old, (time.time() - SWEEP_SECONDS - 10,) * 2)
    assert claim(Home(tmp_path), {**START, "session_id": "next"})
    assert not old.exists()


def test_an_unwritable_home_does_not_stop_the_injection(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    assert claim(Home(blocked), START) is True


def test_two_registrations_of_the_hook_inject_once(memlog_home: Path, tmp_path: Path) -> None:
    """The plugin's hook and memlog setup's hook run at once for one start: one block,
    one recall event."""
    EventLog(memlog_home).append(
        [Observed(name=f"Lesson {i}", description=f"Lesson text {i}", category="patterns")
         for i in range(4)]
    )  # fmt: skip
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    payload = json.dumps({"session_id": "one-start", "cwd": str(project), "source": "startup"})
    env = {**os.environ, "MEMLOG_HOME": str(memlog_home)}
    runs = [
        subprocess.Popen([sys.executable, "-m", "memlog", "hook", "session-start"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=env, cwd=project, text=True)
        for _ in range(2)
    ]  # fmt: skip
    for run in runs:  # both get their input at once, as Claude Code gives it
        assert run.stdin is not None
        run.stdin.write(payload)
        run.stdin.close()
    outputs = [run.stdout.read() if run.stdout else "" for run in runs]
    assert [run.wait(timeout=60) for run in runs] == [0, 0]
    for run in runs:
        for stream in (run.stdout, run.stderr):
            if stream is not None:
                stream.close()
    contexts = [json.loads(out)["hookSpecificOutput"]["additionalContext"] for out in outputs]
    assert sorted(bool(c) for c in contexts) == [False, True]
    assert "Lesson text" in "".join(contexts)
    assert settled(Home(memlog_home))  # the winner's recorder has written its recall
    assert len([r for r in EventLog(memlog_home).read() if isinstance(r.event, Recalled)]) == 1
