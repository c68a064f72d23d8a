"""The resident ranker: starts answered by a process that stays loaded, never worse
than a start ranked in the hook's own process."""

from __future__ import annotations

import contextlib
import fcntl
import gc
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memlog.commands.hook import hook
from memlog.eventlog.events import Recalled, SessionPending
from memlog.eventlog.log import EventLog
from memlog.home import Home
from memlog.hooks import recorder, resident, resident_server
from memlog.tests.support import FIXTURES

KB = FIXTURES / "knowledge-bank-6bb5ea25"
HOOK = [sys.executable, "-m", "memlog", "hook", "session-start"]
#: residents a test started, waited for when it ends
STARTED: list[subprocess.Popen[bytes]] = []


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home holding the real knowledge bank, imported once."""
    home = tmp_path_factory.mktemp("template") / "home"
    env = {**os.environ, "MEMLOG_HOME": str(home)}
    subprocess.run([sys.executable, "-m", "memlog", "import", str(KB)], env=env, check=True,
                   capture_output=True, timeout=300)  # fmt: skip
    return home


@pytest.fixture
def home(template: Path, memlog_home: Path) -> Path:
    shutil.copytree(template, memlog_home)
    return memlog_home


@pytest.fixture
def runtime(monkeypatch: pytest.MonkeyPatch, home: Path) -> Iterator[Path]:
    """A socket folder of this test's own (short: a socket's path holds ~100 bytes);
    whatever resident is left is stopped."""
    folder = Path(tempfile.mkdtemp(prefix="mr-", dir="/tmp"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))
    monkeypatch.setenv("MEMLOG_RESIDENT_MINUTES", "1")
    yield folder
    stop_and_wait(home)
    while STARTED:
        STARTED.pop().wait(30)
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


def payload(project: Path, session: str) -> dict[str, Any]:
    return {"session_id": session, "cwd": str(project), "source": "startup",
            "hook_event_name": "SessionStart"}  # fmt: skip


def start_hook(project: Path, session: str, **env: str) -> tuple[str, float]:
    """The context one hook process injects, and how long it took."""
    began = time.monotonic()
    done = subprocess.run(
        HOOK, input=json.dumps(payload(project, session)).encode(), capture_output=True,
        env={**os.environ, **env}, timeout=60, check=True,
    )  # fmt: skip
    took = time.monotonic() - began
    output = json.loads(done.stdout)["hookSpecificOutput"]
    return str(output["additionalContext"]), took


def start_resident(home: Path, project: Path, minutes: str = "1") -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "memlog", "hook", "resident", "--minutes", minutes]
    process = subprocess.Popen([*argv, "--warm", str(project)], env=dict(os.environ))
    STARTED.append(process)
    assert wait_for(lambda: resident.call(Home(home), "status") is not None), "no resident answered"
    return process


def wait_for(condition: Any, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def stop_and_wait(home: Path) -> None:
    try:
        resident.call(Home(home), "stop")
    except resident.ResidentError:
        pass
    assert wait_for(lambda: not resident.socket_path(Home(home)).exists(), 30)


def errors(home: Path) -> str:
    path = home / "hook-errors.log"
    return path.read_text() if path.exists() else ""


def test_a_resident_answers_as_the_hook_itself_would(
    home: Path, runtime: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an active feature gives the start a query to rank by; the recall the first start
    # records changes the next one's prominence, which is left out so both rank alike
    feature = project / "docs" / "features" / "023-review-loops"
    feature.mkdir(parents=True)
    (project / ".claude").mkdir()  # the project's root
    (feature / ".meta.json").write_text('{"slug": "review-loops", "status": "active"}')
    (feature / "spec.md").write_text("# Review loops\n\nReviewers flag pre-existing code.\n")
    monkeypatch.setenv("MEMLOG_FUSION_PROMINENCE_WEIGHT", "0")
    process = start_resident(home, project)
    served, _ = start_hook(project, "s-1")
    assert recorder.settled(Home(home))
    status = resident.call(Home(home), "status")
    assert status is not None and status["served"] == 1 and status["pid"] == process.pid
    stop_and_wait(home)
    assert process.wait(10) == 0
    own, _ = start_hook(project, "s-2", MEMLOG_RESIDENT_MINUTES="0")
    assert served and served == own
    assert "semantic: active (vector=0, fts5=0)" not in served  # ranked by a query
    assert not errors(home)


def test_a_prompt_is_recalled_by_the_resident_as_the_hook_would(
    home: Path, runtime: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the tests' hashing vectors say little, so no entry would reach the shipped floor:
    # a low one (for the resident and the hook alike) makes this prompt recall something
    monkeypatch.setenv("MEMLOG_RELEVANCE_FLOOR", "0.05")
    words = "How do I keep the entity registry and the markdown files in sync?"
    prompt = {"session_id": "s-1", "cwd": str(project), "prompt": words}

    def ask(session: str, **env: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "memlog", "hook", "user-prompt"], capture_output=True,
            input=json.dumps({**prompt, "session_id": session}).encode(),
            env={**os.environ, **env}, timeout=60, check=True,
        )  # fmt: skip
        return done.stdout.decode()

    start_resident(home, project)
    served = ask("s-1")
    assert recorder.settled(Home(home))
    status = resident.call(Home(home), "status")
    assert status is not None and status["served"] == 1
    stop_and_wait(home)
    own = ask("s-2", MEMLOG_RESIDENT_MINUTES="0")
    assert served and served == own and recorder.settled(Home(home))
    recalled = [r.event for r in EventLog(home).read() if isinstance(r.event, Recalled)]
    assert [(e.session_id, e.trigger) for e in recalled] == [("s-1", "prompt"), ("s-2", "prompt")]
    assert not errors(home)


def test_a_served_start_is_recorded_by_the_resident(
    home: Path, runtime: Path, project: Path
) -> None:
    start_resident(home, project)
    start_hook(project, "s-1")
    assert recorder.settled(Home(home))
    events = [r.event for r in EventLog(home).read()]
    recalled = [e for e in events if isinstance(e, Recalled)]
    assert [e.session_id for e in recalled] == ["s-1"] and recalled[0].entry_ids
    assert [e.session_id for e in events if isinstance(e, SessionPending)] == ["s-1"]


def test_the_hook_starts_a_resident_after_ranking_itself(
    home: Path, runtime: Path, project: Path
) -> None:
    first, _ = start_hook(project, "s-1")
    assert wait_for(lambda: resident.call(Home(home), "status") is not None)
    second, _ = start_hook(project, "s-2")
    status = resident.call(Home(home), "status")
    assert status is not None and status["served"] == 1
    assert first and second.splitlines()[0] == first.splitlines()[0]


def test_another_environment_is_refused_and_the_resident_leaves(
    home: Path, runtime: Path, project: Path
) -> None:
    process = start_resident(home, project)
    context, _ = start_hook(project, "s-1", MEMLOG_INJECTION_LIMIT="2")
    assert "*Memory: 2 entries from" in context  # ranked by the hook, as it is configured
    assert process.wait(30) == 0
    # the hook then started one for its own environment: the newest wins
    assert wait_for(
        lambda: (resident.call(Home(home), "status") or {}).get("pid") not in (None, process.pid)
    )


def test_a_killed_resident_leaves_a_socket_the_hook_passes_over(
    home: Path, runtime: Path, project: Path
) -> None:
    process = start_resident(home, project)
    process.kill()
    process.wait(10)
    assert resident.socket_path(Home(home)).exists()
    context, _ = start_hook(project, "s-1")
    assert context
    assert wait_for(lambda: resident.call(Home(home), "status") is not None)  # a new one took over
    assert not errors(home)


class Peer:
    """A peer on the home's socket that says what it is told, then nothing."""

    def __init__(self, home: Path, lines: list[bytes]) -> None:
        path = resident.socket_path(Home(home))
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.lock = os.open(f"{path}.lock", os.O_WRONLY | os.O_CREAT, 0o600)
        fcntl.flock(self.lock, fcntl.LOCK_EX)  # no resident the hook starts replaces it
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(path))
        self.sock.listen(4)
        self.lines = lines
        self.held: list[socket.socket] = []
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)
            for line in self.lines:
                conn.sendall(line)


@pytest.mark.parametrize(
    ("lines", "ranked_by_the_hook"),
    [([], True), ([b"not json\n"], True), ([b'{"budget": 2.5}\n'], False)],
    ids=["silent", "garbled", "silent-after-the-budget"],
)
def test_a_resident_that_fails_never_breaks_the_start(
    home: Path, runtime: Path, project: Path, lines: list[bytes], ranked_by_the_hook: bool
) -> None:
    peer = Peer(home, lines)
    try:
        context, took = start_hook(project, "s-1")
    finally:
        for conn in peer.held:
            conn.close()
        peer.sock.close()
        resident.socket_path(Home(home)).unlink(missing_ok=True)
        os.close(peer.lock)
    assert took < 2.5 + 1.0  # the budget, and the interpreter's start and exit
    assert bool(context) == ranked_by_the_hook
    assert "resident gave no answer" in errors(home)


def test_a_folder_others_may_enter_is_never_used(home: Path, runtime: Path, project: Path) -> None:
    folder = resident.folder()
    folder.mkdir(mode=0o700)
    folder.chmod(0o755)
    assert not resident.is_private(folder)
    with pytest.raises(OSError, match="not a folder only this user may enter"):
        resident_server.bind(Home(home))
    context, _ = start_hook(project, "s-1")
    assert context
    assert wait_for(lambda: "resident not started" in errors(home), 30)


def serve_in_thread(
    home: Path, minutes: float
) -> tuple[resident_server.Resident, threading.Thread]:
    bound = resident_server.bind(Home(home))
    assert bound is not None
    server = resident_server.Resident(Home(home), bound[0], minutes)

    def target() -> None:
        try:
            server.serve()
        finally:
            server.close()
            os.close(bound[1])

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return server, thread


def test_one_resident_per_home(home: Path, runtime: Path) -> None:
    server, thread = serve_in_thread(home, 1)
    assert resident_server.bind(Home(home)) is None  # the lock is held
    resident.call(Home(home), "stop")
    thread.join(10)
    assert server.leaving == "asked to stop" and not resident.socket_path(Home(home)).exists()


def test_an_idle_resident_leaves(home: Path, runtime: Path) -> None:
    server, thread = serve_in_thread(home, 0.5 / 60)
    thread.join(10)
    assert server.leaving.startswith("idle for") and not resident.socket_path(Home(home)).exists()


def test_a_resident_whose_home_is_gone_leaves(
    home: Path, runtime: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(resident_server, "TICK", 0.05)
    server, thread = serve_in_thread(home, 1)
    shutil.rmtree(home)
    thread.join(10)
    assert server.leaving == "its home is gone"


def test_turning_it_off_in_the_configuration_ends_it_after_the_start(
    home: Path, runtime: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMLOG_RESIDENT_MINUTES")
    server, thread = serve_in_thread(home, 1)
    (project / ".claude").mkdir()
    (project / ".claude" / "iflow-dev.local.md").write_text(
        "---\nmemory_resident_minutes: 0\n---\n"
    )
    context = resident.ask(payload(project, "s-1"), Home(home), time.monotonic())
    thread.join(10)
    assert context and server.leaving == "memory_resident_minutes is 0"


def open_descriptors() -> int:
    """This process's open descriptors, once the collector has freed what it can."""
    gc.collect()
    return len(os.listdir("/proc/self/fd")) - 1  # listdir's own


def described() -> str:
    found = []
    for name in os.listdir("/proc/self/fd"):
        try:
            found.append(os.readlink(f"/proc/self/fd/{name}"))
        except OSError:
            pass
    return " ".join(sorted(found))


def test_many_starts_leave_no_descriptor_open(home: Path, runtime: Path, project: Path) -> None:
    """A leak of one descriptor per start would show as two dozen; a start still
    recording when counted holds a few (its connection, the log's lock and segment)."""
    before = open_descriptors()
    server, thread = serve_in_thread(home, 1)
    for n in range(3):  # the first starts load what stays loaded
        assert resident.ask(payload(project, f"s-{n}"), Home(home), time.monotonic())
    during = open_descriptors()
    for n in range(3, 27):
        assert resident.ask(payload(project, f"s-{n}"), Home(home), time.monotonic())
    assert open_descriptors() <= during + 3, described()
    resident.call(Home(home), "stop")
    thread.join(10)
    assert server.served == 27
    assert open_descriptors() <= before, described()


def test_status_and_stop_say_when_none_runs(home: Path, runtime: Path) -> None:
    runner = CliRunner()
    status = runner.invoke(hook, ["resident", "--status"])
    assert status.exit_code == 0 and json.loads(status.output) == {"running": False}
    stop = runner.invoke(hook, ["resident", "--stop"])
    assert stop.exit_code == 0 and stop.output.startswith("no resident runs for")


def test_turned_off_in_the_environment_the_hook_asks_no_one(
    home: Path, runtime: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, thread = serve_in_thread(home, 1)
    monkeypatch.setenv("MEMLOG_RESIDENT_MINUTES", "0")
    assert resident.ask(payload(project, "s-1"), Home(home), time.monotonic()) is None
    resident.call(Home(home), "stop")
    thread.join(10)
    assert server.served == 0


@pytest.mark.slow
def test_real_claude_code_starts_are_served_by_the_resident(tmp_path: Path) -> None:
    """Two sessions of the real Claude Code CLI: the first start ranks in the hook's own
    process and starts the resident, the second is answered by it (so nothing Claude
    Code sets per session is in the key)."""
    from memlog.tests.claude_code import ClaudeCode, claude_binary
    from memlog.tests.messages_api import MessagesAPI

    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    with MessagesAPI(text="hello") as api:
        bin_dir = str(Path(sys.executable).parent)  # memlog of this test run, first on PATH
        extra = {"PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
                 "MEMLOG_RESIDENT_MINUTES": "1"}  # fmt: skip
        claude = ClaudeCode(claude_binary(), tmp_path / "home", api.url, extra)
        claude.home.mkdir()
        memory = claude.home / ".claude" / "iflow" / "memory"  # the default home under HOME
        subprocess.run([sys.executable, "-m", "memlog", "import", str(KB)], check=True,
                       env={**claude.env(), "MEMLOG_HOME": str(memory)},
                       capture_output=True, timeout=300)  # fmt: skip
        subprocess.run([sys.executable, "-m", "memlog", "setup"], env=claude.env(), cwd=project,
                       capture_output=True, timeout=120, check=True)  # fmt: skip
        try:
            for _ in range(2):
                ran = claude.run(["-p", "hi", "--output-format", "json"], cwd=project)
                assert ran.returncode == 0, ran.stdout + ran.stderr
                assert recorder.settled(Home(memory))
                assert wait_for(lambda: resident.call(Home(memory), "status") is not None)
            status = resident.call(Home(memory), "status")
        finally:
            stop_and_wait(memory)
        sent = [json.dumps(message["messages"]) for message in api.messages]
    assert status is not None and status["served"] == 1, status
    injected = [text for text in sent if "## Engineering Memory (from knowledge bank)" in text]
    assert len(injected) == 2
    recalled = [r.event for r in EventLog(memory).read() if isinstance(r.event, Recalled)]
    assert len(recalled) == 2 and all(e.entry_ids for e in recalled)
    assert not errors(memory)


def raw_request(home: Path, data: bytes, wait: float = 5.0) -> bytes:
    """Send ``data`` as it is on a fresh connection; what came back (b"" when closed)."""
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(wait)
        sock.connect(str(resident.socket_path(Home(home))))
        with contextlib.suppress(OSError):
            sock.sendall(data)
        try:
            return sock.recv(1 << 16)
        except OSError:
            return b""


HOSTILE = [
    b"[" * 5000 + b"]" * 5000 + b"\n",
    b'{"op": "start", "payload": ' + b"[" * 200 + b"]" * 200 + b"}\n",
    b"\xff\xfe not even UTF-8\n",
    b"[1, 2, 3]\n",
    b'{"op": "start", "key": "x", "started": "yesterday", "payload": {"cwd": 5}}\n',
    b'{"op": "' + b"x" * 100 + b'"}\n',
    b'{"op": "status", "pad": "' + b"x" * (200 << 10) + b'"}\n',
]


def test_the_resident_survives_any_message(home: Path, runtime: Path, project: Path) -> None:
    start_resident(home, project)
    for data in HOSTILE:
        answer = raw_request(home, data)
        assert answer == b"" or b"refused" in answer, (data[:40], answer)
        assert resident.call(Home(home), "status") is not None, data[:40]
    context, _ = start_hook(project, "after-hostile")
    assert "Engineering Memory" in context
    assert resident.call(Home(home), "status")["served"] == 1  # type: ignore[index]


def test_silent_peers_keep_no_start_waiting(home: Path, runtime: Path, project: Path) -> None:
    start_resident(home, project)
    silent = []
    try:
        for _ in range(200):
            sock = socket.socket(socket.AF_UNIX)
            sock.connect(str(resident.socket_path(Home(home))))
            silent.append(sock)
        # each says nothing; one at a time they would hold a start ~1 s each
        assert resident.call(Home(home), "status", wait=2.0) is not None
        context, _ = start_hook(project, "among-silent-peers")
        assert "Engineering Memory" in context
        assert resident.call(Home(home), "status")["served"] == 1  # type: ignore[index]
    finally:
        for sock in silent:
            sock.close()


def test_bad_connections_add_a_few_lines_to_the_error_log(
    home: Path, runtime: Path, project: Path
) -> None:
    start_resident(home, project)
    for _ in range(300):
        raw_request(home, b"not json\n")
    assert wait_for(lambda: "that is not JSON (256 so far)" in errors(home))
    lines = [line for line in errors(home).splitlines() if "not JSON" in line]
    assert len(lines) == 9  # the 1st, 2nd, 4th … 256th


def test_the_error_log_rolls_over_instead_of_growing(home: Path) -> None:
    from memlog.hooks.common import HOOK_LOG_MAX, log_error

    for number in range(HOOK_LOG_MAX // 100 * 3):
        log_error(Home(home), f"failure number {number:05d} " + "x" * 70)
    current = home / "hook-errors.log"
    older = home / "hook-errors.log.1"
    assert current.stat().st_size < HOOK_LOG_MAX and older.stat().st_size <= HOOK_LOG_MAX + 200
    assert "failure number" in current.read_text().splitlines()[-1]


def test_a_prompt_larger_than_the_resident_takes_is_ranked_by_the_hook(
    home: Path, runtime: Path, project: Path
) -> None:
    start_resident(home, project)
    huge = {**payload(project, "long-prompt"), "prompt": "parser retries " * 8000}
    assert resident.ask(huge, Home(home), time.monotonic(), "prompt") is None  # not sent at all
    assert "resident gave no answer" not in errors(home)
    assert resident.call(Home(home), "status")["served"] == 0  # type: ignore[index]
