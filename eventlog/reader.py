"""Reading one segment: good events out, batches whole, damage named.

A batch is written with one ``write``.  Its lines are held back until it is
known whole: its last line read, the log going on past it, its end at or
before the device's high-water mark, or (a log of an earlier version,
without a mark) a damaged complete line among them, which a torn write never
leaves.  So a batch a crash cut short is never read, and one damaged at rest
loses only the lines that fail their checksum.  A damaged line is reported
with the sequence its neighbours give it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import NamedTuple, Protocol

from memlog.eventlog import devices
from memlog.eventlog import segments as seg
from memlog.eventlog.codec import BadLine, decode_line, salvage
from memlog.eventlog.events import Event
from memlog.files import read_only
from memlog.home import Home

_READ_CHUNK = 8 << 20
#: the first read of a segment: small, so a reader that stops early (``memlog log | head``)
#: reads little; each next one is twice as long, up to ``_READ_CHUNK``
_FIRST_CHUNK = 64 << 10


class Position(NamedTuple):
    """A place in the log: a segment file name and a byte offset in it (kept per
    device: a ``merged.Cursor`` as JSON and its ordinal, read by the log alone)."""

    segment: str
    offset: int


START = Position("", 0)


class Mark(Protocol):
    """Where a record read from a log kept per device stands in the merged order."""

    @property
    def ordinal(self) -> int: ...

    def position(self) -> Position: ...


class Record(NamedTuple):
    """An event read from the log, with where its line starts and ends."""

    event: Event
    segment: str
    offset: int
    end: int
    line: int | None
    mark: Mark | None = None  # set when the log is kept per device

    @property
    def after(self) -> Position:
        return self.mark.position() if self.mark is not None else Position(self.segment, self.end)

    @property
    def ordinal(self) -> int:
        """The event's number in log order: its sequence, or its rank in the merged order."""
        return self.mark.ordinal if self.mark is not None else self.event.seq


class Damage(NamedTuple):
    """A line that is never applied: where it is and why."""

    segment: str
    offset: int
    length: int
    line: int | None
    reason: str
    #: the sequences the line held, as its neighbours place them (empty when unknown)
    seqs: tuple[int, ...] = ()

    def describe(self) -> str:
        where = f"line {self.line}" if self.line is not None else f"byte {self.offset}"
        return f"{self.segment} {where}{_seq_range(self.seqs)}: {self.reason}"


def _seq_range(seqs: tuple[int, ...]) -> str:
    if not seqs:
        return ""
    if len(seqs) == 1:
        return f" (seq {seqs[0]})"
    return f" (seq {min(seqs)}..{max(seqs)})"


DamageHandler = Callable[[Damage], None]


def is_own(home: Home, folder: Path) -> bool:
    """Whether ``folder`` holds this home's own segments (the flat log, or its device's)."""
    return folder == home.events or folder.name == devices.known_device_id(home)


def written_in(home: Home, folder: Path) -> int | None:
    """The high-water mark of this home's device, whose segments are in ``folder`` (None
    when it keeps none yet, and for another device's folder)."""
    if not is_own(home, folder):
        return None
    marks = [seg.read_high_water(folder)]
    marks += [seg.segment_mark(path) for path in seg.list_segments(folder)[-2:]]
    if folder != home.events:  # the flat log it grew from was its own
        marks.append(seg.read_high_water(home.events))
    found = [m for m in marks if m is not None]
    return max(found) if found else None


def written_whole(paths: Sequence[Path], index: int, written: int | None) -> int | None:
    """Up to which sequence the batches of segment ``paths[index]`` of one device were
    written whole: all of them when a later segment follows (the appender went on past
    them), else the device's high-water mark (None when it keeps none)."""
    if index + 1 < len(paths):
        return int(paths[index + 1].name.split(".")[0]) - 1
    return written


def read_segment(
    path: Path,
    offset: int = 0,
    on_damage: DamageHandler | None = None,
    include_torn_tail: bool = False,
    name: str = "",
    written: int | None = None,
) -> Iterator[Record]:
    """The good events of one segment from ``offset``; line numbers when ``offset`` is 0.

    The lines of a batch are held back until its last line is read: a batch
    left unfinished at the end (a write in progress, or one a crash cut
    short) is never yielded, and is damage when ``include_torn_tail``.  A
    batch written whole loses only its damaged lines: one the log goes on
    past, one ending at or before ``written`` (the device's high-water mark),
    or, without a mark, one holding a damaged complete line (a torn write
    leaves only good lines).  A damaged line is reported with the sequence it
    held, as its neighbours place it.  The file is read a chunk at a time,
    and each chunk starts again where the one before left something unsettled
    (a held batch, damage, a partial line): a writer may have cut those bytes
    meanwhile and appended others in their place.
    """
    name, line_no, report = name or path.name, 1 if offset == 0 else None, _Once(on_damage)
    prev = _named_seq(path) - 1 if offset == 0 else 0
    size = _FIRST_CHUNK
    with read_only(path) as handle:
        while True:
            data = os.pread(handle.fileno(), size, offset)
            lines, holder = data.split(b"\n"), _Holder(name, report, written, prev)
            tail, tail_no = offset, line_no
            for line in lines[:-1]:
                end = tail + len(line) + 1
                try:
                    event = decode_line(line)
                except BadLine as exc:
                    yield from holder.bad(line, tail, tail_no, exc.reason)
                else:
                    if holder.quiet and event.batch_end <= event.seq:  # appended alone
                        holder.prev = event.seq
                        yield Record(event, name, tail, end, tail_no)
                    else:
                        yield from holder.good(Record(event, name, tail, end, tail_no))
                tail = end
                tail_no = None if tail_no is None else tail_no + 1
            if len(data) < size:
                break
            resume, resume_no, prev = holder.unsettled() or (tail, tail_no, holder.prev)
            # a batch or line past the chunk: twice as much; else the next, longer one
            size = size * 2 if resume == offset else min(size * 2, _READ_CHUNK)
            offset, line_no = resume, resume_no
    yield from holder.end(tail, lines[-1], include_torn_tail)


def _named_seq(path: Path) -> int:
    stem = path.name.split(".", 1)[0]
    return int(stem) if stem.isdigit() else 1


class _Pending(NamedTuple):
    """A damaged line whose sequence waits for the next good line to be placed."""

    offset: int
    length: int
    line: int | None
    reason: str
    at_rest: bool


class _Holder:
    """Holds the records of a batch back until it is known whole, and places damage."""

    def __init__(self, segment: str, report: DamageHandler, written: int | None, prev: int) -> None:
        self.segment, self.report, self.written = segment, report, written
        self.held: list[Record] = []
        self.batch_end = 0  # of the batch held
        self.prev = prev  # the sequence of the last good line (0: not known)
        self.pending: list[_Pending] = []
        self.at_rest = False  # damage at rest seen since the last batch settled
        #: where what is not settled yet starts: offset, line number, ``prev`` there
        self.group: tuple[int, int | None, int] | None = None
        self.quiet = True  # nothing held, pending or unsettled: a lone event passes at once

    def bad(self, raw: bytes, start: int, line_no: int | None, reason: str) -> Sequence[Record]:
        """What may be yielded once a complete line that fails its check was read."""
        self._open(start, line_no)
        salvaged = salvage(raw)
        if salvaged is None:
            at_rest = b"\0" not in raw  # zeroed blocks: a write the disk never finished
            self.pending.append(_Pending(start, len(raw), line_no, reason, at_rest))
            self.at_rest = self.at_rest or at_rest
            return ()
        cut, event = salvaged
        glued = "torn prefix glued to a good line"
        self.pending.append(_Pending(start, cut, line_no, glued, False))
        return self.good(Record(event, self.segment, start + cut, start + len(raw) + 1, line_no))

    def good(self, record: Record) -> Sequence[Record]:
        """What may be yielded once a good line was read (``quiet``: held, nothing pending)."""
        event = record.event
        self._place(event.seq)
        ready: list[Record] = []
        member = bool(self.held) and event.batch_end == self.batch_end
        if self.held and not member:
            if event.seq > self.batch_end:
                ready += self._release()  # the log went on past it: it was written whole
            else:
                self._drop("batch cut short by a later line")
        self.prev = event.seq
        if event.batch_end > event.seq:  # a line of a batch, not its last
            if not self.held:
                self._open(record.offset, record.line)
                self.batch_end = event.batch_end
            self.held.append(record)
            return ready
        ready += [*self.held, record] if member else [record]
        self.held, self.batch_end, self.at_rest, self.group = [], 0, False, None
        self.quiet = True
        return ready

    def _open(self, start: int, line_no: int | None) -> None:
        self.quiet = False
        if self.group is None:
            self.group = (start, line_no, self.prev)

    def _place(self, next_seq: int | None) -> None:
        """Report the pending damage, each line with the sequence its neighbours give it."""
        count = len(self.pending)
        # a line takes at least 16 bytes: a gap longer than the damage could hold (a line
        # claiming seq 10^18 after it) was not made by it, and is never walked
        most = sum(bad.length // 16 + 1 for bad in self.pending)
        for index, bad in enumerate(self.pending):
            if self.prev and (next_seq is None or next_seq - self.prev - 1 == count):
                seqs: tuple[int, ...] = (self.prev + 1 + index,)
            elif next_seq is not None and self.prev and next_seq - self.prev - 1 <= most:
                seqs = tuple(range(self.prev + 1, next_seq))
            elif next_seq is not None and self.prev:
                seqs = ()
            elif next_seq is not None:
                seqs = (next_seq - count + index,)
            else:
                seqs = ()
            self.report(Damage(self.segment, bad.offset, bad.length, bad.line, bad.reason, seqs))
        if next_seq is None and self.prev and count:
            self.prev += count
        self.pending = []

    def _release(self) -> list[Record]:
        ready, self.held, self.batch_end, self.at_rest = self.held, [], 0, False
        self.group = None
        return ready

    def unsettled(self) -> tuple[int, int | None, int] | None:
        """Where a read must start again to settle what is held or pending (None if nothing)."""
        return self.group if (self.held or self.pending) else None

    def end(self, tail: int, rest: bytes, include_torn_tail: bool) -> Sequence[Record]:
        """What the end of the file settles: pending damage, the batch held, a torn tail."""
        self._place(None)
        ready: list[Record] = []
        if self.held:
            written = self.written
            whole = self.at_rest if written is None else self.batch_end <= written
            if whole:
                ready = self._release()
            elif include_torn_tail:
                self._drop("unfinished batch (interrupted write)")
        if include_torn_tail and rest:
            self.report(Damage(self.segment, tail, len(rest), None, "torn tail (no newline)"))
        return ready

    def _drop(self, reason: str) -> None:
        if self.held:
            first, last = self.held[0], self.held[-1]
            length = last.end - first.offset
            seqs = tuple(r.event.seq for r in self.held)
            self.report(Damage(first.segment, first.offset, length, first.line, reason, seqs))
            self.held, self.batch_end, self.at_rest, self.group = [], 0, False, None


class _Once:
    """Passes each damage on once, though the unsettled end of a chunk is read again."""

    def __init__(self, handler: DamageHandler | None) -> None:
        self.handler = handler
        self.seen: set[Damage] = set()

    def __call__(self, damage: Damage) -> None:
        if self.handler is not None and damage not in self.seen:
            self.seen.add(damage)
            self.handler(damage)
