"""Asking the resident ranker: a start answered by a process that stays loaded.

A fresh process pays for Python's start, memlog's imports, numpy's import
and the local model's first forward pass before it ranks anything; that is
most of a start with the local query embedding.  So after a start ranked in
its own process, the hook starts ``memlog hook resident`` detached
(``resident_server``): it keeps those loaded and answers the next starts of
the same home over a Unix socket, idle until ``memory_resident_minutes``
pass without one (``0``: never started).

The socket lies in a folder only its user may enter (``$XDG_RUNTIME_DIR``,
``$TMPDIR`` or ``/tmp``, then ``memlog-<uid>``); a folder that is not
private, or (on Linux) a peer of another user, is not asked.  A request
carries a key of what could make the resident's answer differ from the
hook's own: memlog's code, the interpreter and the environment variables
memlog reads.  A resident with another key refuses, and the hook ranks in
its own process, as it does whenever the resident is missing, slow to
answer (``FIRST_WAIT``) or broken.  The resident says the start's budget
first, then the context; it records the recall and the start itself.

This module is on the hook's path: it loads ``_socket``, not ``socket``.
"""

from __future__ import annotations

import _socket
import json
import os
import stat
import sys
import time
from pathlib import Path
from typing import Any

import memlog
from memlog import digests
from memlog.home import Home
from memlog.hooks.common import MARGIN
from memlog.vocabulary import MAX_EVENT_BYTES

PROTOCOL = 1
#: how long the hook waits for the resident to say the start's budget
FIRST_WAIT = 0.5
#: the most bytes one message may take
MAX_MESSAGE = 4 << 20
#: the most bytes a request to the resident may take (the largest event): a larger one
#: (a prompt of pages) is not sent, the hook ranks it in its own process
MAX_REQUEST = MAX_EVENT_BYTES
#: environment variables that change what a start does, by prefix and by name
KEY_PREFIXES = ("MEMLOG_", "HF_", "HUGGINGFACE_", "GIT_", "OPENBLAS_")
KEY_NAMES = frozenset(
    {"HOME", "PATH", "TZ", "LANG", "LC_ALL", "XDG_CACHE_HOME", "CLAUDE_CONFIG_DIR", "OLLAMA_HOST"}
)
#: the home is keyed by its resolved path instead (a child is given it by name)
KEY_IGNORED = frozenset({"MEMLOG_HOME"})


class ResidentError(Exception):
    """The resident was there but gave no usable answer (the message says why);
    ``spent``: it said the budget and used it up, so no time is left to rank."""

    def __init__(self, message: str, spent: bool = False) -> None:
        super().__init__(message)
        self.spent = spent


def start(home: Home, minutes: int, cwd: str) -> None:
    """Start ``home``'s resident detached (it leaves at once when one runs)."""
    from memlog.spawn import spawn_memlog

    spawn_memlog(("hook", "resident", "--minutes", str(minutes), "--warm", cwd), home)


def folder(env: dict[str, str] | None = None) -> Path:
    """Where this user's resident sockets lie."""
    environ = os.environ if env is None else env
    base = environ.get("XDG_RUNTIME_DIR") or environ.get("TMPDIR") or "/tmp"
    return Path(base) / f"memlog-{os.getuid()}"


def socket_path(home: Home, env: dict[str, str] | None = None) -> Path:
    """The socket of ``home``'s resident (short: a socket's path holds ~100 bytes)."""
    name = digests.blake2b(str(home.root.resolve()).encode(), digest_size=10).hexdigest()
    return folder(env) / f"{name}.sock"


def is_private(path: Path) -> bool:
    """Whether ``path`` is a folder of this user that no one else may enter."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    own = info.st_uid == os.getuid()
    return stat.S_ISDIR(info.st_mode) and own and not info.st_mode & 0o077


def code_identity() -> tuple[str, str, int]:
    """The interpreter, memlog's folder and its change time: a reinstall changes them."""
    package = os.path.dirname(os.path.abspath(memlog.__file__))
    return (sys.executable, package, os.stat(package).st_mtime_ns)


def key(home: Home, env: dict[str, str] | None = None) -> str:
    """What must match for the resident's answer to be the hook's own."""
    environ = os.environ if env is None else env
    kept = sorted(
        (name, value)
        for name, value in environ.items()
        if name not in KEY_IGNORED
        and (name.startswith(KEY_PREFIXES) or name in KEY_NAMES or name.endswith("_API_KEY"))
    )
    text = json.dumps([PROTOCOL, str(home.root.resolve()), code_identity(), kept])
    return digests.blake2b(text.encode(), digest_size=16).hexdigest()


def ask(payload: dict[str, Any], home: Home, started: float, op: str = "start") -> str | None:
    """The resident's context for this start (``op``: ``start``, or ``prompt`` for a
    prompt's recall); None when no resident serves this home (the hook then ranks
    itself).  Raises ResidentError when one answered wrongly."""
    if os.environ.get("MEMLOG_RESIDENT_MINUTES", "").strip() == "0":
        return None  # turned off where the hook can see it without its configuration
    request = {"op": op, "key": key(home), "started": started, "payload": payload}
    if len(json.dumps(request, ensure_ascii=False).encode()) > MAX_REQUEST:
        return None  # more than the resident takes: ranked here
    conn = _connect(home)
    if conn is None:
        return None
    spent = False
    try:
        conn.send_message(request)
        first = conn.message(time.monotonic() + FIRST_WAIT)
        if "refused" in first:
            return None
        spent = True
        answer = conn.message(started + float(first["budget"]) - MARGIN)
        return str(answer["context"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        message = f"resident gave no answer: {type(exc).__name__}: {exc}"
        raise ResidentError(message, spent) from None
    finally:
        conn.close()


def call(home: Home, op: str, wait: float = 2.0) -> dict[str, Any] | None:
    """Send ``op`` (``status`` or ``stop``) to ``home``'s resident; None when none runs."""
    conn = _connect(home)
    if conn is None:
        return None
    try:
        conn.send_message({"op": op})
        return conn.message(time.monotonic() + wait)
    except (OSError, ValueError) as exc:
        raise ResidentError(f"resident gave no answer: {type(exc).__name__}: {exc}") from None
    finally:
        conn.close()


class Connection:
    """Newline-delimited JSON messages over a connected Unix socket."""

    def __init__(self, sock: Any) -> None:
        self.sock = sock
        self.buffer = b""

    def send_message(self, message: dict[str, Any]) -> None:
        self.sock.settimeout(FIRST_WAIT)
        self.sock.sendall(json.dumps(message, ensure_ascii=False).encode() + b"\n")

    def message(self, deadline: float) -> dict[str, Any]:
        """The next message, read by ``deadline`` (``TimeoutError`` after it)."""
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no answer in time")
            self.sock.settimeout(left)
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise ValueError("the connection closed")
            self.buffer += chunk
            if len(self.buffer) > MAX_MESSAGE:
                raise ValueError("a message over the size limit")
        line, _, self.buffer = self.buffer.partition(b"\n")
        found = json.loads(line)
        if not isinstance(found, dict):
            raise ValueError("a message that is not an object")
        return found

    def close(self) -> None:
        self.sock.close()


def _connect(home: Home) -> Connection | None:
    """A connection to ``home``'s resident; None when none may be asked or none listens."""
    path = socket_path(home)
    if not is_private(path.parent):
        return None
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(FIRST_WAIT)
        sock.connect(str(path))
        if not _same_user(sock):
            sock.close()
            return None
    except OSError:
        sock.close()
        return None
    return Connection(sock)


def _same_user(sock: Any) -> bool:
    """Whether the peer runs as this user (Linux says; elsewhere the private folder does)."""
    option = getattr(_socket, "SO_PEERCRED", None)
    if option is None:
        return True
    raw = sock.getsockopt(_socket.SOL_SOCKET, option, 12)
    return bool(int.from_bytes(raw[4:8], sys.byteorder) == os.getuid())
