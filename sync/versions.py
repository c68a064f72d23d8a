"""Versions of one segment: checking them, and joining two (``opening`` opens sealed ones).

A segment is owned by one device and only ever grows, except when its
device rewrites lines in place by a redaction (same sequence numbers, same
ids, text replaced by ``[REDACTED]``, signed again).  So two versions of it
join line by line, by sequence number: a line only one side has is kept, a
line both have must be the same event.  Where the two differ: a line of a
device that signs changes only to the version its device signed last, and
only by text taken out; of a device that never signed, the side that
changed it since their common version wins (both changed it: the more
redacted line, then the smaller bytes, a rule both machines apply alike).
Two different events under one sequence number mean the versions diverged:
the other side's is refused.  This device's own lines never change from the
remote: only this device writes and signs them.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

from memlog.eventlog.codec import BadLine, decode_line
from memlog.eventlog.events import Event, Observed
from memlog.eventlog.redaction import REDACTED
from memlog.eventlog.secrets import redact_event
from memlog.sync.sealed import Signature

if TYPE_CHECKING:
    pass


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
    #: what its device signed (None: an old, unsigned line, or a plain one)
    signature: Signature | None = None
    #: the chain digest of the device's lines before it (b"": not known)
    before: bytes = b""


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
    name: str, base: list[Line], ours: list[Line], theirs: list[Line], own: bool,
    signs: bool = False,
) -> list[Line]:  # fmt: skip
    """``ours`` and ``theirs`` joined (see the module); ``Refused`` when they diverged.

    ``own``: the segment is this device's: the other side may add no line and change
    none (only this device writes and signs its lines; another home's copy of them with
    text taken out is a request, ``requests``).  ``signs``: the segment is of another
    device that signs its lines: a line of it changes only to a version its device
    signed, with text taken out (``theirs`` holds only lines its signatures vouch for).
    A device that never signed keeps the first format's rule: the side that took text
    out wins.
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
        if own and a is not None and b is not None and a.data != b.data:
            raise Refused(f"{name}: the remote holds another version of seq {seq} of this "
                          "device (an older one, or a change no one here made); this home's "
                          "line stands")  # fmt: skip
        joined.append(_signed_pick(name, a, b) if signs else _pick(a, b, common.get(seq)))
    return joined


def _signed_pick(name: str, ours: Line | None, theirs: Line | None) -> Line:
    """Of two versions of a line of a device that signs, the one its device rewrote last
    (``theirs`` is vouched for by the device's newest head): only ever text taken out."""
    if ours is None or theirs is None:
        found = ours or theirs
        assert found is not None
        return found
    if ours.data == theirs.data:
        return ours
    if is_redaction(theirs.event, ours.event):
        return theirs
    raise Refused(f"{name}: the device's new version of seq {theirs.seq} changes it otherwise "
                  "than by taking text out; this home's line stands")  # fmt: skip


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


def removed_texts(new: Event, old: Event) -> list[str]:
    """The texts ``new`` took out of ``old`` (``is_redaction(new, old)`` holds): what each
    ``[REDACTED]`` stands for, and the items of a tuple dropped whole."""
    found: list[str] = []
    for field in new.redacted:
        now, was = getattr(new, field, None), getattr(old, field, None)
        if isinstance(now, str) and isinstance(was, str):
            found += _cut_out(now, was)
        elif isinstance(now, tuple) and isinstance(was, tuple):
            found += _dropped(now, was)
    return [text for text in found if text]


def _dropped(now: tuple[Any, ...], was: tuple[Any, ...]) -> list[str]:
    """The texts of the items of ``was`` that ``now`` dropped or cut (in order)."""
    found: list[str] = []
    left = list(was)
    for item in now:
        while left and not (
            isinstance(item, str) and isinstance(left[0], str) and _text_cut(item, left[0])
        ):
            dropped = left.pop(0)
            found += [dropped] if isinstance(dropped, str) else []
        if left:
            was_item = left.pop(0)
            found += _cut_out(item, was_item) if isinstance(item, str) else []
    return found + [item for item in left if isinstance(item, str)]


def _cut_out(now: str, was: str) -> list[str]:
    parts = now.split(REDACTED)
    if len(parts) == 1:
        return []
    pattern = "(.+?)".join(re.escape(part) for part in parts)
    match = re.fullmatch(pattern, was, re.DOTALL)
    return list(match.groups()) if match is not None else []


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
