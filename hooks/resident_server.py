"""The resident ranker: ``memlog hook resident``, one per home, loaded between starts.

Started detached by the hook after a start it ranked itself (``start``), it
warms what a start loads (memlog's ranking, numpy, the local model and its
first forward pass), binds the home's socket (``resident.socket_path``) and
answers starts one at a time, each exactly as the hook would rank it in its
own process (``session_start.run``, with the start's own clock and budget).
After each answer it records the recall and the start itself (the recorder's
``record``, in this process), so the next start finds the views current.

It leaves, removing its socket, when ``memory_resident_minutes`` pass
without a start, when a start's configuration sets them to 0, when its home
is gone, when a start came with another key (a reinstalled memlog, another
environment: the newest wins), when a start failed or ran out of time (a
thread may still hold the last one), on ``memlog hook resident --stop``, and
on SIGTERM.  A lock beside the socket keeps one resident per home.
Failures go to ``hook-errors.log``, as the hook's do.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import socket
import time
from pathlib import Path
from typing import Any

from memlog.config import Config
from memlog.hooks import resident, user_prompt
from memlog.hooks.recorder import Handover, mark, record
from memlog.hooks.session_start import log_error, pin_blas, run, to_record, workspace

#: how often an idle resident checks that its home and socket are still there
TICK = 30.0
#: how long a connected start may take to send its request
READ_WAIT = 1.0
DEFAULT_MINUTES = Config().memory_resident_minutes


class Resident:
    """A bound socket and what it serves."""

    def __init__(self, home: Path, sock: socket.socket, minutes: float) -> None:
        self.home = home
        self.sock = sock
        self.path = resident.socket_path(home)
        self.inode = os.stat(self.path).st_ino
        self.key = resident.key(home)
        self.code = resident.code_identity()
        self.minutes = minutes
        self.since = time.time()
        self.served = 0
        self.last = time.monotonic()
        self.leaving = ""

    def serve(self) -> None:
        """Answer starts until a reason to leave."""
        while not self.leaving:
            idle = self.minutes * 60 - (time.monotonic() - self.last)
            if idle <= 0:
                self.leaving = f"idle for {self.minutes} minutes"
                break
            self.sock.settimeout(min(idle, TICK))
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                self.leaving = self._gone()
                continue
            with contextlib.closing(conn):
                self._answer(resident.Connection(conn))

    def _gone(self) -> str:
        """Why the resident should leave though no start came ("" when it should not)."""
        if not self.home.is_dir():
            return "its home is gone"
        try:
            if os.stat(self.path).st_ino != self.inode:
                return "its socket was replaced"
        except OSError:
            return "its socket was removed"
        return ""

    def _answer(self, conn: resident.Connection) -> None:
        try:
            request = conn.message(time.monotonic() + READ_WAIT)
        except (OSError, ValueError) as exc:
            log_error(self.home, f"resident: unreadable request ({exc})")
            return
        op = request.get("op")
        if op == "status":
            conn.send_message(self.status())
        elif op == "stop":
            self.leaving = "asked to stop"
            conn.send_message({"stopped": os.getpid()})
        elif op in ("start", "prompt"):
            self._start(conn, request, str(op))
        else:
            conn.send_message({"refused": f"unknown op {op!r}"})

    def status(self) -> dict[str, Any]:
        left = self.minutes * 60 - (time.monotonic() - self.last)
        return {
            "pid": os.getpid(), "home": str(self.home), "socket": str(self.path),
            "since": self.since, "served": self.served, "minutes": self.minutes,
            "leaves_in_seconds": max(0, round(left)),
        }  # fmt: skip

    def _start(self, conn: resident.Connection, request: dict[str, Any], op: str) -> None:
        payload = request.get("payload")
        if request.get("key") != self.key or not isinstance(payload, dict):
            reason = "another key" if resident.code_identity() == self.code else "memlog changed"
            self.leaving = f"a start came with {reason}"
            conn.send_message({"refused": reason})
            return
        self.last = time.monotonic()
        self.served += 1
        box: dict[str, Any] = {}
        started = float(request.get("started") or time.monotonic())
        work = user_prompt.work if op == "prompt" else None
        context = run(payload, self.home, started, box, _teller(conn), work)
        wanted = "recall" in box if op == "prompt" else to_record(payload, self.home, box)
        marker = mark(self.home) if wanted else ""
        with contextlib.suppress(OSError):
            conn.send_message({"context": context})
        self._after(payload, box, marker, op)

    def _after(self, payload: dict[str, Any], box: dict[str, Any], marker: str, op: str) -> None:
        if marker:
            recall, space = box.get("recall"), box.get("space")
            handover = Handover(payload=payload, marker=marker, recall=recall, space=space, kind=op)
            record(self.home, handover)
        if box.get("late") or box.get("failed"):
            self.leaving = "a start failed or ran out of time"
        elif "resident" in box:
            self.minutes = float(box["resident"])
            if not self.minutes:
                self.leaving = "memory_resident_minutes is 0"

    def close(self) -> None:
        with contextlib.suppress(OSError):
            if os.stat(self.path).st_ino == self.inode:
                os.unlink(self.path)
        self.sock.close()


def _teller(conn: resident.Connection) -> Any:
    def tell(budget: float) -> None:
        with contextlib.suppress(OSError):
            conn.send_message({"budget": budget})

    return tell


def bind(home: Path) -> tuple[socket.socket, int] | None:
    """The home's socket, bound and listening, with the lock that makes it this
    resident's; None when another resident holds the lock."""
    path = resident.socket_path(home)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not resident.is_private(path.parent):
        raise OSError(f"{path.parent} is not a folder only this user may enter")
    lock = os.open(f"{path}.lock", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(lock)
        return None
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)  # a resident that was killed left it
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    sock.listen(16)
    return sock, lock


def warm(home: Path, cwd: str) -> None:
    """Load what a start loads, and run the local model once, before the first start."""
    from memlog.retrieval import light  # noqa: F401
    from memlog.retrieval.semantic import vector_weight

    ws = workspace(cwd, home)
    if ws.config.memory_embedding_provider == "local" and vector_weight(ws.config) > 0:
        provider = ws.provider()
        try:
            provider.embed("warming the model", "query")
        finally:
            provider.close()


def main(argv: list[str]) -> None:
    """Entry point of ``memlog hook resident --minutes N --warm CWD``."""
    from memlog.home import resolve_home

    reside(resolve_home(), *_arguments(argv))


def reside(home: Path, minutes: int, cwd: str) -> None:
    """Serve ``home``'s starts until a reason to leave (at once when a resident runs)."""
    pin_blas()  # as the hook does: one query at a time
    try:
        bound = bind(home)
    except OSError as exc:
        log_error(home, f"resident not started: {exc}")
        return
    if bound is None:
        return
    sock, _lock = bound
    signal.signal(signal.SIGTERM, _leave)
    server = Resident(home, sock, minutes)
    try:
        try:
            warm(home, cwd)
        except Exception as exc:  # noqa: BLE001 - a start then loads what is missing
            log_error(home, f"resident: warming failed: {type(exc).__name__}: {exc}", exc)
        server.serve()
    except Exception as exc:  # noqa: BLE001 - logged, like every hook failure
        log_error(home, f"resident: {type(exc).__name__}: {exc}", exc)
    finally:
        server.close()


def _leave(signum: int, frame: object) -> None:
    raise SystemExit(0)  # through ``finally``: the socket is removed


def _arguments(argv: list[str]) -> tuple[int, str]:
    minutes, cwd = DEFAULT_MINUTES, os.getcwd()
    for flag, value in zip(argv, argv[1:], strict=False):
        if flag == "--minutes" and value.isdigit():
            minutes = int(value)
        elif flag == "--warm":
            cwd = value
    return minutes, cwd
