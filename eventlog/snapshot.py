"""Snapshots: the views as they were, written by ``memlog replay --to DIR``.

A snapshot holds views but no log.  ``mark`` leaves ``.memlog-snapshot.json``
in it (what it was made from, up to which event); every writer checks
``refuse_writes`` first, so a command pointed at a snapshot reads it as it is
and refuses, in one line, anything that would append to its (absent) log or
rebuild its views from nothing.
"""

from __future__ import annotations

import msgspec

from memlog.errors import ReadOnlyHome
from memlog.files import atomic_write
from memlog.home import Home


class Snapshot(msgspec.Struct, frozen=True):
    """Where a snapshot came from and how far into that log it reaches."""

    source: str
    seq: int
    until: str = ""
    made_at: str = ""


def mark(folder: Home, snapshot: Snapshot) -> None:
    """Mark ``folder`` as a snapshot (before its views are written)."""
    marker = msgspec.json.format(msgspec.json.encode(snapshot)) + b"\n"
    atomic_write(folder.snapshot_marker, marker, folder.root)


def read(folder: Home) -> Snapshot | None:
    """The marker of ``folder``, or None when it is not a snapshot."""
    try:
        data = folder.snapshot_marker.read_bytes()
    except OSError:
        return None
    try:
        return msgspec.json.decode(data, type=Snapshot)
    except (msgspec.DecodeError, UnicodeDecodeError):
        return Snapshot(source="?", seq=0)  # a damaged marker still marks a snapshot


def is_snapshot(folder: Home) -> bool:
    return folder.snapshot_marker.exists()


def refuse_writes(folder: Home, doing: str = "write") -> None:
    """Raise ``ReadOnlyHome`` (one line) when ``folder`` is a snapshot."""
    found = read(folder)
    if found is None:
        return
    until = f" up to seq {found.seq}" if found.seq else ""
    raise ReadOnlyHome(
        f"{folder} is a snapshot (memlog replay --to{until}, from {found.source}); "
        f"it is read-only and memlog will not {doing} it: point MEMLOG_HOME at the live home"
    )
