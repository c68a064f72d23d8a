"""SessionEnd, PreCompact and the session side of SessionStart, as Claude Code runs them.

Each hook is a fresh process with JSON on stdin.  Whatever happens it
prints valid output and exits 0 at once; the extraction it starts runs
detached (a fake ``claude`` first on PATH answers it here).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from memlog.eventlog.events import MemoryEvolved, Observed, SessionPending, SessionProgress
from memlog.eventlog.log import EventLog
from memlog.home import Home
from memlog.hooks.recorder import settled
from memlog.tests.capture.extraction.helpers import FIXTURES, extraction, git_project, item
from memlog.tests.fake_claude import install

CONVENTION = "Open every user-supplied text file with encoding utf-8-sig."


def hook_env(home: Path, tmp_path: Path, **extra: str) -> dict[str, str]:
    """The environment Claude Code gives a hook, with this home and the fake ``claude``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMLOG_", "CLAUDE"))}
    bin_dir = tmp_path / "bin"
    if not (bin_dir / "claude").exists():
        install(bin_dir)
    env.update(
        MEMLOG_HOME=str(home), PATH=f"{bin_dir}{os.pathsep}{env['PATH']}",
        MEMLOG_RESIDENT_MINUTES="0",
        MEMLOG_EMBEDDING_PROVIDER="hashing", MEMLOG_KEYWORD_PROVIDER="local",
        MEMLOG_EXTRACTION_PROVIDER="claude-cli", CLAUDECODE="1",
        FAKE_CLAUDE_ANSWERS=json.dumps([extraction(item(CONVENTION, scope="feature/csv-bom"))]),
        FAKE_CLAUDE_LOG=str(tmp_path / "claude-calls.jsonl"),
    )  # fmt: skip
    env.update(extra)
    return env


def run(name: str, payload: bytes | None, env: dict[str, str], cwd: Path) -> tuple[str, float]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "memlog", "hook", name], input=payload, capture_output=True,
        stdin=subprocess.DEVNULL if payload is None else None, env=env, cwd=cwd, timeout=30,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert settled(Home(Path(env["MEMLOG_HOME"]))), "the start's recorder did not finish"
    lines = done.stdout.decode().splitlines()
    assert len(lines) == 1, done.stdout
    json.loads(lines[0])  # valid JSON, nothing else
    return lines[0], time.monotonic() - started


def payload(session: str, transcript: Path, cwd: Path, **more: Any) -> bytes:
    data = {"session_id": session, "transcript_path": str(transcript), "cwd": str(cwd), **more}
    return json.dumps(data).encode()


def pending(home: Path) -> list[SessionPending]:
    return [r.event for r in EventLog(home).read() if isinstance(r.event, SessionPending)]


def wait_for(home: Path, kind: type, seconds: float = 60) -> list[Any]:
    give_up = time.monotonic() + seconds
    while time.monotonic() < give_up:
        if (home / "events").is_dir():
            found = [r.event for r in EventLog(home).read() if isinstance(r.event, kind)]
            if found:
                return found
        time.sleep(0.2)
    raise AssertionError(f"no {kind.__name__} within {seconds} s")


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, Path]:
    """A git project and a transcript of a session in it (branch switched to main)."""
    root = git_project(tmp_path)
    text = (FIXTURES / "branch_switch.jsonl").read_text().replace("/work/shop", str(root))
    transcript = tmp_path / "session.jsonl"
    transcript.write_text(text)
    return root, transcript


@pytest.mark.ac("004:session-end")
def test_session_end_records_the_session_and_extraction_runs_detached(
    memlog_home: Path, tmp_path: Path, project: tuple[Path, Path]
) -> None:
    root, transcript = project
    env = hook_env(memlog_home, tmp_path)
    out, seconds = run("session-end", payload("s-1", transcript, root, reason="other",
                                              hook_event_name="SessionEnd"), env, root)  # fmt: skip
    assert out == "{}"
    assert seconds < 1.5  # Claude Code's budget for SessionEnd hooks
    (event,) = pending(memlog_home)
    assert (event.session_id, event.trigger, event.reason) == ("s-1", "SessionEnd", "other")
    assert (event.project, event.cwd, event.transcript) == ("shop", str(root), str(transcript))
    assert event.branch == "main"  # the transcript's last line, not the checkout (feature/x)
    assert event.size == transcript.stat().st_size
    (progress,) = wait_for(memlog_home, SessionProgress)
    assert progress.status == "extracted"
    (audit,) = [r.event for r in EventLog(memlog_home).read() if isinstance(r.event, MemoryEvolved)]
    assert audit.usage.provider == "claude-cli" and audit.usage.calls == 1  # the call it made
    observed = [r.event for r in EventLog(memlog_home).read() if isinstance(r.event, Observed)]
    assert [o.description for o in observed] == [CONVENTION]
    call = json.loads((tmp_path / "claude-calls.jsonl").read_text().splitlines()[0])
    assert "Acme" not in call["stdin"] and "sk-ant-api03" not in call["stdin"]
    assert call["env"]["MEMLOG_EXTRACTING"] == "1"


def test_pre_compact_records_its_trigger(
    memlog_home: Path, tmp_path: Path, project: tuple[Path, Path]
) -> None:
    root, transcript = project
    env = hook_env(memlog_home, tmp_path, MEMLOG_EXTRACTION_PROVIDER="off")
    body = payload("s-2", transcript, root, hook_event_name="PreCompact", trigger="auto",
                   custom_instructions="")  # fmt: skip
    assert run("pre-compact", body, env, root)[0] == "{}"
    (event,) = pending(memlog_home)
    assert (event.trigger, event.reason) == ("PreCompact", "auto")


@pytest.mark.ac("004:recursion-guard")
@pytest.mark.parametrize("name", ["session-end", "pre-compact", "session-start"])
def test_inside_an_extraction_every_hook_does_nothing(
    memlog_home: Path, tmp_path: Path, project: tuple[Path, Path], name: str
) -> None:
    root, transcript = project
    env = hook_env(memlog_home, tmp_path, MEMLOG_EXTRACTING="1")
    out, _ = run(name, payload("s-3", transcript, root, source="startup"), env, root)
    expected = {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": ""}}
    assert json.loads(out) == (expected if name == "session-start" else {})
    assert not memlog_home.exists()


@pytest.mark.parametrize("stdin", [None, b"", b"{not json", b"[1]", b'{"cwd": "/nowhere"}'])
def test_no_session_no_event_still_valid_output(
    memlog_home: Path, tmp_path: Path, stdin: bytes | None
) -> None:
    env = hook_env(memlog_home, tmp_path)
    assert run("session-end", stdin, env, tmp_path)[0] == "{}"
    assert not (memlog_home / "events").exists()


def test_an_unwritable_home_is_reported_never_fatal(
    tmp_path: Path, project: tuple[Path, Path]
) -> None:
    root, transcript = project
    home = tmp_path / "home-is-a-file"
    home.write_text("not a directory")
    env = hook_env(home, tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "memlog", "hook", "session-end"],
        input=payload("s-4", transcript, root), capture_output=True, env=env, cwd=root,
        timeout=30,
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout == b"{}\n"
    assert b"memlog hook:" in done.stderr


def test_session_start_records_the_start_and_starts_a_sweep_at_most_every_few_minutes(
    memlog_home: Path, tmp_path: Path, project: tuple[Path, Path]
) -> None:
    root, transcript = project
    EventLog(memlog_home).append([SessionPending(session_id="old", trigger="SessionEnd")])
    env = hook_env(memlog_home, tmp_path, MEMLOG_EXTRACTION_PROVIDER="off")
    body = payload("s-5", transcript, root, hook_event_name="SessionStart", source="startup")
    out, _ = run("session-start", body, env, root)
    assert json.loads(out)["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    started = [e for e in pending(memlog_home) if e.trigger == "SessionStart"]
    assert [(e.session_id, e.reason, e.project) for e in started] == [("s-5", "startup", "shop")]
    stamp = memlog_home / ".sweep-started"
    first = stamp.stat().st_mtime
    run("session-start", body, env, root)
    assert stamp.stat().st_mtime == first  # no second sweep within SWEEP_INTERVAL


def test_session_start_writes_nothing_to_a_home_not_in_use(
    memlog_home: Path, tmp_path: Path, project: tuple[Path, Path]
) -> None:
    root, transcript = project
    env = hook_env(memlog_home, tmp_path)
    run("session-start", payload("s-6", transcript, root, source="startup"), env, root)
    assert not memlog_home.exists()


@pytest.mark.slow
def test_the_background_worker_ends_by_its_deadline(
    memlog_home: Path, tmp_path: Path, project: tuple[Path, Path]
) -> None:
    root, transcript = project
    size = transcript.stat().st_size
    pend = SessionPending(session_id="s-7", transcript=str(transcript), cwd=str(root),
                          project="shop", trigger="SessionEnd", size=size)  # fmt: skip
    EventLog(memlog_home).append([pend])  # (a hook would start a worker of its own)
    env = hook_env(memlog_home, tmp_path, FAKE_CLAUDE_MODE="hang")
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "memlog", "memorize", "--background", "--deadline", "20"],
        env=env, cwd=root, capture_output=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0
    assert time.monotonic() - started < 60  # the call was cut off at the deadline
    (progress,) = wait_for(memlog_home, SessionProgress, 1)
    assert progress.status == "pending" and "no answer within" in progress.reason


def test_the_session_end_path_loads_only_the_log(tmp_path: Path, memlog_home: Path) -> None:
    code = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from memlog.hooks import sessions\n"
        "payload = {'session_id': 's', 'cwd': sys.argv[1]}\n"
        "sessions.record(payload, Path(sys.argv[2]), 'SessionEnd')\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path), str(memlog_home)], capture_output=True,
        text=True, timeout=60, check=True,
    )  # fmt: skip
    modules = json.loads(done.stdout)
    heavy = ("click", "httpx", "numpy", "yaml", "sqlite3", "mcp", "tokenizers")
    assert not [m for m in modules if m.split(".")[0] in heavy]
    assert not [m for m in modules if m.startswith(("memlog.commands", "memlog.capture"))]
    assert shutil.which("true")  # the environment keeps coreutils for the probe
