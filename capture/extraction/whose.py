"""Whose sessions these are: this machine extracts (or settles) the sessions it recorded.

A session whose transcript is here is this machine's to extract.  One whose
transcript is not here is this machine's to settle (skipped, with the reason)
when a hook of this machine recorded it; in a home that syncs, another
machine's session waits for that machine.  Light on purpose: ``memlog stats``
counts with it.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence

from memlog.eventlog import devices, segments
from memlog.eventlog.events import SessionPending
from memlog.eventlog.log import read_segment
from memlog.home import Home
from memlog.projections.fold import Session


def transcript_stat(transcript: str) -> tuple[int | None, float]:
    """A transcript's size and modification time; no size when it is not there."""
    try:
        stat = os.stat(transcript) if transcript else None
    except OSError:
        stat = None
    return (stat.st_size, stat.st_mtime) if stat is not None else (None, 0.0)


def recorded_here(home: Home, ids: Collection[str]) -> set[str]:
    """Of the sessions ``ids``, those a hook of this machine recorded: all of them in a log
    that is not kept per device, else those with a ``session.pending`` of this device's
    own (a sweep's adoption does not count)."""
    wanted = set(ids)
    if not wanted or not devices.is_per_device(home):
        return wanted
    found: set[str] = set()
    for path in segments.list_segments(home.device(devices.device_id(home))):
        for record in read_segment(path):
            event = record.event
            if isinstance(event, SessionPending) and event.trigger != "sweep":
                found |= {event.session_id} & wanted
    return found


def split_here(home: Home, sessions: Sequence[Session]) -> tuple[list[Session], list[Session]]:
    """``sessions`` this machine extracts or settles (their transcript is here, or this
    machine recorded them), and those left to the machines that recorded them."""
    missing = {s.id for s in sessions if s.transcript and transcript_stat(s.transcript)[0] is None}
    ours = recorded_here(home, missing)
    mine = [s for s in sessions if s.id not in missing or s.id in ours]
    return mine, [s for s in sessions if s.id in missing and s.id not in ours]
