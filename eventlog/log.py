"""The append-only event log: a directory of checksummed JSONL segments.

Appends are safe across processes on a local POSIX filesystem: every append
takes an exclusive ``flock`` on ``events/.lock``, repairs a torn tail a
crashed writer left (the torn bytes, and the complete lines of a batch cut
short, go to the quarantine file), assigns the next sequence numbers, writes
the whole batch with one ``os.write`` on an ``O_APPEND`` descriptor and fsyncs
before returning, then raises the device's high-water mark (on the tail
segment's inode, or in ``.seq`` beside the segments): the next sequence is
always past it, so a tail that lost lines since never makes a sequence be
handed out twice.  A write that cannot
complete is truncated back, so the log is left exactly as it was.  Readers
hold back the lines of a batch until it is known whole, so no one ever sees
part of a batch a crash cut short; a batch written whole that lost a line at
rest loses that line only.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import msgspec

from memlog import files, locking
from memlog.errors import HomeError, LogBusy, LogWriteError
from memlog.eventlog import clock, devices, snapshot, spool, waiting
from memlog.eventlog import segments as seg
from memlog.eventlog.codec import bounded_line
from memlog.eventlog.envelope import default_writer as default_writer
from memlog.eventlog.events import EventBase, Held, Influenced, Observed
from memlog.eventlog.ids import uuid7
from memlog.eventlog.reader import START as START
from memlog.eventlog.reader import Damage as Damage
from memlog.eventlog.reader import DamageHandler as DamageHandler
from memlog.eventlog.reader import Mark as Mark
from memlog.eventlog.reader import Position as Position
from memlog.eventlog.reader import Record as Record
from memlog.eventlog.reader import is_own as is_own
from memlog.eventlog.reader import read_segment as read_segment
from memlog.eventlog.reader import written_in as written_in
from memlog.eventlog.reader import written_whole as written_whole
from memlog.home import Home, ensure_dir

DEFAULT_SEGMENT_BYTES = 64 << 20
E = TypeVar("E", bound=EventBase)


class EventLog:
    """The log under ``home/events``; one instance may append many times."""

    def __init__(
        self,
        home: Home | Path,
        *,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        redact: bool = True,
        command: str = "",
        lock_wait: float | None = None,
        screen: bool = True,
    ) -> None:
        self.home = Home.of(home)
        self.append_dir = self.home.events  # or this device's directory (``_own_dir``)
        self.segment_bytes = segment_bytes
        self.redact = redact
        self.screen = screen
        #: the ``entry.held`` events the last append added after observations (``_prepared``)
        self.held: list[Held] = []
        self.writer = default_writer(command)
        self.lock_wait = waiting.default_wait() if lock_wait is None else lock_wait
        self._last_stamp: int | None = None  # of the tail, when the appender read it
        self._folding = False  # folding what was spooled while the lock was held
        self._lost: tuple[int, int] | None = None  # the tail's lost sequences, once recorded

    # -- appending -----------------------------------------------------------

    def append(self, events: Sequence[E]) -> list[E]:
        """Append ``events`` atomically (all or none) and return them as stored; an
        observation the scan of lessons holds is followed, in the same batch, by its
        ``entry.held`` event (``held`` lists them as stored)."""
        if not events:
            return []
        prepared, added = self._prepared(events)
        with self._locked():
            stored = self._append_locked(prepared)
        self.held = [e for i, e in enumerate(stored) if i in added and isinstance(e, Held)]
        return [e for i, e in enumerate(stored) if i not in added]

    def append_or_spool(self, events: Sequence[E]) -> bool:
        """Append ``events`` when the log's lock is free, else spool them for the writer
        holding it (``spool``), without waiting; whether they were appended now."""
        if not events:
            return True
        prepared = [
            msgspec.structs.replace(e, id=uuid7(), writer=self.writer)
            for e in self._prepared(events)[0]
        ]
        try:
            with self._locked(wait=0):
                self._append_locked(prepared, spooled=True)
            return True
        except LogBusy:
            pass
        spool.spool(self.home, list(prepared))
        self._fold_left_over()  # its holder may have let go before the file was there
        return False

    def fold(self) -> None:
        """Fold in what hooks spooled (waiting for the lock as long as ``lock_wait``)."""
        with self._locked():
            pass  # taking the lock folds the spool

    def _prepared(self, events: Sequence[E]) -> tuple[list[E], set[int]]:
        """``events`` with secrets redacted, their door named, each observation the scan
        holds followed by its ``entry.held`` event and evidence it holds withheld
        (``screening``); the places of the events added."""
        prepared = list(events)
        if self.redact:  # the patterns load with the first append that needs them
            from memlog.eventlog.secrets import redact_batch

            prepared = redact_batch(prepared)
        if not self.screen or not any(isinstance(e, Observed | Influenced) for e in prepared):
            return prepared, set()
        from memlog.eventlog.screening import screened

        return screened(prepared, self.writer.command)

    def _append_locked(self, prepared: Sequence[E], spooled: bool = False) -> list[E]:
        path, first = self._tail_segment()
        stamped = self._stamp(prepared, first, self._last_stamp, spooled)
        self._write(path, b"".join(bounded_line(e) for e in stamped), stamped[-1].seq)
        return stamped

    def _stamp(
        self, events: Sequence[E], first: int, last_stamp: int | None = None, spooled: bool = False
    ) -> list[E]:
        """``events`` with their place in the log; spooled ones keep their ids and writer."""
        reading = clock.next_reading(self.append_dir, self.home, last_stamp)
        times = [clock.iso(reading + i) for i in range(len(events))]
        end = first + len(events) - 1 if len(events) > 1 else 0
        ids = [e.id if spooled else uuid7() for e in events]
        writers = [e.writer if spooled else self.writer for e in events]
        return [
            msgspec.structs.replace(
                e, seq=first + i, id=ids[i], ts=times[i], writer=writers[i], batch_end=end
            )
            for i, e in enumerate(events)
        ]

    def _fold_spool(self) -> None:
        """Fold in what hooks spooled, in order, each file once (see ``spool``)."""
        for path in spool.waiting(self.home):
            events = spool.load(path)
            if events is None:
                continue  # folded by another writer already
            if not events:
                spool.drop(self.home, path, "unreadable spooled file")
                continue
            self._tail_segment()  # a fold a crash cut short is cut off first: not in the log
            tail = seg.list_segments(self.append_dir)[-2:]
            if not spool.in_log_tail(tail, events):
                self._append_locked(events, spooled=True)
            spool.done(path)

    def _fold_left_over(self) -> None:
        """Fold what was spooled while the lock was held, unless another writer holds it
        now (it folds them then)."""
        if self._folding or not spool.waiting(self.home):
            return
        self._folding = True
        try:
            for _ in range(10):  # more keep coming only while hooks keep spooling
                if not spool.waiting(self.home):
                    break
                with self._locked(wait=0):
                    pass  # taking the lock folds them
        except LogBusy:
            pass
        finally:
            self._folding = False

    def _own_dir(self) -> Path:
        """``events/``, or this device's directory once the log is kept per device."""
        if not devices.is_per_device(self.home):
            return self.home.events
        own = self.home.device(devices.device_id(self.home, waiting.tell))
        return ensure_dir(files.no_links(own, self.home.root))

    @contextmanager
    def _locked(self, wait: float | None = None) -> Iterator[None]:
        """Hold the log's lock (waiting ``wait`` seconds at most, the log's ``lock_wait``
        by default: ``LogBusy`` past it), with a committed rewrite finished and the spool
        folded in; once it is let go, what was spooled meanwhile is folded too."""
        snapshot.refuse_writes(self.home, "append to the log of")
        ensure_dir(self.home.root)
        created = not self.home.events.exists()
        ensure_dir(files.no_links(self.home.events, self.home.root))
        if created:
            seg.fsync_dir(self.home.root)
        patience = self.lock_wait if wait is None else wait
        lock = locking.held(
            self.home.events_lock,
            patience,
            waiting.busy(self.home.events, patience),
            waiting.notice,
        )
        with contextlib.ExitStack() as stack:
            try:
                stack.enter_context(lock)
            except OSError as exc:
                raise HomeError(f"cannot write to {self.home.events}: {exc.strerror}") from None
            from memlog.eventlog import rewrite  # (its redaction loads the secret patterns)

            rewrite.finish(self.home)
            self.append_dir = self._own_dir()
            files.no_links(seg.high_water_path(self.append_dir), self.home.root)  # before any write
            self._fold_spool()
            yield
        self._fold_left_over()

    def _tail_segment(self) -> tuple[Path, int]:
        """The segment to append to (repaired, rolled if full) and the next sequence: past
        every sequence this device ever handed out, whatever its tail lost since."""
        paths = seg.list_segments(self.append_dir)
        written = self.written()
        last = int(paths[-1].name.split(".")[0]) - 1 if paths else 0
        self._last_stamp = None
        for index in reversed(range(len(paths))):
            found = self._repaired_last_seq(paths[index], written_whole(paths, index, written))
            if found is not None:
                last = max(last, found)
                break
        if written is not None and written > last:
            if self._lost != (last, written):  # recorded once, however often this runs
                self._acknowledge_lost_tail(last, written)
                self._lost = (last, written)
            last = written
        limit = self.segment_bytes if self.append_dir == self.home.events else devices.ROLL_BYTES
        if not paths or paths[-1].stat().st_size >= min(limit, self.segment_bytes):
            return self._new_segment(last + 1), last + 1
        return paths[-1], last + 1

    def written(self) -> int | None:
        """This device's high-water mark: the highest sequence it ever handed out (None for
        a log written before the mark was kept)."""
        return written_in(self.home, self.append_dir)

    def raise_mark(self, seq: int) -> None:
        """Raise this device's high-water mark to ``seq`` in ``.seq``, synced (a repair, a
        rewrite, events taken back: whatever replaces segments' inodes).  Under the lock."""
        try:
            seg.raise_high_water_file(self.append_dir, seq)
        except OSError as exc:
            raise LogWriteError(
                f"cannot write {seg.high_water_path(self.append_dir)}: {exc.strerror}"
            ) from None

    def _acknowledge_lost_tail(self, last: int, written: int) -> None:
        """Sequences handed out and acknowledged, gone from the end of the log since (the
        file was cut or restored): recorded, so they are never handed out again and
        ``verify`` names them."""
        device = "" if self.append_dir == self.home.events else f"{self.append_dir.name}/"
        reason = "sequence numbers missing from the end of the log"
        seqs = tuple(range(last + 1, written + 1))
        try:
            seg.quarantine(self.home, device, 0, b"", reason, None, seqs)
        except OSError as exc:
            raise LogWriteError(
                f"cannot record the sequences lost from the end of the log: {exc.strerror}; "
                "the log was left unchanged"
            ) from None

    def _repaired_last_seq(self, path: Path, written: int | None) -> int | None:
        """The last sequence in ``path`` once a torn tail is cut (None when it has none);
        ``_last_stamp`` is then the stamp of its last line, when it was read on the way."""
        fd = self._open(path, os.O_RDWR)
        try:
            size = os.fstat(fd).st_size
            clean = seg.clean_end(fd, size)  # most appends find this and read nothing more
            if clean is not None:
                self._last_stamp = clock.micros(clean.ts)
                return clean.seq
            good = seg.unfinished_batch_start(fd, seg.last_newline_end(fd, size), written)
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
            return files.open_private(path, flags)
        except OSError as exc:
            raise HomeError(f"cannot open {path}: {exc.strerror}") from None

    def _write(self, path: Path, data: bytes, last: int) -> None:
        """Append ``data`` (the lines up to sequence ``last``), then raise the high-water
        mark: on the segment's inode once the lines are synced (never ahead of them; the
        file system's next commit, or the next append's fsync, makes it durable, with no
        flush of its own), and in ``.seq`` (the file system's next commit writes it; at
        once where a file system keeps no attributes), which outlives the segment."""
        fd = self._open(path, os.O_WRONLY | os.O_APPEND)
        start = os.fstat(fd).st_size
        try:
            seg.write_all(fd, data)
            os.fsync(fd)
            marked = seg.mark_segment(fd, last)
            with contextlib.suppress(OSError):  # written: the next append raises it
                seg.raise_high_water_file(self.append_dir, last, sync=not marked)
        except OSError as exc:
            seg.truncate_quietly(fd, start)
            reason = exc.strerror or errno.errorcode.get(exc.errno or 0, str(exc))
            if exc.errno == errno.EFBIG:
                reason = f"{reason} (the file size limit, ulimit -f, stops it)"
            raise LogWriteError(
                f"cannot append to {path.name}: {reason}; the log was left unchanged"
            ) from None
        finally:
            os.close(fd)

    # -- reading -------------------------------------------------------------

    def segments(self) -> list[Path]:
        """Every segment: in log order when flat, by device then sequence when per device."""
        files.no_links(self.home.events, self.home.root)  # read as written: never through a link
        names = devices.device_dirs(self.home)
        if not names:
            return seg.list_segments(self.home.events)
        return [p for name in names for p in seg.list_segments(self.home.device(name))]

    def name_of(self, path: Path) -> str:
        """A segment's name in reports and positions (``<device>/<file>`` per device)."""
        return devices.relative_name(self.home, path)

    def ends_at(self, position: Position, ordinal: int) -> bool:
        """Whether event ``ordinal`` still ends at ``position`` (not so after a rewrite)."""
        if not position.offset:
            return True
        if devices.is_per_device(self.home):
            from memlog.eventlog.merged import marks_hold  # (only a log kept per device)

            return marks_hold(self.home, position)
        return seg.seq_ending_at(self.home.segment(position.segment), position.offset) == ordinal

    def read(
        self,
        start: Position = START,
        on_damage: DamageHandler | None = None,
        include_torn_tail: bool = False,
    ) -> Iterator[Record]:
        """Every good event from ``start`` on, in log order (kept per device: the merged
        order, see ``merged``); bad lines go to ``on_damage``."""
        files.no_links(self.home.events, self.home.root)  # read as written: never through a link
        if devices.is_per_device(self.home):
            from memlog.eventlog.merged import read_merged  # (only a log kept per device)

            yield from read_merged(self.home, start, on_damage)
            return
        paths = self.segments()
        written = self.written()
        for index, path in enumerate(paths):
            if start.segment and path.name < start.segment:
                continue
            offset = start.offset if path.name == start.segment else 0
            whole = written_whole(paths, index, written)
            yield from read_segment(path, offset, on_damage, include_torn_tail, written=whole)
