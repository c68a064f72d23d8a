"""Versions of one segment: checking them, opening sealed ones, and joining two.

A segment is owned by one device and only ever grows, except when a
redaction rewrites lines in place (same sequence numbers, same ids, text
replaced by ``[REDACTED]``).  So two versions of it join line by line, by
sequence number: a line only one side has is kept, a line both have must be
the same event, and where the two differ the side that changed it since
their common version wins (both changed it: the more redacted line, then the
smaller bytes, a rule both machines apply alike).  Two different events
under one sequence number mean the versions diverged: the other side's is
refused.  This device's own lines are never changed by another side except
by a redaction: the other line must be this one with text taken out
(``is_redaction``), nothing added.

A sealed version (``open_sealed``) is opened line by line: a line that fails
(authentication, decoding, sequence, size) is refused and named, with the rest
of its batch; the lines after it are taken when they follow the last one
taken.  A line's time never refuses it: the hybrid logical clock orders it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from typing import Any, NamedTuple

from memlog.eventlog.codec import BadLine, decode_line
from memlog.eventlog.events import Event, Observed
from memlog.eventlog.redaction import REDACTED
from memlog.eventlog.secrets import redact_event
from memlog.sync import sealed
from memlog.sync.sealed import Key, Unopenable


class Refused(Exception):
    """A version that is never applied; the message says why."""


class Line(NamedTuple):
    seq: int
    id: str
    data: bytes
    event: Event
    #: the offset just past the line in the version it was read from
    end: int = 0
    #: the sequence of the device's line before it (0: none, or not known)
    prev: int = 0


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
        before, previous = previous, event.seq
        yield Line(event.seq, event.id, raw + b"\n", event, at, before), batch_end == 0


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

    ``own``: the segment is this device's: the other side may take text out
    of its lines (a redaction made elsewhere), never add a line or change one
    otherwise (that would be another home writing as this one, or a forgery).
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
        picked = _pick(a, b, common.get(seq))
        if own and a is not None and picked is not a and not is_redaction(picked.event, a.event):
            raise Refused(f"{name}: the remote changes seq {seq} of this device otherwise than "
                          "by taking text out; this home's line stands")  # fmt: skip
        joined.append(picked)
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
    if (base is not None and base.data == ours.data) or is_redaction(theirs.event, ours.event):
        return theirs
    if is_redaction(ours.event, theirs.event):
        return ours
    return min(ours, theirs, key=lambda line: (-len(line.event.redacted), line.data))


#: what a redaction keeps as it was (the envelope), and what it may add to
_KEPT = ("seq", "id", "ts", "v", "writer", "batch_end")
_GROWN = ("redacted", "redactions", "stable_id")


def is_redaction(new: Event, old: Event) -> bool:
    """Whether ``new`` is ``old`` with text taken out and nothing else changed: every
    field the same, or (named in ``new.redacted``) the old text with parts replaced by
    ``[REDACTED]``, or a tuple of texts with items so cut or dropped; what records a
    redaction (``redacted``, ``redactions``, ``stable_id``) only grown."""
    if type(new) is not type(old) or any(getattr(new, f) != getattr(old, f) for f in _KEPT):
        return False
    if not set(old.redacted) <= set(new.redacted):
        return False
    if new.redactions[: len(old.redactions)] != old.redactions:
        return False
    if isinstance(new, Observed) and isinstance(old, Observed):
        if new.stable_id != old.stable_id and (old.stable_id or new.stable_id != old.entry_id):
            return False
    for field in new.__struct_fields__:
        if field in _KEPT or field in _GROWN:
            continue
        was, now = getattr(old, field), getattr(new, field)
        if was != now and (field not in new.redacted or not _cut(now, was)):
            return False
    return True


def _cut(now: Any, was: Any) -> bool:
    """``now`` is ``was`` with text replaced by ``[REDACTED]`` (items of a tuple: each cut
    so, or dropped, in order)."""
    if isinstance(now, str) and isinstance(was, str):
        return _text_cut(now, was)
    if not (isinstance(now, tuple) and isinstance(was, tuple)):
        return False
    left = iter(was)
    return all(any(isinstance(w, str) and _text_cut(n, w) for w in left) for n in now)


def _text_cut(now: str, was: str) -> bool:
    if now == was:
        return True
    parts = now.split(REDACTED)
    if len(parts) == 1:
        return False
    pattern = "(?:.+?)".join(re.escape(part) for part in parts)
    return re.fullmatch(pattern, was, re.DOTALL) is not None


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


# -- sealed versions ---------------------------------------------------------------------


class Opened(NamedTuple):
    """What a sealed version gave: its lines that open and follow each other, whole
    batches only; why the first line refused was ("" when none was) and its sealed
    bytes, how many were refused, and the sequence and event id of every line that
    opened, taken or not (what the remote holds of the device: ``covers``)."""

    lines: list[Line]
    fault: str = ""
    bad: bytes = b""
    #: whether the fault stays (every refusal does: kept for the callers that ask)
    lasting: bool = True
    refused: int = 0
    authentic: dict[int, str] = {}


def open_sealed(key: Key, name: str, data: bytes, now: int | None = None) -> Opened:
    """The lines of the sealed version ``data`` of segment ``name`` (a tree path,
    ``<device>/<first seq>.sealed``), checked as ``open_line`` and ``walk`` do, each
    line's ``prev`` the line before it.  A line that fails is refused alone, with the
    rest of its batch: the lines after it are taken when they follow the last one taken
    (a line slipped in between is refused, never the others with it).  Whatever a line's
    time, it is taken: the clock orders it (``clock``), ``now`` is not looked at."""
    device, segment = name.split("/", 1)[0], _stem(name)
    taken: list[Line] = []
    whole = 0  # how many lines of ``taken`` end a batch
    at, previous, batch_end = 0, 0, 0
    first = int(segment)
    fault, bad, refused = "", b"", 0
    authentic: dict[int, str] = {}
    while at < len(data):
        cut = data.find(b"\n", at)
        raw = data[at:] if cut < 0 else data[at:cut]
        try:
            if cut < 0:
                raise Refused("torn last line")
            line = _open_one(key, device, segment, raw)
            authentic[line.seq] = line.id
            _follows(line, first, previous, batch_end, taken)
        except Refused as exc:
            refused += 1
            if not fault:
                seq = sealed.sealed_seq(raw)
                number = data.count(b"\n", 0, at) + 1
                where = f"line {number} (seq {seq})" if seq is not None else f"line {number}"
                fault, bad = f"{name} {where}: {exc}", raw
            del taken[whole:]  # the batch it was in goes with it
            previous, batch_end = (taken[-1].seq if taken else 0), 0
            at = cut + 1 if cut >= 0 else len(data)
            continue
        taken.append(line._replace(end=cut + 1))
        previous = line.seq
        batch_end = line.event.batch_end if line.event.batch_end > line.seq else 0
        whole = len(taken) if batch_end == 0 else whole
        at = cut + 1
    if whole < len(taken):
        last = taken[-1]
        fault = fault or f"{name} seq {last.seq}: batch ending at {last.event.batch_end} cut short"
        del taken[whole:]
    more = f" (and {refused - 1} more lines)" if refused > 1 else ""
    return Opened(taken, fault + more if fault else "", bad, True, refused, authentic)


def covers(held: dict[int, str], wanted: dict[int, str]) -> bool:
    """Whether a version whose lines are ``held`` (sequence: event id) holds every line
    of ``wanted``: the same event under each sequence (its text may differ: a redaction)."""
    return all(held.get(seq) == event_id for seq, event_id in wanted.items())


def ids_of(lines: list[Line]) -> dict[int, str]:
    return {line.seq: line.id for line in lines}


def plain_ids(data: bytes) -> dict[int, str]:
    """The sequence and event id of each line of a plain segment that decodes (a damaged
    line counts for nothing)."""
    found = {}
    for raw in data.split(b"\n"):
        if raw:
            try:
                event = decode_line(raw)
            except BadLine:
                continue
            found[event.seq] = event.id
    return found


def _open_one(key: Key, device: str, segment: str, raw: bytes) -> Line:
    try:
        opened = sealed.open_line(key, device, segment, raw)
        event = decode_line(opened.line)
    except Unopenable as exc:
        raise Refused(str(exc)) from None
    except BadLine as exc:
        raise Refused(f"does not decode ({exc.reason})") from None
    if event.seq != opened.seq:
        raise Refused(f"sealed as seq {opened.seq} but holds seq {event.seq}")
    return Line(event.seq, event.id, opened.line, event, 0, opened.prev)


def _follows(line: Line, first: int, previous: int, batch_end: int, taken: list[Line]) -> None:
    """Refused unless ``line`` may follow the lines ``taken`` of its segment."""
    if line.seq < first:
        raise Refused(f"before its segment's first seq {first}")
    if taken and line.seq <= previous:
        raise Refused(f"after seq {previous} (reordered or repeated)")
    if taken and line.prev != previous:
        raise Refused(f"follows seq {line.prev}, yet comes after seq {previous} here "
                      "(lines were removed or moved)")  # fmt: skip
    if not taken and line.prev >= line.seq:
        raise Refused(f"follows seq {line.prev}, not before it")
    if batch_end and (line.event.batch_end != batch_end or line.seq != previous + 1):
        raise Refused(f"batch ending at {batch_end} cut short")


def _stem(name: str) -> str:
    stem = name.rsplit("/", 1)[-1].split(".", 1)[0]
    if not stem.isdigit():
        raise Refused(f"{name}: not a segment name")
    return stem


def seal_lines(key: Key, name: str, lines: list[Line], prev: int) -> bytes:
    """The sealed version of ``lines`` of segment ``name`` (a tree path), the first of
    them following seq ``prev``."""
    device, segment = name.split("/", 1)[0], _stem(name)
    out = []
    for line in lines:
        out.append(sealed.seal_line(key, device, segment, line.seq, prev, line.data))
        prev = line.seq
    return b"".join(out)


def chained(named: list[tuple[str, list[Line]]]) -> str | None:
    """A fault when one device's segments (``named`` in name order) do not follow each
    other: each first line must name the last line of the segment before as ``prev``."""
    last, last_name = 0, ""
    for name, lines in named:
        if not lines:
            continue
        if lines[0].prev != last:
            before = f"{last_name} (seq {last})" if last_name else "nothing"
            return (f"{name} starts after seq {lines[0].prev}, but follows {before}: "
                    "lines were removed")  # fmt: skip
        last, last_name = lines[-1].seq, name
    return None
