"""Finding a few events in a long log without decoding all of it.

The history of one entry and the newest events of the log are a few lines
of a log that may hold millions: these look for them in the raw bytes (an
entry id, a type tag; an observation names its entry only by its
description, so only the description of those lines is read) and decode
only the lines that can match, each still checked against its checksum.
A line that fails its check is skipped (``memlog verify`` reports it); the
lines of a batch still being written are never returned, as
``EventLog.read`` never returns them either.

Segments are read a chunk at a time (``CHUNK`` bytes, a line that crosses a
chunk's edge carried into the next), forwards for an entry's history and
backwards from the end for the newest events, so memory stays that of a
chunk however long the log grows, and the newest events cost what lies
after them: a sequence bound skips the segments that start after it and
finds its place in the one that holds it by bisection.
"""

from __future__ import annotations

import os
import re
from collections import deque
from collections.abc import Iterable, Iterator
from pathlib import Path

import msgspec

from memlog.eventlog import devices
from memlog.eventlog.codec import BadLine, decode_line
from memlog.eventlog.events import Event, content_hash
from memlog.eventlog.log import EventLog
from memlog.files import read_only
from memlog.home import Home

#: how much of the end of the log to read for its last complete lines
TAIL_BYTES = 1 << 20
#: bytes read at once when scanning a segment
CHUNK = 4 << 20
#: a bisection stops once it has the place within this many bytes (read backwards after)
_CLOSE_ENOUGH = 64 << 10
_SEQ = re.compile(rb'"seq":(\d+)')


class _Described(msgspec.Struct):
    """Just the description of an ``entry.observed`` line (its id is that text's hash)."""

    description: str = ""


_DESCRIBED = msgspec.json.Decoder(_Described)
_OBSERVED = b'{"type":"entry.observed"'


def has_events(home: Home | Path) -> bool:
    """Whether ``home``'s log holds anything at all (a look at its segments' sizes)."""
    return any(path.stat().st_size for path in EventLog(home).segments())


def _words(description: str) -> list[bytes]:
    """Words every spelling of ``description`` holds verbatim, but for ASCII case: the
    longest plain ASCII ones of its normalised form (others may be escaped or cased)."""
    plain = [w for w in description.lower().split() if w.isascii() and w.isalnum()]
    return [w.encode("ascii") for w in sorted(set(plain), key=len, reverse=True)[:3]]


def _finds(data: bytes, needle: bytes) -> Iterator[int]:
    start = 0
    while (hit := data.find(needle, start)) >= 0:
        yield hit
        start = hit + len(needle)


def _line(data: bytes, at: int) -> tuple[int, int] | None:
    """The span of the complete line holding offset ``at`` (None for a torn tail)."""
    end = data.find(b"\n", at)
    return None if end < 0 else (data.rfind(b"\n", 0, at) + 1, end)


def _observes(line: bytes, entry_id: str) -> bool:
    """Whether ``line`` observes the entry (its description hashes to the id)."""
    try:
        return content_hash(_DESCRIBED.decode(line).description) == entry_id
    except msgspec.DecodeError:
        return False


def _spans(data: bytes, needle: bytes) -> set[tuple[int, int]]:
    """The spans of the complete lines of ``data`` holding ``needle``."""
    return {span for at in _finds(data, needle) if (span := _line(data, at)) is not None}


def _lines_about(data: bytes, entry_id: str, words: list[bytes]) -> list[bytes]:
    """The lines of ``data`` about the entry, in order: those holding its id, and the
    observations of its description (found by its words when known, else all read)."""
    named = _spans(data, entry_id.encode("ascii"))
    if words:
        lowered = data.lower()
        found = {
            s for s in _spans(lowered, words[0]) if all(w in lowered[s[0] : s[1]] for w in words)
        }
    else:
        found = _spans(data, _OBSERVED)
    observed = {s for s in found - named if data.startswith(_OBSERVED, s[0])}
    chosen = sorted(named | {s for s in observed if _observes(data[s[0] : s[1]], entry_id)})
    return [data[a:b] for a, b in chosen]


def _decoded(lines: Iterable[bytes]) -> Iterator[Event]:
    for line in lines:
        try:
            yield decode_line(line)
        except BadLine:
            continue


def unfinished_batch(log: EventLog) -> int:
    """The ``batch_end`` of a batch still being written at the end of the log, else 0 (a
    batch written whole that lost lines at rest is not held back: see ``log.read_segment``)."""
    segments = log.segments()
    if not segments:
        return 0
    with open(segments[-1], "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        tail = os.pread(handle.fileno(), min(size, TAIL_BYTES), max(0, size - TAIL_BYTES))
    written, damaged = log.written(), False
    for line in reversed(tail.split(b"\n")[1:-1]):
        try:
            event = decode_line(line)
        except BadLine:
            damaged = damaged or b"\0" not in line  # at rest: the batch was written whole
            continue
        whole = damaged if written is None else event.batch_end <= written
        return event.batch_end if event.batch_end > event.seq and not whole else 0
    return 0


def about(log: EventLog, entry_id: str, description: str = "") -> Iterator[Event]:
    """Every event about the entry ``entry_id``, in log order.  Its ``description``, when
    known, lets observations of other entries be passed over without decoding them."""
    if devices.is_per_device(log.home):  # the merged order is the reader's to make
        yield from (r.event for r in log.read() if entry_id in r.event.entry_ids)
        return
    held = unfinished_batch(log)
    words = _words(description)
    for path in log.segments():
        for data in _forwards(path):
            for event in _decoded(_lines_about(data, entry_id, words)):
                if entry_id in event.entry_ids and (not held or event.batch_end != held):
                    yield event


def _forwards(path: Path) -> Iterator[bytes]:
    """The complete lines of a segment, a chunk of whole lines at a time, in order."""
    with read_only(path) as handle:
        carry = b""
        while True:
            data = handle.read(CHUNK)
            if not data:
                return
            data = carry + data
            cut = data.rfind(b"\n") + 1
            carry = data[cut:]
            if cut:
                yield data[:cut]


def latest(
    log: EventLog, limit: int, tags: Iterable[str] = (), up_to: int | None = None
) -> list[Event]:
    """The newest ``limit`` events of the given type tags (any without), up to sequence
    ``up_to`` when given (kept per device: up to that rank in the merged order, the
    number ``memlog log`` shows); newest first."""
    if devices.is_per_device(log.home):
        return _latest_merged(log, limit, set(tags), up_to)
    found: list[Event] = []
    for event in newest(log, tags, up_to):
        found.append(event)
        if len(found) >= limit:
            break
    return found


def newest(log: EventLog, tags: Iterable[str] = (), up_to: int | None = None) -> Iterator[Event]:
    """The events of the given type tags (any without) of a log kept in one folder, newest
    first, from sequence ``up_to`` (the end without) down; read as they are asked for."""
    held = unfinished_batch(log)
    needles = [f'"type":"{tag}"'.encode() for tag in tags]
    for path in reversed(log.segments()):
        if up_to is not None and _first_seq(path) > up_to:
            continue  # the segment starts after the bound
        end = _end_before(path, up_to) if up_to is not None else None
        lines = _backwards(path, needles, end)
        for event in _decoded(line for line in lines if _not_after(line, up_to)):
            if (held and event.batch_end == held) or (up_to is not None and event.seq > up_to):
                continue
            yield event


def _first_seq(path: Path) -> int:
    head = path.name.split(".")[0]
    return int(head) if head.isdigit() else 0


def _latest_merged(log: EventLog, limit: int, tags: set[str], up_to: int | None) -> list[Event]:
    kept: deque[Event] = deque(maxlen=limit)
    for record in log.read():
        if up_to is not None and record.ordinal > up_to:
            break
        if not tags or record.event.__struct_config__.tag in tags:
            kept.append(record.event)
    return list(reversed(kept))


def _not_after(line: bytes, up_to: int | None) -> bool:
    """A cheap look at a line's sequence number, to skip decoding lines past ``up_to``."""
    if up_to is None:
        return True
    match = _SEQ.search(line, 0, 80)
    return match is None or int(match[1]) <= up_to


def _backwards(path: Path, needles: list[bytes], end: int | None = None) -> Iterator[bytes]:
    """The complete lines of a segment before byte ``end`` (a line's end; its end without),
    last first, that hold one of ``needles`` (any line without needles)."""
    with read_only(path) as handle:
        at = os.fstat(handle.fileno()).st_size if end is None else end
        carry: bytes | None = None
        while at > 0:
            start = max(0, at - CHUNK)
            data = os.pread(handle.fileno(), at - start, start) + (carry or b"")
            lines = data.split(b"\n")
            if carry is None:
                lines.pop()  # after the last newline: nothing, or a torn tail
            carry = lines.pop(0) if start > 0 else b""  # may begin before this chunk
            for line in reversed(lines):
                if line and (not needles or any(n in line for n in needles)):
                    yield line
            at = start


def _end_before(path: Path, up_to: int) -> int:
    """The end of a line of the segment after every line of sequence ``up_to`` or less and
    before the rest (found by bisection on the lines' sequence numbers)."""
    with read_only(path) as handle:
        fd = handle.fileno()
        low, high = 0, os.fstat(fd).st_size
        while high - low > _CLOSE_ENOUGH:
            middle = (low + high) // 2
            seq = _seq_at(fd, middle)
            if seq is None or seq > up_to:
                high = middle
            else:
                low = middle
        while tail := os.pread(fd, _CLOSE_ENOUGH, high):
            cut = tail.find(b"\n")
            if cut >= 0:
                return high + cut + 1
            high += len(tail)
        return high


def _seq_at(fd: int, offset: int) -> int | None:
    """The sequence of the first line starting after ``offset`` (None: none does)."""
    size = 1 << 13  # a line of ours is shorter, near always
    while True:
        data = os.pread(fd, size, offset)
        start = data.find(b"\n") + 1
        if start and (match := _SEQ.search(data, start, start + 120)) is not None:
            return int(match[1])
        if len(data) < size:  # the end of the file: no (whole) line starts after it
            return None
        size *= 4
