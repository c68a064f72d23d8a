"""The spool: events a hook could not append at once, folded into the log by the next writer.

A hook never waits for the log's lock (Claude Code gives SessionEnd about
1.5 s): when another process holds it, the hook's events go to a file of
their own in ``events/.spool/``, named so that name order is the order they
were spooled in, written whole (a temporary file renamed into place).  Every
writer, once it holds the lock, folds the spooled files in first, in order,
each as one batch with the ids the hook gave its events, then removes the
file; and looks again once it has let the lock go, so a file spooled while
it held the lock never waits for the next writer.

Exactly once, whatever is killed when: a file is removed only after its
batch is in the log (fsynced), and a file found again is first looked for
at the end of the log, by its events' ids: the folder that appended it and
was killed before removing it left its batch last, since every writer folds
the spool before it appends anything.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

import msgspec

from memlog.eventlog import segments as seg
from memlog.eventlog.events import Event, EventBase
from memlog.files import atomic_write, fsync_dir
from memlog.home import Home

_SUFFIX = ".json"
_ENCODER = msgspec.json.Encoder()


def spool(home: Home, events: list[EventBase]) -> Path:
    """Keep ``events`` (their ids already given) for the next writer; the file made."""
    name = f"{time.time_ns():020d}-{os.getpid()}-{os.urandom(4).hex()}{_SUFFIX}"
    path = home.spool / name
    atomic_write(path, _ENCODER.encode(events), home.root)
    return path


def waiting(home: Home) -> list[Path]:
    """The spooled files, in the order they were spooled."""
    try:
        names = os.listdir(home.spool)
    except (FileNotFoundError, NotADirectoryError):
        return []
    found = sorted(n for n in names if n.endswith(_SUFFIX) and not n.startswith("."))
    return [home.spool / n for n in found]


def load(path: Path) -> list[Event] | None:
    """The events of a spooled file (None when it is gone: another writer folded it)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        return msgspec.json.decode(data, type=list[Event])
    except msgspec.DecodeError:
        return []  # not a whole spooled file: kept verbatim in the quarantine file by ``drop``


def done(path: Path) -> None:
    """Remove a spooled file once its events are in the log."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    fsync_dir(path.parent)


def drop(home: Home, path: Path, reason: str) -> None:
    """Move an unreadable spooled file to the quarantine file, verbatim."""
    with contextlib.suppress(FileNotFoundError):
        seg.quarantine(home, f"{home.spool.name}/{path.name}", 0, path.read_bytes(), reason)
    done(path)


def in_log_tail(paths: list[Path], events: list[Event]) -> bool:
    """Whether every one of ``events`` is already among the last lines of the segments
    ``paths`` (the last two of the device): a fold killed before it removed the file."""
    needles = [f'"id":"{e.id}"'.encode() for e in events]
    window = sum(len(_ENCODER.encode(e)) for e in events) * 2 + (64 << 10)
    tail = b""
    for path in paths:
        try:
            with open(path, "rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                tail += os.pread(handle.fileno(), window, max(0, size - window))
        except FileNotFoundError:
            continue
    return bool(needles) and all(n in tail for n in needles)
