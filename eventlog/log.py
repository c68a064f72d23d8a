"""The append-only event log: a directory of checksummed JSONL segments.

Appends are safe across processes on a local POSIX filesystem: every append
takes an exclusive ``flock`` on ``events/.lock``, repairs a torn tail a
crashed writer left (the torn bytes, and the complete lines of a batch cut
short, go to the quarantine file), assigns the next sequence numbers, writes
the whole batch with one ``os.write`` on an ``O_APPEND`` descriptor and fsyncs
before returning.  A write that cannot complete is truncated back, so the log
is left exactly as it was.  Readers hold back the lines of a batch until its
last line is there, so no one ever sees part of a batch.
"""

from __future__ import annotations

import errno
import fcntl
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple, Protocol, TypeVar

import msgspec

from memlog import __version__
from memlog.errors import HomeError, LogWriteError
from memlog.eventlog import clock, devices, snapshot
from memlog.eventlog import segments as seg
from memlog.eventlog.codec import BadLine, decode_line, encode_line, salvage
from memlog.eventlog.events import Event, EventBase, Writer
from memlog.eventlog.ids import uuid7
from memlog.home import ensure_dir

DEFAULT_SEGMENT_BYTES = 64 << 20
LOCK_NAME = ".lock"
_READ_CHUNK = 8 << 20
E = TypeVar("E", bound=EventBase)


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

    def describe(self) -> str:
        where = f"line {self.line}" if self.line is not None else f"byte {self.offset}"
        return f"{self.segment} {where}: {self.reason}"


DamageHandler = Callable[[Damage], None]


def default_writer(command: str = "") -> Writer:
    host, pid = os.uname().nodename, os.getpid()  # (the host name without loading socket)
    return Writer(tool=f"memlog/{__version__}", command=command, host=host, pid=pid)


class EventLog:
    """The log under ``home/events``; one instance may append many times."""

    def __init__(
        self,
        home: Path,
        *,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        redact: bool = True,
        command: str = "",
    ) -> None:
        self.home = home
        self.events_dir = home / "events"
        self.append_dir = self.events_dir  # or this device's directory (``_own_dir``)
        self.segment_bytes = segment_bytes
        self.redact = redact
        self.writer = default_writer(command)

    # -- appending -----------------------------------------------------------

    def append(self, events: Sequence[E]) -> list[E]:
        """Append ``events`` atomically (all or none) and return them as stored."""
        if not events:
            return []
        if self.redact:  # the patterns load with the first append that needs them
            from memlog.eventlog.secrets import redact_batch
        prepared = redact_batch(events) if self.redact else list(events)
        with self._locked():
            path, first = self._tail_segment()
            stamped = self._stamp(prepared, first)
            self._write(path, b"".join(encode_line(e) for e in stamped))
        return stamped

    def _stamp(self, events: Sequence[E], first: int) -> list[E]:
        reading = clock.next_reading(self.append_dir, self.events_dir)
        times = [clock.iso(reading + i) for i in range(len(events))]
        end = first + len(events) - 1 if len(events) > 1 else 0
        return [
            msgspec.structs.replace(
                e, seq=first + i, id=uuid7(), ts=times[i], writer=self.writer, batch_end=end
            )
            for i, e in enumerate(events)
        ]

    def _own_dir(self) -> Path:
        """``events/``, or this device's directory once the log is kept per device."""
        if not devices.is_per_device(self.events_dir):
            return self.events_dir
        return ensure_dir(self.events_dir / devices.device_id(self.events_dir))

    @contextmanager
    def _locked(self) -> Iterator[None]:
        snapshot.refuse_writes(self.home, "append to the log of")
        ensure_dir(self.home)
        created = not self.events_dir.exists()
        ensure_dir(self.events_dir)
        if created:
            seg.fsync_dir(self.home)
        try:
            fd = os.open(self.events_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise HomeError(f"cannot write to {self.events_dir}: {exc.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            from memlog.eventlog import rewrite  # (it imports this module)

            rewrite.finish(self.events_dir)
            self.append_dir = self._own_dir()
            yield
        finally:
            os.close(fd)

    def _tail_segment(self) -> tuple[Path, int]:
        """The segment to append to (repaired, rolled if full) and the next sequence."""
        paths = seg.list_segments(self.append_dir)
        last = int(paths[-1].name.split(".")[0]) - 1 if paths else 0
        for path in reversed(paths):
            found = self._repaired_last_seq(path)
            if found is not None:
                last = max(last, found)
                break
        limit = self.segment_bytes if self.append_dir == self.events_dir else devices.ROLL_BYTES
        if not paths or paths[-1].stat().st_size >= min(limit, self.segment_bytes):
            return self._new_segment(last + 1), last + 1
        return paths[-1], last + 1

    def _repaired_last_seq(self, path: Path) -> int | None:
        fd = self._open(path, os.O_RDWR)
        try:
            size = os.fstat(fd).st_size
            good = seg.unfinished_batch_start(fd, seg.last_newline_end(fd, size))
            if good < size:
                self._cut_torn_tail(fd, path, good, size)
            return seg.last_seq(fd, good)
        finally:
            os.close(fd)

    def _cut_torn_tail(self, fd: int, path: Path, good: int, size: int) -> None:
        torn = os.pread(fd, size - good, good)
        try:
            seg.quarantine(
                self.home, self.name_of(path), good, torn, "torn tail left by an interrupted write"
            )
        except OSError as exc:
            raise LogWriteError(
                f"cannot quarantine the torn tail of {path.name}: {exc.strerror}; "
                "the log was left unchanged"
            ) from None
        os.ftruncate(fd, good)
        os.fsync(fd)

    def _new_segment(self, first_seq: int) -> Path:
        path = self.append_dir / seg.segment_name(first_seq)
        os.close(self._open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL))
        seg.fsync_dir(self.append_dir)
        return path

    def _open(self, path: Path, flags: int) -> int:
        try:
            return os.open(path, flags, 0o600)
        except OSError as exc:
            raise HomeError(f"cannot open {path}: {exc.strerror}") from None

    def _write(self, path: Path, data: bytes) -> None:
        fd = self._open(path, os.O_WRONLY | os.O_APPEND)
        start = os.fstat(fd).st_size
        try:
            seg.write_all(fd, data)
            os.fsync(fd)
        except OSError as exc:
            _truncate_quietly(fd, start)
            reason = exc.strerror or errno.errorcode.get(exc.errno or 0, str(exc))
            raise LogWriteError(
                f"cannot append to {path.name}: {reason}; the log was left unchanged"
            ) from None
        finally:
            os.close(fd)

    # -- reading -------------------------------------------------------------

    def segments(self) -> list[Path]:
        """Every segment: in log order when flat, by device then sequence when per device."""
        names = devices.device_dirs(self.events_dir)
        if not names:
            return seg.list_segments(self.events_dir)
        return [p for name in names for p in seg.list_segments(self.events_dir / name)]

    def name_of(self, path: Path) -> str:
        """A segment's name in reports and positions (``<device>/<file>`` per device)."""
        return devices.relative_name(self.events_dir, path)

    def ends_at(self, position: Position, ordinal: int) -> bool:
        """Whether event ``ordinal`` still ends at ``position`` (not so after a rewrite)."""
        if not position.offset:
            return True
        if devices.is_per_device(self.events_dir):
            from memlog.eventlog.merged import marks_hold  # it imports this module

            return marks_hold(self.events_dir, position)
        return seg.seq_ending_at(self.events_dir / position.segment, position.offset) == ordinal

    def read(
        self,
        start: Position = START,
        on_damage: DamageHandler | None = None,
        include_torn_tail: bool = False,
    ) -> Iterator[Record]:
        """Every good event from ``start`` on, in log order (kept per device: the merged
        order, see ``merged``); bad lines go to ``on_damage``."""
        if devices.is_per_device(self.events_dir):
            from memlog.eventlog.merged import read_merged  # it imports this module

            yield from read_merged(self.events_dir, start, on_damage)
            return
        for path in self.segments():
            if start.segment and path.name < start.segment:
                continue
            offset = start.offset if path.name == start.segment else 0
            yield from read_segment(path, offset, on_damage, include_torn_tail)


def _truncate_quietly(fd: int, size: int) -> None:
    try:
        os.ftruncate(fd, size)
        os.fsync(fd)
    except OSError:
        pass  # the unfinished line has no newline: the next append quarantines it


def read_segment(
    path: Path,
    offset: int = 0,
    on_damage: DamageHandler | None = None,
    include_torn_tail: bool = False,
    name: str = "",
) -> Iterator[Record]:
    """The good events of one segment from ``offset``; line numbers when ``offset`` is 0.

    The lines of a batch are held back until its last line is read: a batch
    left unfinished at the end (a write in progress, or one a crash cut
    short) is never yielded, and is damage when ``include_torn_tail``.  The
    file is read a chunk at a time, and each chunk starts again where the one
    before left something unfinished (a held batch, a partial line): a writer
    may have cut those bytes meanwhile and appended others in their place.
    """
    name, line_no, report = name or path.name, 1 if offset == 0 else None, _Once(on_damage)
    size = _READ_CHUNK
    with open(path, "rb") as handle:
        while True:
            data = os.pread(handle.fileno(), size, offset)
            lines, holder = data.split(b"\n"), _Holder(report)
            tail, tail_no = offset, line_no
            for line in lines[:-1]:
                for record in _records(name, line, tail, tail_no, report):
                    event = record.event
                    if event.batch_end > event.seq and event.batch_end == holder.batch_end:
                        holder.held.append(record)  # the next line of the batch held
                    elif holder.held or event.batch_end > event.seq:
                        yield from holder.take(record)
                    else:
                        yield record  # an event appended alone
                tail += len(line) + 1
                tail_no = None if tail_no is None else tail_no + 1
            if len(data) < size:
                break
            resume, resume_no = holder.start() or (tail, tail_no)
            size = size * 2 if resume == offset else _READ_CHUNK  # a batch or line past the chunk
            offset, line_no = resume, resume_no
    if include_torn_tail:
        holder.drop("unfinished batch (interrupted write)")
        if lines[-1]:
            report(Damage(name, tail, len(lines[-1]), None, "torn tail (no newline)"))


class _Holder:
    """Holds the records of a batch back until its last one is read."""

    def __init__(self, report: DamageHandler) -> None:
        self.held: list[Record] = []
        self.batch_end = 0  # of the batch held
        self.report = report

    def take(self, record: Record) -> Sequence[Record]:
        """The records that may be yielded now that ``record`` was read."""
        batch_end = record.event.batch_end
        if self.held and batch_end != self.batch_end:
            self.drop("batch cut short by a later line")
        if batch_end > record.event.seq:
            self.held.append(record)
            self.batch_end = batch_end
            return ()
        ready, self.held, self.batch_end = [*self.held, record], [], 0
        return ready

    def start(self) -> tuple[int, int | None] | None:
        """Where the held batch starts (its offset and line number), if one is held."""
        return (self.held[0].offset, self.held[0].line) if self.held else None

    def drop(self, reason: str) -> None:
        if self.held:
            first, last = self.held[0], self.held[-1]
            damage = Damage(
                first.segment, first.offset, last.end - first.offset, first.line, reason
            )
            self.report(damage)
            self.held, self.batch_end = [], 0


class _Once:
    """Passes each damage on once, though the unfinished end of a chunk is read again."""

    def __init__(self, handler: DamageHandler | None) -> None:
        self.handler = handler
        self.seen: set[Damage] = set()

    def __call__(self, damage: Damage) -> None:
        if self.handler is not None and damage not in self.seen:
            self.seen.add(damage)
            self.handler(damage)


def _records(
    segment: str, line: bytes, start: int, line_no: int | None, on_damage: DamageHandler
) -> tuple[Record, ...]:
    """The event of one line; a good line glued after a torn prefix is salvaged."""
    end = start + len(line) + 1
    try:
        return (Record(decode_line(line), segment, start, end, line_no),)
    except BadLine as exc:
        reason = exc.reason
    found: tuple[Record, ...] = ()
    salvaged = salvage(line)
    if salvaged is not None:
        cut, event = salvaged
        reason = "torn prefix glued to a good line"
        found = (Record(event, segment, start + cut, end, line_no),)
        line = line[:cut]
    on_damage(Damage(segment, start, len(line), line_no, reason))
    return found
