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
from typing import TYPE_CHECKING, Any, NamedTuple

from memlog.eventlog.codec import BadLine, decode_line
from memlog.eventlog.events import Event, Observed
from memlog.eventlog.redaction import REDACTED
from memlog.eventlog.secrets import redact_event
from memlog.sync import sealed
from memlog.sync.sealed import Key, Signature, Unopenable
from memlog.sync.signing import MAX_GAP

if TYPE_CHECKING:
    from memlog.sync.roster import Device, Trust


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


def open_sealed(
    key: Key, name: str, data: bytes, now: int | None = None, trust: Trust | None = None
) -> Opened:
    """The lines of the sealed version ``data`` of segment ``name`` (a tree path,
    ``<device>/<first seq>.sealed``), checked as ``open_line`` and ``walk`` do, each
    line's ``prev`` the line before it.  A line that fails is refused alone, with the
    rest of its batch: the lines after it are taken when they follow the last one taken
    (a line slipped in between is refused, never the others with it).  Whatever a line's
    time, it is taken: the clock orders it (``clock``), ``now`` is not looked at.

    With ``trust`` (the roster as this machine takes it), a line is also refused when
    it is unsigned where its device signs, signed by a device the roster does not list,
    older than its device's last rewrite of it, or after its device's eviction; and the
    signed lines are taken only as far as their device's signature vouches for them (a
    line forged, changed, or put back from an old version breaks the chain there)."""
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
            if trust is not None:
                _trusted(trust, device, line, taken)
            authentic[line.seq] = line.id
            _follows(line, first, previous, batch_end, taken)
        except Refused as exc:
            refused += 1
            if not fault:
                fault, bad = f"{name} {_where(data, at, raw)}: {exc}", raw
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
    if trust is not None:
        good, why = vouched(trust, device, taken)
        if good < len(taken):
            line = taken[good]
            refused += 1
            if not fault:
                start = data.rfind(b"\n", 0, line.end - 1) + 1
                number = data.count(b"\n", 0, start) + 1
                fault, bad = (
                    f"{name} line {number} (seq {line.seq}): {why}",
                    data[start : line.end - 1],
                )
            for gone in taken[good:]:
                authentic.pop(gone.seq, None)
            del taken[_whole_batches(taken, good) :]
    more = f" (and {refused - 1} more lines)" if refused > 1 else ""
    return Opened(taken, fault + more if fault else "", bad, True, refused, authentic)


def _where(data: bytes, at: int, raw: bytes) -> str:
    seq = sealed.sealed_seq(raw)
    number = data.count(b"\n", 0, at) + 1
    return f"line {number} (seq {seq})" if seq is not None else f"line {number}"


def _trusted(trust: Trust, device: str, line: Line, taken: list[Line]) -> None:
    """Refused unless the roster lets ``device`` have ``line`` where it stands."""
    found = trust.of(device)
    if line.signature is None:
        after_signed = bool(taken) and taken[-1].signature is not None
        why = "unsigned, after a signed line" if after_signed else trust.unsigned(device, line.seq)
        if why:
            raise Refused(why)
    elif found is None:
        raise Refused(f"signed by device {device}, which the roster does not list")
    elif found.disputed:
        raise Refused(found.disputed)
    elif found.head is None:
        raise Refused(f"device {device} has no head in the roster to vouch for its lines")
    elif line.signature.gen < found.required(line.seq):
        raise Refused(f"an old version: device {device} rewrote its lines from seq "
                      f"{_rewrite_start(found, line.seq)} (generation "
                      f"{found.required(line.seq)}) since it signed this one")  # fmt: skip
    if found is not None and found.evicted is not None and line.seq > found.evicted:
        raise Refused(f"device {device} was evicted; its lines after seq {found.evicted} are "
                      "refused")  # fmt: skip


def _rewrite_start(device: Device, seq: int) -> int:
    needed = device.required(seq)
    rewrites = device.head.rewrites if device.head is not None else ()
    return max(start for gen, start in rewrites if gen == needed and start <= seq)


def vouched(trust: Trust, device: str, lines: list[Line]) -> tuple[int, str]:
    """How many of ``lines`` (one segment's, following each other) the device vouches
    for, and why not the next: every unsigned line before its first signed one (old
    lines, checked against the chain by ``merge``), and the signed ones up to the last
    whose signature holds over the chain from the digest the first carries, as far as
    its head in the roster says it sent.  One signature is checked when the last holds
    (it vouches for every line before it).  Sets each signed line's ``before``."""
    forged = "its device's signature does not hold (forged, changed, or an old version put back)"
    good = _signed_as_far(trust, device, lines)
    if good < len(lines):
        return good, forged
    found = trust.of(device)
    head = found.head if found is not None else None
    for index, line in enumerate(lines):
        sig = line.signature
        if head is not None and sig is not None and (line.seq > head.seq or sig.gen > head.gen):
            return index, (f"newer than device {device}'s head in the roster (seq {head.seq}, "
                           f"generation {head.gen}): the roster is older than the lines (its "
                           "branch forced back?)")  # fmt: skip
    return len(lines), ""


def _signed_as_far(trust: Trust, device: str, lines: list[Line]) -> int:
    from memlog.sync import signing

    signed = [i for i, line in enumerate(lines) if line.signature is not None]
    found = trust.of(device)
    if not signed or found is None:
        return len(lines) if found is not None or not signed else signed[0]
    start = signed[0]
    first = lines[start].signature
    link = first.link if first is not None else b""
    if len(link) != 32:
        return start
    after: list[bytes] = []
    digest = link
    for line in lines[start:]:
        assert line.signature is not None
        lines[start + len(after)] = line._replace(before=digest)
        digest = signing.chain_next(digest, line.signature.gen, line.prev, line.seq, line.data[:-1])
        after.append(digest)

    def holds(index: int) -> bool:
        line = lines[index]
        assert line.signature is not None and found is not None
        message = signing.line_message(device, line.signature.gen, line.prev, line.seq,
                                       after[index - start])  # fmt: skip
        return signing.verifies(found.key, line.signature.sig, message)

    if holds(len(lines) - 1):
        return len(lines)
    low, high = start, len(lines) - 1  # the last line that holds is in [low - 1, high)
    while low < high:
        middle = (low + high) // 2
        if holds(middle):
            low = middle + 1
        else:
            high = middle
    return low


def _whole_batches(lines: list[Line], count: int) -> int:
    """The most of the first ``count`` lines that end a batch."""
    while count and lines[count - 1].event.batch_end > lines[count - 1].seq:
        count -= 1
    return count


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
    return Line(event.seq, event.id, opened.line, event, 0, opened.prev, opened.signature)


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
    if line.seq - line.prev > MAX_GAP + 1:
        raise Refused(f"jumps from seq {line.prev} to seq {line.seq} (a device's lines go up by "
                      "one)")  # fmt: skip
    if batch_end and (line.event.batch_end != batch_end or line.seq != previous + 1):
        raise Refused(f"batch ending at {batch_end} cut short")


def _stem(name: str) -> str:
    stem = name.rsplit("/", 1)[-1].split(".", 1)[0]
    if not stem.isdigit():
        raise Refused(f"{name}: not a segment name")
    return stem


def seal_lines(
    key: Key, name: str, lines: list[Line], prev: int, after_signed: bool = False
) -> bytes:
    """The sealed version of ``lines`` of segment ``name`` (a tree path), the first of
    them following seq ``prev``: a signed line as it was signed, carrying the chain digest
    before it when it is the first (unless ``after_signed``: lines sealed after a signed
    one) or follows an unsigned line."""
    device, segment = name.split("/", 1)[0], _stem(name)
    out = []
    for line in lines:
        signature = line.signature
        if signature is not None:
            link = b"" if after_signed else line.before
            if not after_signed and len(link) != 32:
                raise ValueError(f"{name} seq {line.seq}: the digest before it is not known")
            signature = signature._replace(link=link)
        out.append(sealed.seal_line(key, device, segment, line.seq, prev, line.data, signature))
        prev, after_signed = line.seq, signature is not None
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
