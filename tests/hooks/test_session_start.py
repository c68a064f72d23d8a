"""The SessionStart hook as Claude Code runs it: a fresh process, JSON on stdin.

Whatever happens (no home, no stdin, bad JSON, a corrupt database, bad
configuration, a read-only home, a provider that never answers) the hook
prints one valid JSON envelope on stdout, exits 0 and stays in its budget;
what went wrong is written to ``hook-errors.log``, never to stdout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memlog.eventlog.events import Observed, Promoted, Recalled, Reembedded
from memlog.eventlog.log import EventLog
from memlog.home import Home
from memlog.hooks.recorder import settled
from memlog.projections.runner import catch_up
from memlog.tests.loopback import LoopbackServer

HEADER = "## Engineering Memory (from knowledge bank)"
SECTION_TITLES = ("### Anti-Patterns to Avoid", "### Heuristics", "### Patterns to Follow")
ERROR_LOG = "hook-errors.log"
CATEGORIES = ("anti-patterns", "heuristics", "patterns")


# -- helpers -----------------------------------------------------------------------------------


def observed(category: str, i: int) -> Observed:
    return Observed(
        name=f"{category} lesson {i}",
        description=f"Lesson {i} of the {category}: keep parser step {i} small and tested.",
        category=category,  # type: ignore[arg-type]
        project="project-a",
        keywords=("parser", f"step{i}"),
    )


def seed(home: Path, per_category: int = 4, promote: bool = False) -> list[Observed]:
    events = [observed(c, i) for c in CATEGORIES for i in range(per_category)]
    log = EventLog(home)
    log.append(events)
    if promote:
        log.append([Promoted(entry_id=e.entry_id, project="project-a") for e in events])
    return events


def project(parent: Path, settings: str | None = None, name: str = "project-b") -> Path:
    root = parent / name
    (root / ".claude").mkdir(parents=True)
    if settings is not None:
        (root / ".claude" / "iflow-dev.local.md").write_text(f"---\n{settings}\n---\n")
    return root


def hook_env(home: Path, **extra: str) -> dict[str, str]:
    """The caller's environment without memlog settings, with this home."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLOG_")}
    for name in ("OPENAI_API_KEY", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_CODE_SESSION_ATTENDED"):
        env.pop(name, None)  # (a run from inside a Claude Code session has its own)
    env["MEMLOG_HOME"] = str(home)
    env["MEMLOG_RESIDENT_MINUTES"] = "0"  # each start in a process of its own (test_resident)
    env.update(extra)
    return env


def payload(root: Path, source: str = "startup", session: str | None = None) -> bytes:
    """A SessionStart payload; each call is a new session unless ``session`` is given
    (a second run for the same session and source is a duplicate and injects nothing)."""
    return json.dumps(
        {
            "session_id": session or f"session-{uuid.uuid4()}",
            "transcript_path": str(root / "transcript.jsonl"),
            "cwd": str(root),
            "hook_event_name": "SessionStart",
            "source": source,
        }
    ).encode()


class Run:
    def __init__(self, done: subprocess.CompletedProcess[bytes], seconds: float) -> None:
        self.done = done
        self.seconds = seconds
        assert done.returncode == 0, done.stderr.decode()
        lines = done.stdout.decode().splitlines()
        assert len(lines) == 1, done.stdout  # one JSON line, nothing else
        self.envelope = json.loads(lines[0])
        assert set(self.envelope) <= {"hookSpecificOutput", "systemMessage"}
        #: what the user is shown (the first start of a home says what extraction sends)
        self.message: str = self.envelope.get("systemMessage", "")
        output = self.envelope["hookSpecificOutput"]
        assert output["hookEventName"] == "SessionStart"
        assert isinstance(output["additionalContext"], str)
        self.context: str = output["additionalContext"]
        self.stderr = done.stderr.decode()


def run_hook(
    home: Path,
    stdin: bytes | None,
    cwd: Path,
    env: dict[str, str] | None = None,
    timeout: float = 20,
) -> Run:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "memlog", "hook", "session-start"],
        input=stdin,
        stdin=subprocess.DEVNULL if stdin is None else None,
        capture_output=True,
        cwd=cwd,
        env=env if env is not None else hook_env(home),
        timeout=timeout,
    )
    took = time.monotonic() - started
    assert settled(Home(home)), "the hook's recorder did not finish"
    return Run(done, took)


def entry_headers(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.startswith("### ") and ln not in SECTION_TITLES]


def recalls(home: Path) -> list[Recalled]:
    return [r.event for r in EventLog(home).read() if isinstance(r.event, Recalled)]


def error_log(home: Path) -> str:
    path = home / ERROR_LOG
    return path.read_text() if path.exists() else ""


# -- the normal path --------------------------------------------------------------------------


@pytest.mark.ac("023:AC-1.1", "023:AC-1.3", "023:AC-1.4")
def test_hook_injects_within_the_limit(memlog_home: Path, tmp_path: Path) -> None:
    seed(memlog_home)
    root = project(tmp_path, "memory_injection_limit: 9")
    run = run_hook(memlog_home, payload(root, session="session-1"), root)
    assert run.stderr == ""
    context = run.context
    assert context.startswith(HEADER + "\n")
    assert len(entry_headers(context)) == 9  # AC-1.3 (3 per category)
    ap, h, p = (context.index(t) for t in SECTION_TITLES)
    assert ap < h < p  # AC-1.4
    assert "\n---\n*Memory: 9 entries from 12 | semantic: active" in context
    # recorded: one entry.recalled event and the tracking file
    (recalled,) = recalls(memlog_home)
    assert recalled.session_id == "session-1" and len(recalled.ids) == 9
    assert recalled.project == "project-b"
    tracking = json.loads((memlog_home / ".last-injection.json").read_text())
    assert tracking["entries_injected"] == 9 and tracking["project"] == "project-b"
    assert error_log(memlog_home) == ""


@pytest.mark.parametrize("source", ["startup", "resume", "clear", "compact", "unheard-of"])
def test_every_source_injects(memlog_home: Path, tmp_path: Path, source: str) -> None:
    seed(memlog_home, per_category=2)
    root = project(tmp_path)
    run = run_hook(memlog_home, payload(root, source), root)
    assert len(entry_headers(run.context)) == 6


def test_compact_can_be_switched_off(memlog_home: Path, tmp_path: Path) -> None:
    seed(memlog_home, per_category=2)
    root = project(tmp_path, "memory_inject_on_compact: false")
    assert run_hook(memlog_home, payload(root, "compact"), root).context == ""
    assert recalls(memlog_home) == []
    assert len(entry_headers(run_hook(memlog_home, payload(root, "clear"), root).context)) == 6


def test_injection_disabled(memlog_home: Path, tmp_path: Path) -> None:
    seed(memlog_home, per_category=2)
    root = project(tmp_path, "memory_injection_enabled: false")
    run = run_hook(memlog_home, payload(root), root)
    assert run.context == ""
    assert recalls(memlog_home) == []
    assert not (memlog_home / ".last-injection.json").exists()


def test_semantic_off_injects_the_markdown_store(memlog_home: Path, tmp_path: Path) -> None:
    seed(memlog_home, per_category=2, promote=True)
    catch_up(memlog_home)  # writes the global store files
    (memlog_home / "memory.db").unlink()
    root = project(tmp_path, "memory_semantic_enabled: false")
    run = run_hook(memlog_home, payload(root), root)
    assert len(entry_headers(run.context)) == 6
    assert run.context.endswith(
        "\n---\n*Memory: 6 entries (0 local, 6 global) | semantic: disabled*\n"
    )
    assert not (memlog_home / "memory.db").exists()


# -- whatever fails, a valid envelope and exit 0 -------------------------------------------------


def test_missing_and_empty_home(tmp_path: Path) -> None:
    root = project(tmp_path)
    missing = tmp_path / "no-such-home"
    run = run_hook(missing, payload(root), root)
    assert run.context == "" and run.stderr == ""
    assert not missing.exists()  # an empty memory is no error and writes nothing
    empty = tmp_path / "empty-home"
    empty.mkdir()
    run = run_hook(empty, payload(root), root)
    assert run.context == "" and os.listdir(empty) == []


def test_missing_stdin_means_startup_in_the_current_directory(
    memlog_home: Path, tmp_path: Path
) -> None:
    seed(memlog_home, per_category=1)
    root = project(tmp_path)
    run = run_hook(memlog_home, None, root)
    assert len(entry_headers(run.context)) == 3
    assert recalls(memlog_home)[0].project == "project-b"


@pytest.mark.parametrize("stdin", [b"{not json", b"[1, 2, 3]", b"\xff\xfe garbage", b""])
def test_invalid_stdin(memlog_home: Path, tmp_path: Path, stdin: bytes) -> None:
    seed(memlog_home, per_category=1)
    root = project(tmp_path)
    run = run_hook(memlog_home, stdin, root)
    assert len(entry_headers(run.context)) == 3


def test_corrupt_database_is_rebuilt_from_the_log(memlog_home: Path, tmp_path: Path) -> None:
    seed(memlog_home, per_category=2)
    catch_up(memlog_home)
    for suffix in ("-wal", "-shm"):
        Path(f"{memlog_home / 'memory.db'}{suffix}").unlink(missing_ok=True)
    (memlog_home / "memory.db").write_bytes(b"\x00garbage" * 4096)
    root = project(tmp_path)
    run = run_hook(memlog_home, payload(root), root)
    assert len(entry_headers(run.context)) == 6


def test_unopenable_database_falls_back_and_logs(memlog_home: Path, tmp_path: Path) -> None:
    seed(memlog_home, per_category=2, promote=True)
    catch_up(memlog_home)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{memlog_home / 'memory.db'}{suffix}").unlink(missing_ok=True)
    (memlog_home / "memory.db").mkdir()
    root = project(tmp_path)
    run = run_hook(memlog_home, payload(root), root)
    assert "semantic: disabled" in run.context  # the markdown pipeline
    assert len(entry_headers(run.context)) == 6
    assert "semantic retrieval failed" in error_log(memlog_home)


def test_invalid_configuration_uses_defaults_and_logs(memlog_home: Path, tmp_path: Path) -> None:
    seed(memlog_home, per_category=8)
    root = project(tmp_path)
    (root / ".claude" / "iflow-dev.local.md").write_text(
        "---\nmemory_injection_limit: [3\nmemory_injection_enabled: false\n---\n"
    )
    run = run_hook(memlog_home, payload(root), root)
    assert len(entry_headers(run.context)) == 20  # the default limit, and enabled
    assert "not valid YAML" in error_log(memlog_home)
    (root / ".claude" / "iflow-dev.local.md").write_text("---\nmemory_injection_limit: lots\n---\n")
    run = run_hook(memlog_home, payload(root), root)
    assert len(entry_headers(run.context)) == 20
    assert "memory_injection_limit: 'lots'" in error_log(memlog_home)


@pytest.fixture
def read_only(memlog_home: Path) -> Iterator[Path]:
    """``memlog_home`` remounted read-only (a bind mount over itself)."""
    memlog_home.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("a read-only bind mount needs root")
    bind = subprocess.run(
        ["mount", "--bind", str(memlog_home), str(memlog_home)], capture_output=True, text=True
    )
    if bind.returncode != 0:
        pytest.skip(f"mount --bind not permitted here: {bind.stderr.strip()}")
    try:
        remount = subprocess.run(
            ["mount", "-o", "remount,ro,bind", str(memlog_home)], capture_output=True, text=True
        )
        if remount.returncode != 0:
            pytest.skip(f"read-only remount not permitted here: {remount.stderr.strip()}")
        yield memlog_home
    finally:
        subprocess.run(["umount", str(memlog_home)], check=False, capture_output=True)


def test_read_only_home(memlog_home: Path, tmp_path: Path, request: Any) -> None:
    seed(memlog_home, per_category=2, promote=True)
    catch_up(memlog_home)
    EventLog(memlog_home).append([observed("patterns", 99)])  # a view to catch up with
    home = request.getfixturevalue("read_only")
    with pytest.raises(OSError):
        (home / "probe").write_text("x")
    root = project(tmp_path)
    run = run_hook(home, payload(root), root)
    assert run.context.startswith(HEADER)
    assert len(entry_headers(run.context)) >= 6
    # nothing can be written to the home: the trouble is reported on stderr
    assert "memlog hook:" in run.stderr and "Read-only file system" in run.stderr
    assert not (home / ERROR_LOG).exists()


def test_hanging_provider_is_cut_off_at_the_deadline(memlog_home: Path, tmp_path: Path) -> None:
    events = seed(memlog_home, per_category=3)
    dims = 8
    rng = np.random.default_rng(3)
    vectors = []
    for event in events:
        values = rng.standard_normal(dims).astype("<f4")
        vectors.append(
            Reembedded(
                entry_id=event.entry_id,
                provider="openai",
                model="text-embedding-3-small",
                dimensions=dims,
                vector=(values / np.linalg.norm(values)).astype("<f4").tobytes(),
            )
        )
    EventLog(memlog_home).append(vectors)
    # the hook's budget leaves room for a slow start on a loaded machine; the provider
    # hangs far past it, and the query embedding's own deadline (1.5 s) cuts it off
    budget_ms = 4000
    with LoopbackServer(lambda *_: (200, {}, b'{"data": []}'), delay=30) as server:
        root = project(
            tmp_path,
            "memory_embedding_provider: openai\n"
            f"memory_embedding_dimensions: {dims}\n"
            f"memory_embedding_base_url: {server.url}/v1\n"
            f"memory_hook_budget_ms: {budget_ms}\n"
            "memory_query_embedding_budget_ms: 1500\n",
        )
        (root / "docs" / "features" / "001-parser").mkdir(parents=True)
        (root / "docs" / "features" / "001-parser" / ".meta.json").write_text(
            json.dumps({"slug": "parser", "status": "active"})
        )
        env = hook_env(memlog_home, OPENAI_API_KEY=f"sk-test-{uuid.uuid4().hex}")
        run = run_hook(memlog_home, payload(root), root, env=env)
        assert server.requests, "the query embedding was never attempted"
    assert run.seconds < budget_ms / 1000 + 1.0
    # ranked without the vector signal: keywords and prominence
    assert len(entry_headers(run.context)) == 9
    assert "vector=0" in run.context
    log = error_log(memlog_home)
    # cut off either by the wait (late) or by the provider's own deadline, whichever first
    assert "query embedding" in log and ("late" in log or "deadline passed" in log)
    tracking = json.loads((memlog_home / ".last-injection.json").read_text())
    assert tracking["mode"] in ("keyword", "prominence")
    assert "sk-test" not in log + run.stderr + run.context


LOCKER = r"""
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
time.sleep(60)
"""


@pytest.mark.slow
def test_the_hook_answers_while_another_process_holds_the_write_lock(
    memlog_home: Path, tmp_path: Path
) -> None:
    """Regression of failure 6 of issue 12: with ``BEGIN EXCLUSIVE`` held on memory.db the
    hook waited for the lock and answered empty at its deadline (2.38 s); readers are not
    blocked by a writer in WAL mode, so it reads the view as it stands instead."""
    seed(memlog_home)
    root = project(tmp_path)
    env = hook_env(memlog_home, MEMLOG_EMBEDDING_PROVIDER="hashing")
    first = run_hook(memlog_home, payload(root), root, env=env)  # builds the views
    assert len(entry_headers(first.context)) == 12
    EventLog(memlog_home).append([observed("patterns", 99)])  # a catch-up is now needed
    locker = subprocess.Popen(
        [sys.executable, "-c", LOCKER, str(memlog_home / "memory.db")],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert locker.stdout is not None and locker.stdout.readline().strip() == "locked"
        run = run_hook(memlog_home, payload(root), root, env=env)
    finally:
        locker.kill()
        locker.communicate()
    assert run.context.startswith(HEADER)
    assert len(entry_headers(run.context)) == 12  # the view as it stood, without lesson 99
    assert "views not caught up" in error_log(memlog_home)
    assert "deadline reached" not in error_log(memlog_home)
    assert len(recalls(memlog_home)) == 2  # the recall is recorded all the same
