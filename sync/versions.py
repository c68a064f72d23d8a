"""Versions of one segment: checking them and joining two of them.

A segment is owned by one device and only ever grows, except when a
redaction rewrites lines in place (same sequence numbers, same ids, fresh
checksums).  So two versions of it join line by line, by sequence number:
a line only one side has is kept, a line both have must be the same event,
and where the two differ the side that changed it since their common
version wins (both changed it: the more redacted line, then the smaller
bytes, a rule both machines apply alike).  Two different events under one
sequence number mean the versions diverged: the other side's is refused.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import NamedTuple

from memlog.eventlog.codec import BadLine, decode_line
from memlog.eventlog.events import Event
from memlog.eventlog.secrets import redact_event


class Refused(Exception):
    """A version that is never applied; the message says why."""


class Line(NamedTuple):
    seq: int
    id: str
    data: bytes
    event: Event
    #: the offset just past the line in the version it was read from
    end: int = 0


def blob_id(data: bytes) -> str:
    """The id git gives a blob holding ``data`` (so files are compared without git)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def parse(name: str, data: bytes) -> list[Line]:
    """The lines of a whole segment version, or ``Refused`` naming the first fault.

    Every line must pass its checksum and schema; sequence numbers increase,
    starting no lower than the file's name says; batches are whole.
    """
    if data and not data.endswith(b"\n"):
        raise Refused(f"{name}: torn last line")
    lines = [line for line, _ in walk(name, data)]
    if lines and lines[-1].event.batch_end > lines[-1].seq:
        raise Refused(f"{name}: batch ending at {lines[-1].event.batch_end} cut short")
    return lines


def good_end(name: str, data: bytes, start: int = 0, previous: int = 0) -> tuple[int, str]:
    """Where the whole batches of ``data`` after ``start`` that pass their checks and the
    secrets scan end, and what stopped them ("" when only the end of the data did).
    ``previous``: the sequence just before ``start``."""
    end = start
    try:
        for line, closes in walk(name, data, start, previous):
            if redact_event(line.event) is not line.event:
                return end, f"{name} seq {line.seq}: a secret"
            if closes:
                end = line.end
    except Refused as exc:
        return end, str(exc)
    return end, ""


def walk(name: str, data: bytes, start: int = 0, previous: int = 0) -> Iterator[tuple[Line, bool]]:
    """Each complete line from ``start`` and whether it ends its batch; ``Refused`` at the
    first line that fails its checksum, its schema, the sequence or its batch."""
    first = _named_seq(name)
    previous = previous or first - 1
    batch_end, at = 0, start
    while (cut := data.find(b"\n", at)) >= 0:
        raw, where = data[at:cut], at
        at = cut + 1
        event = _decode(name, where, raw)
        if event.seq < first:
            raise Refused(f"{name}: holds seq {event.seq}, before its name says")
        if event.seq <= previous:
            raise Refused(f"{name} byte {where}: seq {event.seq} after {previous}")
        if batch_end and (event.batch_end != batch_end or event.seq != previous + 1):
            raise Refused(f"{name} byte {where}: batch ending at {batch_end} cut short")
        batch_end = event.batch_end if event.batch_end > event.seq else 0
        previous = event.seq
        yield Line(event.seq, event.id, raw + b"\n", event, at), batch_end == 0


def _named_seq(name: str) -> int:
    stem = name.rsplit("/", 1)[-1].split(".", 1)[0]
    if not stem.isdigit():
        raise Refused(f"{name}: not a segment name")
    return int(stem)


def _decode(name: str, where: int, raw: bytes) -> Event:
    try:
        return decode_line(raw)
    except BadLine as exc:
        raise Refused(f"{name} byte {where}: {exc.reason}") from None


def secret_in(lines: list[Line]) -> Line | None:
    """The first line holding something the secrets scan recognises."""
    for line in lines:
        if redact_event(line.event) is not line.event:
            return line
    return None


def join(
    name: str, base: list[Line], ours: list[Line], theirs: list[Line], own: bool
) -> list[Line]:
    """``ours`` and ``theirs`` joined (see the module); ``Refused`` when they diverged.

    ``own``: the segment is this device's, and the other side may rewrite
    its lines but never add any (that would be another home writing as it).
    """
    mine, other, common = _by_seq(ours), _by_seq(theirs), _by_seq(base)
    extra = sorted(other.keys() - mine.keys())
    if own and extra:
        raise Refused(
            f"{name}: the remote holds seq {extra[0]} of this device, which this home never "
            "wrote (another home uses the same device id)"
        )
    joined = []
    for seq in sorted(mine.keys() | other.keys()):
        a, b = mine.get(seq), other.get(seq)
        if a is not None and b is not None and a.id != b.id:
            raise Refused(f"{name}: seq {seq} is event {b.id} in the remote, {a.id} here")
        joined.append(_pick(a, b, common.get(seq)))
    return joined


def _by_seq(lines: list[Line]) -> dict[int, Line]:
    return {line.seq: line for line in lines}


def _pick(ours: Line | None, theirs: Line | None, base: Line | None) -> Line:
    if ours is None or theirs is None:
        found = ours or theirs
        assert found is not None
        return found
    if ours.data == theirs.data or (base is not None and base.data == theirs.data):
        return ours
    if base is not None and base.data == ours.data:
        return theirs
    return min(ours, theirs, key=lambda line: (-len(line.event.redacted), line.data))


def joined_bytes(lines: list[Line]) -> bytes:
    return b"".join(line.data for line in lines)


def in_order(named: list[tuple[str, list[Line]]]) -> str | None:
    """A fault when one device's segments overlap (``named`` in name order), else None."""
    last, last_name = 0, ""
    for name, lines in named:
        if not lines:
            continue
        if lines[0].seq <= last:
            return f"{name} starts at seq {lines[0].seq}, not after {last_name} (seq {last})"
        last, last_name = lines[-1].seq, name
    return None
