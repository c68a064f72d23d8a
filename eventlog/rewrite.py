"""Rewriting lines of the log in place, all or nothing: the one exception to append-only.

A redaction must take text out of lines already written.  ``rewrite`` does
it under the append lock, so no writer races it: every segment the log
lists is read, each good event is handed to ``edit`` (which returns the event
to store in its place, or None to keep the line byte for byte), damaged lines
are handed to ``scrub`` as bytes, and the events ``closing`` makes from the
edits are appended after the last line with the next sequence numbers.
Checksums are computed again; sequence numbers, ids, times and batches stay.

The switch is journalled, so a crash leaves the log wholly old or wholly new:

1. each changed segment is written beside itself as ``.<name>.rewrite`` and
   fsynced;
2. ``.rewrite.journal`` naming them is written atomically: the commit point;
3. each staged file is renamed over its segment, the last segment last, and
   the journal is removed.

A crash before (2) leaves the old log, and staged files (named beforehand in
``.rewrite.staging``) that ``finish`` removes; a crash after (2) is finished
by ``finish``.  Every writer runs it under the lock before it appends, and
catch-ups and ``verify`` before they read.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TypeVar

import msgspec

from memlog.eventlog import snapshot
from memlog.eventlog.codec import BadLine, bounded_line, decode_line
from memlog.eventlog.events import Event, EventBase
from memlog.eventlog.secrets import redact_batch
from memlog.files import atomic_write, fsync_dir, write_synced
from memlog.home import Home

STAGED_SUFFIX = ".rewrite"
E = TypeVar("E", bound=EventBase)
Edit = Callable[[Event], Event | None]
Scrub = Callable[[bytes], bytes]
Closing = Callable[["Rewritten"], Sequence[EventBase]]


class Log(Protocol):
    """What a rewrite needs of the log (``log.EventLog``, which takes its lock before it
    appends and so finishes a rewrite here: this module sits below it): its folders, its
    segments, its lock, its tail, its stamps and its high-water mark."""

    home: Home
    redact: bool

    def segments(self) -> list[Path]: ...

    def _locked(self, wait: float | None = None) -> AbstractContextManager[None]: ...

    def _tail_segment(self) -> tuple[Path, int]: ...

    def _stamp(
        self, events: Sequence[E], first: int, last_stamp: int | None = None, spooled: bool = False
    ) -> list[E]: ...

    def raise_mark(self, seq: int) -> None: ...


class Journal(msgspec.Struct):
    """The segments a committed rewrite replaces, relative to the log's directory."""

    segments: list[str]


@dataclass
class Rewritten:
    """What a rewrite changed: the edited events as stored now, the damaged lines scrubbed,
    and the events appended after them."""

    events: list[Event] = field(default_factory=list)
    scrubbed: int = 0
    appended: list[EventBase] = field(default_factory=list)


def stage(
    segments: Sequence[Path], tail: Path, edit: Edit, scrub: Scrub, changed: Rewritten
) -> dict[Path, bytes]:
    """The new bytes of every segment that changes; the tail segment last (it is always
    rewritten: the closing events go at its end)."""
    staged = {}
    for path in segments:
        new = rewrite_segment(path.read_bytes(), edit, scrub, changed)
        if new is not None and path != tail:
            staged[path] = new
        elif path == tail:
            staged[path] = path.read_bytes() if new is None else new
    return staged


def rewrite(log: Log, edit: Edit, scrub: Scrub, closing: Closing) -> Rewritten:
    """Edit lines of ``log`` in place and append ``closing``'s events, all or nothing.

    Nothing is written when ``closing`` returns no events.
    """
    done = Rewritten()
    with log._locked():
        tail, first = log._tail_segment()
        staged = stage(log.segments(), tail, edit, scrub, done)
        closing_events = redact_batch(closing(done)) if log.redact else list(closing(done))
        if closing_events:
            done.appended = log._stamp(closing_events, first)
            staged[tail] = staged.pop(tail) + b"".join(bounded_line(e) for e in done.appended)
            commit(log.home, staged)
            log.raise_mark(done.appended[-1].seq)
    return done


def recover(log: Log) -> bool:
    """Finish a rewrite a crash cut short after its commit point; True when there was one."""
    if not log.home.rewrite_journal.exists() or snapshot.is_snapshot(log.home):
        return False
    with log._locked():  # taking the lock finishes it
        return True


def staged_path(segment: Path) -> Path:
    return segment.with_name(f".{segment.name}{STAGED_SUFFIX}")


def rewrite_segment(data: bytes, edit: Edit, scrub: Scrub, changed: Rewritten) -> bytes | None:
    """The new bytes of one segment, or None when no line of it changes."""
    out, touched = [], False
    for line in data.splitlines(keepends=True):
        new = _rewrite_line(line, edit, scrub, changed)
        touched = touched or new != line
        out.append(new)
    return b"".join(out) if touched else None


def _rewrite_line(line: bytes, edit: Edit, scrub: Scrub, changed: Rewritten) -> bytes:
    try:
        event = decode_line(line)
    except BadLine:
        cleaned = scrub(line)
        changed.scrubbed += cleaned != line
        return cleaned
    replacement = edit(event)
    if replacement is None:
        return line
    changed.events.append(replacement)
    return bounded_line(replacement)


def commit(home: Home, staged: dict[Path, bytes]) -> None:
    """Stage every new segment, write the journal, then switch them in (see above)."""
    names = Journal([os.path.relpath(p, home.events) for p in staged])
    write_synced(home.rewrite_staging, msgspec.json.encode(names))  # leftovers can be found
    for path, data in staged.items():
        write_synced(staged_path(path), data)
    for folder in {p.parent for p in staged} | {home.events}:
        fsync_dir(folder)
    atomic_write(home.rewrite_journal, msgspec.json.encode(names), home.root)
    finish(home)


def finish(home: Home) -> bool:
    """Complete a committed rewrite a crash interrupted (True), or remove what one that
    never committed left staged (False).  Called under the append lock."""
    journal = _read(home.rewrite_journal)
    if journal is None:
        _drop_staged(home)
        return False
    for name in journal.segments:
        segment = home.segment(name)
        with contextlib.suppress(FileNotFoundError):  # renamed before the crash
            os.replace(staged_path(segment), segment)
    for folder in {home.segment(n).parent for n in journal.segments}:
        fsync_dir(folder)
    home.rewrite_journal.unlink()
    home.rewrite_staging.unlink(missing_ok=True)
    fsync_dir(home.events)
    return True


def _read(path: Path) -> Journal | None:
    try:
        return msgspec.json.decode(path.read_bytes(), type=Journal)
    except FileNotFoundError:
        return None
    except (
        msgspec.DecodeError,
        UnicodeDecodeError,
    ):  # torn while written: what it named is found by looking
        return Journal([])


def _drop_staged(home: Home) -> None:
    staging = _read(home.rewrite_staging)
    if staging is None:
        return  # the common case: no rewrite ever stopped half way
    folders = {home.segment(n).parent for n in staging.segments} | {home.events}
    journal = home.rewrite_journal.name
    for folder in folders:
        for path in [*folder.glob(f".*{STAGED_SUFFIX}"), *folder.glob(f".{journal}.*.tmp")]:
            path.unlink(missing_ok=True)
    home.rewrite_staging.unlink()
    fsync_dir(home.events)
