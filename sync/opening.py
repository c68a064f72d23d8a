"""Sealed versions of a segment: opening one line by line under the roster, and sealing.

A sealed version (``open_sealed``) is opened line by line: a line that fails
(authentication, decoding, sequence, size, the roster's rules) is refused and
named, with the rest of its batch; the lines after it are taken when they
follow the last one taken.  A line's time never refuses it: the hybrid logical
clock orders it.  The signed lines of a device are then taken only as far as
its signature vouches for them (``vouched``): one signature over the chain
vouches for every line before it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from memlog.eventlog.codec import BadLine, decode_line
from memlog.sync import sealed
from memlog.sync.sealed import Key, Unopenable
from memlog.sync.signing import MAX_GAP
from memlog.sync.versions import Line, Refused

if TYPE_CHECKING:
    from memlog.sync.trust import Device, Trust


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
