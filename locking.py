"""Locks on files of the home: held for a ``with`` block, waited for within a deadline,
and who holds one when it is taken (``/proc/locks``)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from memlog.files import open_private


@contextlib.contextmanager
def locked_within(
    path: Path, wait: float, busy: Callable[[], Exception], poll: float = 0.1
) -> Iterator[int]:
    """Hold an exclusive ``flock`` on ``path`` (created 0600), waiting up to ``wait``
    seconds for another holder; raise ``busy()`` when it keeps it.  Yields the descriptor."""
    fd = open_private(path, os.O_RDWR | os.O_CREAT)
    try:
        give_up = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= give_up:
                    raise busy() from None
                time.sleep(poll)
        yield fd
    finally:
        os.close(fd)


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created 0600) for a ``with`` block."""
    fd = open_private(path, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


@contextlib.contextmanager
def held(
    path: Path,
    wait: float,
    busy: Callable[[str], Exception],
    on_slow: Callable[[str], None] | None = None,
    slow_after: float = 2.0,
) -> Iterator[int]:
    """Hold an exclusive ``flock`` on ``path`` (created 0600, never through a link) for a
    ``with`` block.  Another holder is waited for at most ``wait`` seconds (0: not at
    all); after ``slow_after`` seconds ``on_slow`` is told who holds it, and past ``wait``
    ``busy(who)`` is raised.  ``who`` names the holder (``lock_holder``)."""
    fd = open_private(path, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        if wait <= 0:
            os.close(fd)
            raise busy(lock_holder(path)) from None
        if not _take(fd, path, wait, on_slow, slow_after):
            raise busy(lock_holder(path)) from None
    try:
        yield fd
    finally:
        os.close(fd)


def _take(
    fd: int, path: Path, wait: float, on_slow: Callable[[str], None] | None, slow_after: float
) -> bool:
    """Wait for the lock on ``fd`` at most ``wait`` seconds; False (``fd`` then closed, or
    the waiting thread's) when it is not got.  In the main thread the ``flock`` itself
    waits, cut short by a timer (the uncontended and the contended path cost what a
    plain ``flock`` costs); elsewhere a thread of its own waits."""
    try:
        got = _AlarmedWait(fd).take(path, wait, on_slow, slow_after)
    except ValueError:  # not the main thread: signals cannot be used here
        return _Waiter(fd).take(path, wait, on_slow, slow_after)
    if not got:
        os.close(fd)
    return got


class _Late(Exception):
    """The timer of ``_AlarmedWait`` went off."""


class _AlarmedWait:
    """A blocking ``flock`` in the main thread, interrupted by ``SIGALRM`` at each deadline;
    a timer already set (the background worker's alarm) is put back as it was."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def take(
        self, path: Path, wait: float, on_slow: Callable[[str], None] | None, slow_after: float
    ) -> bool:
        import signal

        previous = signal.signal(signal.SIGALRM, _late)  # ValueError outside the main thread
        pending = signal.setitimer(signal.ITIMER_REAL, 0)
        started = time.monotonic()
        try:
            first = min(wait, slow_after)
            if self._within(first):
                return True
            if on_slow is not None and wait > slow_after:
                on_slow(lock_holder(path))
            return wait > slow_after and self._within(wait - slow_after)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
            if pending[0] > 0:
                left = max(pending[0] - (time.monotonic() - started), 0.001)
                signal.setitimer(signal.ITIMER_REAL, left, pending[1])

    def _within(self, seconds: float) -> bool:
        import signal

        try:
            signal.setitimer(signal.ITIMER_REAL, seconds)
            fcntl.flock(self.fd, fcntl.LOCK_EX)
            return True
        except _Late:
            try:  # the timer may have gone off just as the lock was got
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                return False
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)


def _late(signum: int, frame: object) -> None:
    raise _Late


class _Waiter:
    """Waits for a ``flock`` in a thread of its own, so the wait can end: given up, the
    thread keeps the descriptor and closes it (letting the lock go) if it ever gets it."""

    def __init__(self, fd: int) -> None:
        import threading  # (only when a lock is contended)

        self.fd = fd
        self.got = threading.Event()
        self.guard = threading.Lock()
        self.abandoned = False
        threading.Thread(target=self._run, name="memlog-lock", daemon=True).start()

    def _run(self) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        with self.guard:
            if self.abandoned:
                os.close(self.fd)
                return
            self.got.set()

    def take(
        self, path: Path, wait: float, on_slow: Callable[[str], None] | None, slow_after: float
    ) -> bool:
        """Whether the lock was got within ``wait`` seconds (False: the descriptor is the
        thread's now)."""
        if self.got.wait(min(wait, slow_after)):
            return True
        if on_slow is not None and wait > slow_after:
            on_slow(lock_holder(path))
        if self.got.wait(max(0.0, wait - slow_after)):
            return True
        with self.guard:
            self.abandoned = not self.got.is_set()
            return not self.abandoned


def lock_holder(path: Path) -> str:
    """Who holds the ``flock`` on ``path``: ``pid N (its command)`` as ``/proc/locks`` says
    (Linux), else ``another process``."""
    try:
        info = os.stat(path)
        with open("/proc/locks", encoding="ascii", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return "another process"
    key = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
    for line in text.splitlines():
        parts = line.split()
        if len(parts) > 5 and parts[1] == "FLOCK" and parts[5] == key and parts[4].isdigit():
            return f"pid {parts[4]} ({command_of(int(parts[4]))})"
    return "another process"


def command_of(pid: int) -> str:
    """A process's command line, short (``memlog observe …`` for memlog's own)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            args = [a.decode("utf-8", "replace") for a in handle.read().split(b"\0") if a]
    except OSError:
        return "gone"
    if "memlog" in args:  # python -m memlog ARGS
        args = args[args.index("memlog") :]
    elif args:
        args = [os.path.basename(args[0]), *args[1:]]
    text = " ".join(" ".join(args).split()) or "unknown"  # one line, whatever it holds
    return text if len(text) <= 60 else text[:59] + "…"
