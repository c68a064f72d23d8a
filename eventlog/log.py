"""The append-only event log: a directory of checksummed JSONL segments.

Appends are safe across processes on a local POSIX filesystem: every append
takes an exclusive ``flock`` on ``events/.lock``, repairs a torn tail a
crashed writer left (the torn bytes go to the quarantine file), assigns the
next sequence numbers, writes the whole batch with one ``os.write`` on an
``O_APPEND`` descriptor and fsyncs before returning.  A write that cannot
complete is truncated back, so the log is left exactly as it was.
"""

from __future__ import annotations

import errno
import fcntl
import os
import socket
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple, TypeVar

import msgspec

from memlog import __version__
from memlog.errors import HomeError, LogWriteError
from memlog.eventlog import segments as seg
from memlog.eventlog.codec import BadLine, decode_line, encode_line
from memlog.eventlog.events import Event, EventBase, Writer
from memlog.eventlog.ids import utc_now, uuid7
from memlog.eventlog.secrets import redact_event
from memlog.home import ensure_dir

DEFAULT_SEGMENT_BYTES = 64 << 20
LOCK_NAME = ".lock"
_READ_CHUNK = 8 << 20
_GLUE_MARK = b'{"type":"'
E = TypeVar("E", bound=EventBase)


class Position(NamedTuple):
    """A place in the log: a segment file name and a byte offset in it."""

    segment: str
    offset: int


START = Position("", 0)


class Record(NamedTuple):
    """An event read from the log, with where its line starts and ends."""

    event: Event
    segment: str
    offset: int
    end: int
    line: int | None

    @property
    def after(self) -> Position:
        return Position(self.segment, self.end)


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
    return Writer(
        tool=f"memlog/{__version__}", command=command, host=socket.gethostname(), pid=os.getpid()
    )


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
        self.segment_bytes = segment_bytes
        self.redact = redact
        self.writer = default_writer(command)

    # -- appending -----------------------------------------------------------

    def append(self, events: Sequence[E]) -> list[E]:
        """Append ``events`` atomically (all or none) and return them as stored."""
        if not events:
            return []
        prepared = [redact_event(e) if self.redact else e for e in events]
        with self._locked():
            path, first = self._tail_segment()
            stamped = self._stamp(prepared, first)
            self._write(path, b"".join(encode_line(e) for e in stamped))
        return stamped

    def _stamp(self, events: Sequence[E], first: int) -> list[E]:
        now = utc_now()
        return [
            msgspec.structs.replace(e, seq=first + i, id=uuid7(), ts=now, writer=self.writer)
            for i, e in enumerate(events)
        ]

    @contextmanager
    def _locked(self) -> Iterator[None]:
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
            yield
        finally:
            os.close(fd)

    def _tail_segment(self) -> tuple[Path, int]:
        """The segment to append to (repaired, rolled if full) and the next sequence."""
        paths = seg.list_segments(self.events_dir)
        last = int(paths[-1].name.split(".")[0]) - 1 if paths else 0
        for path in reversed(paths):
            found = self._repaired_last_seq(path)
            if found is not None:
                last = max(last, found)
                break
        if not paths or paths[-1].stat().st_size >= self.segment_bytes:
            return self._new_segment(last + 1), last + 1
        return paths[-1], last + 1

    def _repaired_last_seq(self, path: Path) -> int | None:
        fd = self._open(path, os.O_RDWR)
        try:
            size = os.fstat(fd).st_size
            good = seg.last_newline_end(fd, size)
            if good < size:
                self._cut_torn_tail(fd, path, good, size)
            return seg.last_seq(fd, good)
        finally:
            os.close(fd)

    def _cut_torn_tail(self, fd: int, path: Path, good: int, size: int) -> None:
        torn = os.pread(fd, size - good, good)
        seg.quarantine(self.home, path.name, good, torn, "torn tail left by an interrupted write")
        os.ftruncate(fd, good)
        os.fsync(fd)

    def _new_segment(self, first_seq: int) -> Path:
        path = self.events_dir / seg.segment_name(first_seq)
        os.close(self._open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL))
        seg.fsync_dir(self.events_dir)
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
        return seg.list_segments(self.events_dir)

    def read(
        self,
        start: Position = START,
        on_damage: DamageHandler | None = None,
        include_torn_tail: bool = False,
    ) -> Iterator[Record]:
        """Every good event from ``start`` on, in log order; bad lines go to ``on_damage``."""
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
) -> Iterator[Record]:
    """The good events of one segment from ``offset``; line numbers when ``offset`` is 0."""
    line_no: int | None = 1 if offset == 0 else None
    for line, start in _lines(path, offset, on_damage if include_torn_tail else None):
        yield from _records(path.name, line, start, line_no, on_damage)
        if line_no is not None:
            line_no += 1


def _lines(path: Path, offset: int, on_torn: DamageHandler | None) -> Iterator[tuple[bytes, int]]:
    with open(path, "rb") as handle:
        handle.seek(offset)
        pending = b""
        while chunk := handle.read(_READ_CHUNK):
            parts = (pending + chunk).split(b"\n")
            pending = parts.pop()
            for part in parts:
                yield part, offset
                offset += len(part) + 1
    if pending and on_torn is not None:
        on_torn(Damage(path.name, offset, len(pending), None, "torn tail (no newline)"))


def _records(
    segment: str, line: bytes, start: int, line_no: int | None, on_damage: DamageHandler | None
) -> Iterator[Record]:
    end = start + len(line) + 1
    try:
        yield Record(decode_line(line), segment, start, end, line_no)
        return
    except BadLine as exc:
        reason = exc.reason
    salvaged = _salvage(line)
    if salvaged is not None:
        cut, event = salvaged
        reason = "torn prefix glued to a good line"
        yield Record(event, segment, start + cut, end, line_no)
        line = line[:cut]
    if on_damage is not None:
        on_damage(Damage(segment, start, len(line), line_no, reason))


def _salvage(line: bytes) -> tuple[int, Event] | None:
    """A good line glued after a torn prefix: its offset in ``line`` and its event."""
    cut = line.find(_GLUE_MARK, 1)
    while cut > 0:
        try:
            return cut, decode_line(line[cut:])
        except BadLine:
            cut = line.find(_GLUE_MARK, cut + 1)
    return None
