"""Hooks never wait for the log's lock; writers say who holds it and give up in time.

With ``events/.lock`` held (a writer suspended with Ctrl-Z), ``hook
session-end`` and ``hook pre-compact`` record within their budget: their
event goes to the spool, which the next writer folds in, in order, exactly
once, whatever is killed when.  ``observe`` says which process holds the
lock after two seconds and gives up with one clear line after
``memory_lock_wait_seconds``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from memlog.errors import LogBusy
from memlog.eventlog import spool
from memlog.eventlog.events import Observed, SessionPending
from memlog.eventlog.log import EventLog
from memlog.eventlog.verify import verify_log
from memlog.home import Home

HOLDER = r"""
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(600)
"""


@pytest.fixture
def held(memlog_home: Path) -> Iterator[subprocess.Popen[str]]:
    """The log's lock held by a process that is then stopped (as Ctrl-Z stops a writer)."""
    EventLog(memlog_home).append([Observed(name="A", description="first", category="facts")])
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(memlog_home / "events" / ".lock")],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    holder.send_signal(signal.SIGSTOP)
    yield holder
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    holder.stdout.close()


def release(holder: subprocess.Popen[str]) -> None:
    holder.send_signal(signal.SIGKILL)
    holder.wait()


def run_hook(home: Path, name: str, session: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    payload = {"session_id": session, "transcript_path": "", "cwd": str(cwd), "reason": "exit"}
    env = {**os.environ, "MEMLOG_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "memlog", "hook", name], input=json.dumps(payload),
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip


def sessions_in(home: Path) -> list[str]:
    return [
        r.event.session_id for r in EventLog(home).read() if isinstance(r.event, SessionPending)
    ]


@pytest.mark.slow
@pytest.mark.parametrize("hook", ["session-end", "pre-compact"])
def test_hooks_record_while_a_writer_holds_the_lock(
    memlog_home: Path, tmp_path: Path, held: subprocess.Popen[str], hook: str
) -> None:
    done = run_hook(memlog_home, hook, "s-1", tmp_path)
    assert done.returncode == 0 and done.stdout == "{}\n", done.stderr
    assert held.poll() is None  # the lock was still held: the hook did not wait for it
    assert len(spool.waiting(Home(memlog_home))) == 1 and sessions_in(memlog_home) == []
    assert not (memlog_home / "hook-errors.log").exists()

    release(held)
    EventLog(memlog_home).append([Observed(name="B", description="next", category="facts")])
    events = [r.event for r in EventLog(memlog_home).read()]
    assert [type(e).__name__ for e in events] == ["Observed", "SessionPending", "Observed"]
    assert sessions_in(memlog_home) == ["s-1"] and spool.waiting(Home(memlog_home)) == []
    assert verify_log(EventLog(memlog_home)).clean


def test_a_spooled_event_is_folded_in_order_by_the_next_writer(memlog_home: Path) -> None:
    log = EventLog(memlog_home)
    log.append([Observed(name="A", description="first", category="facts")])
    for n in range(3):
        spool.spool(log.home, [SessionPending(session_id=f"s-{n}", id=f"id-{n}")])
    (added,) = log.append([Observed(name="B", description="next", category="facts")])
    events = [r.event for r in log.read()]
    assert [getattr(e, "session_id", getattr(e, "name", "")) for e in events] == [
        "A", "s-0", "s-1", "s-2", "B",
    ]  # fmt: skip
    assert [e.id for e in events[1:4]] == ["id-0", "id-1", "id-2"]  # the ids the hook gave
    assert added.seq == 5 and spool.waiting(log.home) == []


def test_append_or_spool_appends_when_the_lock_is_free(memlog_home: Path) -> None:
    log = EventLog(memlog_home)
    assert log.append_or_spool([SessionPending(session_id="s")]) is True
    assert sessions_in(memlog_home) == ["s"] and not spool.waiting(log.home)


def test_a_spooled_file_already_in_the_log_is_not_folded_again(memlog_home: Path) -> None:
    """A folder killed after the batch was in the log and before the file went."""
    log = EventLog(memlog_home)
    pending = SessionPending(session_id="s", id="the-id")
    with log._locked():
        log._append_locked([pending], spooled=True)  # folded: then killed, the file left
    path = spool.spool(log.home, [pending])
    log.append([Observed(name="B", description="next", category="facts")])
    assert sessions_in(memlog_home) == ["s"] and not path.exists()


def test_an_unreadable_spooled_file_is_kept_in_quarantine(memlog_home: Path) -> None:
    from memlog.eventlog.segments import read_quarantine

    log = EventLog(memlog_home)
    log.append([Observed(name="A", description="first", category="facts")])
    bad = log.home.spool / "00000000000000000001-1-ab.json"
    bad.parent.mkdir()
    bad.write_bytes(b"[{not json")
    log.append([Observed(name="B", description="next", category="facts")])
    (record,) = read_quarantine(Home(memlog_home))
    assert record.reason == "unreadable spooled file" and not bad.exists()


def test_a_writer_gives_up_at_its_deadline_naming_the_holder(
    memlog_home: Path, held: subprocess.Popen[str]
) -> None:
    log = EventLog(memlog_home, lock_wait=0.5)
    with pytest.raises(LogBusy) as caught:
        log.append([Observed(name="B", description="next", category="facts")])
    message = str(caught.value)
    assert (
        f"is locked by pid {held.pid} (" in message and "for 0.5 s: nothing was written" in message
    )
    release(held)
    log.append([Observed(name="C", description="then", category="facts")])  # the lock works
    assert [r.event.seq for r in log.read()] == [1, 2]


def test_a_writer_in_another_thread_gives_up_too(
    memlog_home: Path, held: subprocess.Popen[str]
) -> None:
    """Off the main thread no timer can cut a wait short: a thread of its own waits."""
    import threading

    said: list[str] = []

    def work() -> None:
        try:
            EventLog(memlog_home, lock_wait=0.5).append(
                [Observed(name="B", description="next", category="facts")]
            )
        except LogBusy as exc:
            said.append(str(exc))

    worker = threading.Thread(target=work)
    worker.start()
    worker.join(30)
    assert len(said) == 1 and f"is locked by pid {held.pid} (" in said[0]


def test_a_timer_already_set_is_put_back(memlog_home: Path, held: subprocess.Popen[str]) -> None:
    """The background worker's alarm (its deadline) survives a wait for the log."""
    signal.setitimer(signal.ITIMER_REAL, 100)
    try:
        with pytest.raises(LogBusy):
            EventLog(memlog_home, lock_wait=0.3).append(
                [Observed(name="B", description="next", category="facts")]
            )
    finally:
        left = signal.setitimer(signal.ITIMER_REAL, 0)[0]
    assert 95 < left < 100


@pytest.mark.slow
def test_observe_says_who_holds_the_lock_and_gives_up(
    memlog_home: Path, tmp_path: Path, held: subprocess.Popen[str]
) -> None:
    env = {**os.environ, "MEMLOG_HOME": str(memlog_home), "MEMLOG_LOCK_WAIT_SECONDS": "4"}
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "memlog", "observe", "--name", "B", "--description", "Next.",
         "--category", "facts"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60,
    )  # fmt: skip
    assert time.monotonic() - began < 30
    lines = done.stderr.splitlines()
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith(f"memlog: waiting for the log: pid {held.pid} (")
    assert lines[-1].startswith(f"Error: the log {memlog_home / 'events'} is locked by pid ")
    assert lines[-1].endswith(
        "for 4 s: nothing was written (memory_lock_wait_seconds sets how long to wait)"
    )
    assert len(lines) == 2 and [r.event.seq for r in EventLog(memlog_home).read()] == [1]


# -- exactly once, whatever is killed when ----------------------------------------------

FOLDER = r"""
import os, signal, sys
from pathlib import Path
from memlog.eventlog import log as log_module, spool
from memlog.eventlog.events import Observed

home, step, at = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
calls = {"write": 0, "written": 0, "done": 0}
real_write, real_done = log_module.EventLog._write, spool.done

def kill_at(name):
    calls[name] += 1
    if step == name and calls[name] == at:
        os.kill(os.getpid(), signal.SIGKILL)

def write(self, path, data, last):
    kill_at("write")  # before the batch is written
    if step == "torn" and calls["write"] == at:
        with open(path, "ab") as handle:
            handle.write(data[: len(data) // 2])
        os.kill(os.getpid(), signal.SIGKILL)
    real_write(self, path, data, last)
    kill_at("written")  # written and synced, the file not removed yet

def done(path):
    kill_at("done")
    real_done(path)

log_module.EventLog._write = write
spool.done = done
calls_for_torn = calls
log_module.EventLog(home).append([Observed(name="W", description="the writer", category="facts")])
print("finished")
"""


def spooled_home(home: Path, count: int) -> list[str]:
    log = EventLog(home)
    log.append([Observed(name="A", description="first", category="facts")])
    ids = []
    for n in range(count):
        events = [
            SessionPending(session_id=f"s-{n}-{k}", id=f"id-{n}-{k}") for k in range(n % 2 + 1)
        ]
        spool.spool(log.home, events)  # type: ignore[arg-type]
        ids += [e.id for e in events]
    return ids


@pytest.mark.slow
def test_kill_9_at_every_step_of_a_fold_folds_each_file_exactly_once(tmp_path: Path) -> None:
    count = 3
    points = [(step, at) for step in ("write", "torn", "written", "done") for at in (1, 2, 3)]
    for step, at in points:
        home = tmp_path / f"home-{step}-{at}"
        ids = spooled_home(home, count)
        env = {**os.environ, "MEMLOG_HOME": str(home)}
        done = subprocess.run(
            [sys.executable, "-c", FOLDER, str(home), step, str(at)],
            capture_output=True, text=True, env=env, timeout=60,
        )  # fmt: skip
        assert done.returncode == -signal.SIGKILL, (step, at, done.stdout, done.stderr)
        EventLog(home).append([Observed(name="Z", description="after", category="facts")])
        events = [r.event for r in EventLog(home).read()]
        seen = Counter(e.id for e in events)
        assert all(seen[i] == 1 for i in ids), (step, at, seen)
        pending = [e.id for e in events if isinstance(e, SessionPending)]
        assert pending == ids, (step, at)  # in the order they were spooled
        names = [e.name for e in events if isinstance(e, Observed)]
        assert names in (["A", "W", "Z"], ["A", "Z"]), (step, at)  # the killed write: 0 or 1
        assert not spool.waiting(Home(home)) and verify_log(EventLog(home)).clean


HOOKS = r"""
import json, os, sys
from pathlib import Path
from memlog.eventlog.events import SessionPending
from memlog.eventlog.log import EventLog

home, tag, count, ack = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
log = EventLog(home, command="hook session-end")
fd = os.open(ack, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
for n in range(count):
    log.append_or_spool([SessionPending(session_id=f"{tag}-{n}")])
    os.write(fd, f"{tag}-{n}\n".encode())
"""

WRITER = r"""
import sys, time
from pathlib import Path
from memlog.eventlog.events import Observed
from memlog.eventlog.log import EventLog

log = EventLog(Path(sys.argv[1]))
n = 0
while True:
    n += 1
    with log._locked():
        log._append_locked([Observed(name=f"w{n}", description=f"writer {n}", category="facts")])
        time.sleep(0.02)  # holds the lock a while: hooks find it taken
"""


@pytest.mark.slow
def test_hooks_and_killed_writers_lose_and_repeat_nothing(
    memlog_home: Path, tmp_path: Path
) -> None:
    """Hooks spool while writers hold the lock and are killed at random: every recorded
    session is in the log exactly once once the last writer has gone."""
    import random

    rng = random.Random(20261125)
    EventLog(memlog_home).append([Observed(name="A", description="first", category="facts")])
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(memlog_home)]) for _ in range(2)]
    hooks = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                HOOKS,
                str(memlog_home),
                f"h{i}",
                "25",
                str(tmp_path / f"ack-{i}"),
            ]
        )  # fmt: skip
        for i in range(4)
    ]
    try:
        deadline = time.monotonic() + 60
        while any(h.poll() is None for h in hooks) and time.monotonic() < deadline:
            time.sleep(rng.uniform(0.05, 0.3))
            slot = rng.randrange(len(writers))
            writers[slot].send_signal(signal.SIGKILL)
            writers[slot].wait()
            writers[slot] = subprocess.Popen([sys.executable, "-c", WRITER, str(memlog_home)])
        assert all(h.wait(timeout=30) == 0 for h in hooks)
    finally:
        for writer in writers:
            writer.send_signal(signal.SIGKILL)
            writer.wait()
    EventLog(memlog_home).fold()
    acked = [line for i in range(4) for line in (tmp_path / f"ack-{i}").read_text().split()]
    recorded = Counter(sessions_in(memlog_home))
    assert len(acked) == 100 and all(recorded[s] == 1 for s in acked), recorded
    assert sum(recorded.values()) == 100
    for i in range(4):  # each hook's sessions in the order it recorded them
        mine = [s for s in sessions_in(memlog_home) if s.startswith(f"h{i}-")]
        assert mine == [f"h{i}-{n}" for n in range(25)]
    report = verify_log(EventLog(memlog_home))
    assert not report.sequence and len(report.damage) <= 2, report.problems()
