"""The resident ranker: ``memlog hook resident``, one per home, loaded between starts.

Started detached by the hook after a start it ranked itself (``start``), it
warms what a start loads (memlog's ranking, numpy, the local model and its
first forward pass), binds the home's socket (``resident.socket_path``) and
answers starts one at a time, each exactly as the hook would rank it in its
own process (``session_start.run``, with the start's own clock and budget).
After each answer it records the recall and the start itself (the recorder's
``record``, in this process), so the next start finds the views current.

It survives any message: a request must arrive whole within ``READ_WAIT``
and hold at most ``MAX_REQUEST`` bytes (the largest event) of JSON nested at
most ``MAX_DEPTH`` deep, with fields of the right types; anything else is
refused and the connection closed.  Connections are read side by side (a
selector, at most ``MAX_PENDING`` at once), so peers that connect and say
nothing cost no start any wait; what they did is logged sparingly (the 1st,
2nd, 4th, 8th … of each kind, with the count).

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
import json
import math
import os
import selectors
import signal
import socket
import time
from collections import Counter
from typing import Any, NamedTuple

from memlog.config import Config
from memlog.home import Home
from memlog.hooks import resident, user_prompt
from memlog.hooks.common import log_error, workspace
from memlog.hooks.recorder import Handover, mark, record
from memlog.hooks.session_start import pin_blas, run, to_record

#: how often an idle resident checks that its home and socket are still there
TICK = 30.0
#: how long a connected start may take to send its request
READ_WAIT = 1.0
#: the largest request taken (a start's payload is the hook's input: well under this; the
#: hook sends no larger one)
MAX_REQUEST = resident.MAX_REQUEST
#: how deeply a request's JSON may nest (a start's is two levels deep)
MAX_DEPTH = 16
#: connections read at once; past it the oldest is closed
MAX_PENDING = 64
DEFAULT_MINUTES = Config().memory_resident_minutes


class Refused(ValueError):
    """A request the resident does not take; the message says why (one line)."""


class Pending(NamedTuple):
    conn: socket.socket
    buffer: bytearray
    deadline: float


class Resident:
    """A bound socket and what it serves."""

    def __init__(self, home: Home, sock: socket.socket, minutes: float) -> None:
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
        self.refusals: Counter[str] = Counter()

    def serve(self) -> None:
        """Answer starts until a reason to leave: read every connection side by side, and
        answer each request once it is whole (one start at a time)."""
        self.sock.setblocking(False)
        with selectors.DefaultSelector() as selector:
            selector.register(self.sock, selectors.EVENT_READ)
            pending: dict[int, Pending] = {}
            try:
                while not self.leaving:
                    self._turn(selector, pending)
            finally:
                for waiting in pending.values():
                    waiting.conn.close()

    def _turn(self, selector: selectors.BaseSelector, pending: dict[int, Pending]) -> None:
        now = time.monotonic()
        idle = self.minutes * 60 - (now - self.last)
        if idle <= 0:
            self.leaving = f"idle for {self.minutes} minutes"
            return
        soonest = min((p.deadline for p in pending.values()), default=now + TICK)
        ready = selector.select(max(0.0, min(idle, TICK, soonest - now)))
        if not ready and not pending:
            self.leaving = self._gone()
        for key, _ in ready:
            if key.fileobj is self.sock:
                self._accept(selector, pending)
            else:
                self._read(selector, pending, pending[key.fd])
        for fd in [fd for fd, p in pending.items() if p.deadline <= time.monotonic()]:
            self._drop(selector, pending, fd, "a connection sent no whole request in time")

    def _accept(self, selector: selectors.BaseSelector, pending: dict[int, Pending]) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            conn.setblocking(False)
            if len(pending) >= MAX_PENDING:
                self._drop(selector, pending, next(iter(pending)), "too many connections at once")
            pending[conn.fileno()] = Pending(conn, bytearray(), time.monotonic() + READ_WAIT)
            selector.register(conn, selectors.EVENT_READ)

    def _read(
        self, selector: selectors.BaseSelector, pending: dict[int, Pending], waiting: Pending
    ) -> None:
        fd = waiting.conn.fileno()
        try:
            chunk = waiting.conn.recv(1 << 16)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._drop(selector, pending, fd, "a connection closed before a whole request")
            return
        waiting.buffer.extend(chunk)
        cut = waiting.buffer.find(b"\n")
        if cut < 0 and len(waiting.buffer) <= MAX_REQUEST:
            return
        selector.unregister(waiting.conn)
        del pending[fd]
        with contextlib.closing(waiting.conn):
            waiting.conn.setblocking(True)
            conn = resident.Connection(waiting.conn)
            try:
                request = parse_request(bytes(waiting.buffer), cut)
            except Refused as exc:
                self.note(str(exc))
                with contextlib.suppress(OSError):
                    conn.send_message({"refused": str(exc)})
                return
            self._answer(conn, request)

    def _drop(
        self, selector: selectors.BaseSelector, pending: dict[int, Pending], fd: int, why: str
    ) -> None:
        waiting = pending.pop(fd)
        selector.unregister(waiting.conn)
        waiting.conn.close()
        self.note(why)

    def note(self, why: str) -> None:
        """Log a bad connection sparingly: the 1st, 2nd, 4th, 8th … of each kind, counted
        (a flood of them adds a few lines, never one line each)."""
        self.refusals[why] += 1
        count = self.refusals[why]
        if count & (count - 1) == 0:
            log_error(self.home, f"resident: {why} ({count} so far)")

    def _gone(self) -> str:
        """Why the resident should leave though no start came ("" when it should not)."""
        if not self.home.exists():
            return "its home is gone"
        try:
            if os.stat(self.path).st_ino != self.inode:
                return "its socket was replaced"
        except OSError:
            return "its socket was removed"
        return ""

    def _answer(self, conn: resident.Connection, request: dict[str, Any]) -> None:
        op = request.get("op")
        if op == "status":
            conn.send_message(self.status())
        elif op == "stop":
            self.leaving = "asked to stop"
            conn.send_message({"stopped": os.getpid()})
        elif op in ("start", "prompt"):
            self._start(conn, request, str(op))
        else:
            self.note("a request with an unknown op")
            conn.send_message({"refused": f"unknown op {str(op)[:40]!r}"})

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
        started = _started(request.get("started"))
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


def parse_request(data: bytes, cut: int) -> dict[str, Any]:
    """The request in the first line of ``data`` (``cut``: where it ends, -1 when it does
    not); Refused, with why in one line, for anything but a small, shallow JSON object."""
    if cut < 0 or cut > MAX_REQUEST:
        raise Refused(f"a request over {MAX_REQUEST >> 10} KiB")
    line = data[:cut]
    if _depth(line) > MAX_DEPTH:
        raise Refused(f"a request nested more than {MAX_DEPTH} deep")
    try:
        found = json.loads(line)
    except (ValueError, RecursionError):
        raise Refused("a request that is not JSON") from None
    if not isinstance(found, dict):
        raise Refused("a request that is not a JSON object")
    payload = found.get("payload")
    if found.get("op") in ("start", "prompt") and not (
        isinstance(payload, dict) and _texts(payload)
    ):
        raise Refused("a start whose payload is not an object of texts")
    return found


def _depth(line: bytes) -> int:
    """How deeply ``line``'s brackets nest, strings left out (no parser needed)."""
    deepest = depth = 0
    quoted = escaped = False
    for byte in line:
        if quoted:
            escaped, quoted = (False, True) if escaped else (byte == 0x5C, byte != 0x22)
        elif byte == 0x22:
            quoted = True
        elif byte in (0x5B, 0x7B):
            depth += 1
            deepest = max(deepest, depth)
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return deepest


def _texts(payload: dict[str, Any]) -> bool:
    """Whether the hook input's fields memlog reads are texts when given."""
    return all(
        isinstance(payload.get(field, ""), str)
        for field in ("session_id", "cwd", "source", "hook_event_name", "transcript_path", "prompt")
    )


def _started(value: object) -> float:
    """When the start began on the hook's clock (now, when the request says nothing
    usable: a string, NaN, a time far from now)."""
    now = time.monotonic()
    if isinstance(value, int | float) and math.isfinite(value) and abs(now - value) < 60:
        return float(value)
    return now


def _teller(conn: resident.Connection) -> Any:
    def tell(budget: float) -> None:
        with contextlib.suppress(OSError):
            conn.send_message({"budget": budget})

    return tell


def bind(home: Home) -> tuple[socket.socket, int] | None:
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


def warm(home: Home, cwd: str) -> None:
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


def reside(home: Home, minutes: int, cwd: str) -> None:
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
