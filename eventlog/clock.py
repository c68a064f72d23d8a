"""The hybrid logical clock that orders events across devices.

Every event's ``ts`` is a reading of this clock, stamped under the append
lock: the wall clock in microseconds, but never earlier than one
microsecond after the last event of this device, nor after the newest event
this home has received from any other device (the *floor*, kept in
``events/.clock`` by sync).  So ``ts`` stays a UTC time a person can read,
increases strictly within a device, and an event appended after seeing
another always sorts after it, whatever the two machines' clocks say.

Readers order all devices' events by ``(stamp, id)``, where ``stamp`` is
``ts`` in microseconds raised, if need be, to one more than the device's
previous stamp (logs written before the clock, whose batches share one
``ts``): a pure function of each device's own events, so every machine
holding the same events puts them in the same order.

A machine whose wall clock is far off loses nothing: sync takes another
device's events whatever their time (the floor then carries this home's
stamps past them, and sync says in one line how far ahead they are), so a
machine a year behind still writes after what it has seen.  A line dated
outside 1970-9000 is damage (``codec``) and never read as a stamp, and a
reading never passes ``LATEST``: however a far date got into a log, no later
write fails for it.
"""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from pathlib import Path

from memlog.eventlog import segments as seg
from memlog.eventlog.bounds import utc_moment
from memlog.eventlog.codec import BadLine, decode_line
from memlog.files import atomic_write, read_only
from memlog.home import Home

#: the latest stamp ``iso`` writes (the year 9000: far past any clock, far from overflow)
LATEST = 221_845_392_000_000_000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_TAIL = 1 << 16


def micros(ts: str) -> int:
    """Microseconds since the epoch of an ISO 8601 time (UTC if naive; 0 when unreadable)."""
    moment = utc_moment(ts)
    if moment is None:
        return 0
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def iso(value: int) -> str:
    """The ``ts`` text of a clock reading (ISO 8601, microseconds, ``Z``)."""
    seconds, rest = divmod(min(max(value, 0), LATEST), 1_000_000)
    moment = datetime.fromtimestamp(seconds, UTC).replace(microsecond=rest)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def advance(previous: int, ts: str) -> int:
    """The stamp of an event with ``ts`` that follows a stamp of ``previous`` on its device."""
    return max(micros(ts), previous + 1)


def now_micros() -> int:
    return time.time_ns() // 1000


def next_reading(append_dir: Path, home: Home, last: int | None = None) -> int:
    """The clock reading for the next event appended to ``append_dir`` (under the lock);
    ``last``: the stamp of its last line, when the caller already read it."""
    if last is None:
        last = last_stamp(seg.list_segments(append_dir))
    return min(max(now_micros(), last + 1, read_floor(home) + 1), LATEST)


def last_stamp(paths: list[Path]) -> int:
    """The ``ts`` (in microseconds) of the last readable line of the last non-empty segment."""
    for path in reversed(paths):
        try:
            with read_only(path) as handle:
                size = os.fstat(handle.fileno()).st_size
                if size == 0:
                    continue
                _, lines = seg.tail_lines(handle.fileno(), size, _TAIL)
        except FileNotFoundError:
            continue
        for line in reversed(lines):
            try:
                return micros(decode_line(line).ts)
            except BadLine:
                continue
    return 0


def read_floor(home: Home) -> int:
    """The newest stamp received from other devices (0 when none was recorded)."""
    try:
        found = int(home.clock_floor.read_text(encoding="ascii").strip() or 0)
        return min(max(found, 0), LATEST)
    except (OSError, ValueError):
        return 0


def raise_floor(home: Home, stamp: int) -> None:
    """Record that this home now holds an event stamped ``stamp`` from another device."""
    if stamp > read_floor(home):
        atomic_write(home.clock_floor, f"{stamp}\n".encode("ascii"), home.root)
