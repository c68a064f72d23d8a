"""Keeping the views in step with the log: catch-up and full rebuild.

* ``catch_up`` applies the events after the view's stored position in one
  SQLite transaction (rows and position commit together), then rewrites
  only the markdown files whose content those events changed.
* ``rebuild`` folds the whole log (or a prefix of it, for time travel) into
  a database built aside, then switches it in with SQLite's backup API, so
  an open reader keeps a complete snapshot throughout.
* ``catch_up_in_background`` leaves a large catch-up to a detached process,
  for callers with no time to wait (the hook).
"""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

from memlog.errors import MemlogError, ViewError
from memlog.eventlog import redaction_journal, rewrite, snapshot, spool
from memlog.eventlog.bounds import Bound, within
from memlog.eventlog.events import Redacted
from memlog.eventlog.ids import utc_now
from memlog.eventlog.log import START, DamageHandler, EventLog, Record
from memlog.eventlog.merged import Late, Unfollowable, unread_bytes
from memlog.home import Home
from memlog.projections import late, leftovers, markdown_sync, writes
from memlog.projections.fold import State, apply
from memlog.projections.freshness import SHRUNK as SHRUNK
from memlog.projections.freshness import current_seq, shrunk, stored_seq
from memlog.projections.holds import device_of
from memlog.projections.markdown_view import render
from memlog.projections.markdown_view.writer import load_state, remove_unplanned
from memlog.projections.sqlite_view import (
    damage,
    index_files,
    indexes,
    ledger,
    lines,
    store,
    vectors,
)
from memlog.projections.sqlite_view.damage import is_corrupt
from memlog.projections.sqlite_view.schema import VIEW_FORMAT
from memlog.spawn import spawn_memlog
from memlog.vocabulary import DEFAULT_SPACE, Space

#: where versions before the packed slots kept the vector files
Progress = Callable[[int], None]


class CatchUp(NamedTuple):
    applied: int
    rebuilt: bool
    seq: int
    notes: list[str]
    #: of ``applied``, events that sorted before what the views held (folded in their place)
    late: int = 0


class Rebuilt(NamedTuple):
    applied: int
    live_entries: int
    seq: int
    notes: list[str]


class _NeedsRebuild(Exception):
    """The stored position no longer matches the log: ``said``, a line saying how when it
    is worth telling; ``redacted``, when a redaction is why."""

    def __init__(self, said: str = "", redacted: bool = False) -> None:
        super().__init__(said)
        self.said, self.redacted = [said] if said else [], redacted


# -- catch-up -----------------------------------------------------------------


def catch_up(
    home: Home | Path,
    space: Space = DEFAULT_SPACE,
    on_damage: DamageHandler | None = None,
    lock_wait: float | None = None,
) -> CatchUp:
    """Bring both views up to the end of the log; rebuild them when they cannot follow.

    A snapshot is read as it is.  ``lock_wait``: seconds to wait for another
    writer of ``memory.db`` (its busy timeout by default) before giving up
    with ``ViewError``; readers are never blocked by a writer, so a caller in
    a hurry reads the view as it stands instead.
    """
    home = Home.of(home)
    log = EventLog(home)
    rewrite.recover(log)  # a redaction a crash cut short is finished before anything reads
    finished = _finish_redaction(home, space)
    if finished:
        return finished
    _fold_spool(log)
    if not log.segments() and not home.db.exists():
        return CatchUp(0, False, 0, [])
    if snapshot.is_snapshot(home):
        return CatchUp(0, False, stored_seq(home), [])
    leftovers.remove_stale_asides(home)  # a rebuild's aside, the size of the view: even reads
    damaged = damage.marked(home)
    current = current_seq(home, space) if damaged is None else None
    if current is not None:
        return CatchUp(0, False, current, [])
    leftovers.sweep(home)  # what a killed writer left
    if damaged is not None:
        return _rebuilt(home, space, [f"the views were damaged ({damaged}): rebuilt from the log"])
    try:
        return _incremental(home, log, space, on_damage, lock_wait)
    except _NeedsRebuild as exc:
        return _rebuilt(home, space, exc.said, exc.redacted)
    except sqlite3.DatabaseError as exc:
        if not is_corrupt(exc):
            raise leftovers.failure(exc, home.db) or ViewError(
                f"cannot update {home.db}: {exc}"
            ) from None
        return _rebuilt(home, space, [f"{home.db.name} was damaged ({exc}): rebuilt"])
    except OSError as exc:
        raise leftovers.failure(exc, home.db) or exc from None


def _rebuilt(home: Home, space: Space, said: list[str], redacted: bool = False) -> CatchUp:
    """A catch-up that rebuilds the views from zero (``redacted``: after a redaction, so no
    page of the views from before it stays on disk)."""
    done = rebuild(home, space)
    if redacted:
        from memlog.projections.scrub import truncate_wal

        truncate_wal(home)
    return CatchUp(done.applied, True, done.seq, said + done.notes)


def _finish_redaction(home: Home, space: Space) -> CatchUp | None:
    """The views rebuilt once a redaction a run left unfinished is finished (None when
    there was none: its journal is what tells)."""
    if redaction_journal.pending(home) is None or snapshot.is_snapshot(home):
        return None
    from memlog.projections.scrub import finish_redaction

    built: list[Rebuilt] = []
    notes = finish_redaction(home, lambda: built.append(rebuild(home, space)))
    done = built[-1]
    return CatchUp(done.applied, True, done.seq, notes + done.notes)


def _fold_spool(log: EventLog) -> None:
    """Fold in what hooks spooled, when no writer holds the log (else it does)."""
    if not spool.waiting(log.home) or snapshot.is_snapshot(log.home):
        return
    with contextlib.suppress(MemlogError, OSError):  # a read-only home reads the log as it is
        with log._locked(wait=0):
            pass  # taking the lock folds them


def _incremental(
    home: Home,
    log: EventLog,
    space: Space,
    on_damage: DamageHandler | None,
    lock_wait: float | None = None,
) -> CatchUp:
    busy = store.BUSY_TIMEOUT_MS if lock_wait is None else max(int(lock_wait * 1000), 0)
    with _preparing(home), store.opened(home.db, busy_ms=busy) as db:
        with store.transaction(db), index_files.undoable(db, home):
            before = store.get_position(db)
            kept = _check_layout(db, before, space)
            try:
                try:
                    records = _records_after(log, before, on_damage)
                    changed, applied = _apply(db, home, kept, records), len(records)
                    arrived_late = 0
                except _Late:
                    changed, arrived_late = late.fold_in(db, home, kept, log, before, on_damage)
                    applied = arrived_late
            except late.Unplaceable as exc:
                raise _NeedsRebuild(redacted=str(exc) == late.REDACTION) from None
            except indexes.Unpatchable:
                raise _NeedsRebuild from None
            after = store.get_position(db)
        index_files.committed(home)
    _sweep(home)
    notes = markdown_sync.follow(home, home.db, changed, before, after)
    return CatchUp(applied, False, after.seq, notes, arrived_late)


class _Late(Exception):
    """Events past the stored position sort before events already folded."""


def _records_after(
    log: EventLog, stored: store.Stored, on_damage: DamageHandler | None
) -> list[Record]:
    segment = stored.position.segment
    if segment and unread_bytes(log.home, stored.position, stored.folded) is None:
        raise _NeedsRebuild(shrunk(log.home, stored))  # cut, rewritten or restored
    if not segment and stored.seq:
        raise _NeedsRebuild
    if not log.ends_at(stored.position, stored.seq):
        raise _NeedsRebuild  # the log was rewritten: the offset is no longer that event's end
    try:
        records = list(log.read(stored.position, on_damage))
    except Late:
        raise _Late from None
    except Unfollowable:
        raise _NeedsRebuild from None
    if records and records[0].ordinal <= stored.seq:
        raise _NeedsRebuild
    if any(isinstance(r.event, Redacted) for r in records):
        raise _NeedsRebuild(redacted=True)  # earlier lines rewritten: only a replay removes it
    return records


def _apply(
    db: sqlite3.Connection, folder: Home, space: Space, records: list[Record]
) -> markdown_sync.Changes:
    """Fold ``records`` into the stored entries they touch; return the markdown files changed.

    This is the whole of a catch-up's work on the views: it reads only the rows of the
    entries the events name and writes only what they change (``indexes.refresh``), so
    its cost follows the events, not the size of the view.
    """
    if not records:
        return markdown_sync.Changes({}, {})
    ids = {i for r in records for i in r.event.entry_ids}
    state = State(entries=store.load_entries(db, ids))
    vectors.attach(db, folder, state.entries)
    ledger.load(db, state, (r.event for r in records))
    before = writes.Snapshot.of(state.entries, space)
    slots, count = store.slots_of(db, state.entries), store.slot_count(db)
    for record in records:
        apply(state, record.event, device_of(record.segment))
    for n, entry_id in enumerate(state.created):
        slots[entry_id] = count + n
    total = count + len(state.created)
    lines.add(db, (row for r in records for row in lines.rows_of(r)))
    after = store.Stored.measured(folder, records[-1].after, records[-1].ordinal)
    return writes.write(db, folder, space, state, before, writes.Slots(slots, total), after)


def _check_layout(db: sqlite3.Connection, stored: store.Stored, space: Space) -> Space:
    """The space the catch-up keeps the view in: ``space``, or the view's own while no
    vector of ``space`` exists (``store.space_in_force``).  A view of another format or
    of a space to leave, or none yet, is rebuilt from zero."""
    if not stored.seq and not stored.position.segment:
        raise _NeedsRebuild  # nothing folded yet: a rebuild is the same work
    kept = store.space_in_force(db, space)
    if store.get_meta(db, "view_format") != VIEW_FORMAT or kept is None:
        raise _NeedsRebuild
    return kept


def _space_meta(space: Space) -> dict[str, str]:
    return {
        "embedding_provider": space.provider,
        "embedding_model": space.model,
        "embedding_dimensions": str(space.dimensions),
    }


# -- full rebuild ----------------------------------------------------------------


def fold_log(
    log: EventLog,
    until: Bound | None = None,
    progress: Progress | None = None,
    indexed: list[lines.Row] | None = None,
) -> tuple[State, store.Stored, int]:
    """Fold the log (up to ``until``, inclusive) from zero; the ``lines`` rows of its
    events added to ``indexed``, if given."""
    state, last, applied = State(), None, 0
    for record in log.read():
        event = record.event
        if until is not None and not within(record.ordinal, event.ts, None, until):
            break
        apply(state, event, device_of(record.segment))
        if indexed is not None:
            indexed += lines.rows_of(record)
        last, applied = record, applied + 1
        if progress is not None and applied % 1000 == 0:
            progress(1000)
    if progress is not None:
        progress(applied % 1000)
    place = (last.after, last.ordinal) if last else (START, 0)
    return state, store.Stored.measured(log.home, *place), applied


def rebuild(
    home: Home,
    space: Space = DEFAULT_SPACE,
    until: Bound | None = None,
    target: Home | None = None,
    progress: Progress | None = None,
) -> Rebuilt:
    """Rebuild both views from zero into ``target`` (the home by default).

    A ``target`` is marked as a snapshot before its views are written.
    """
    snapshot.refuse_writes(home, "rebuild the views of")
    folder = target or home
    folder.root.mkdir(mode=0o700, parents=True, exist_ok=True)
    indexed: list[lines.Row] = []
    state, stored, applied = fold_log(EventLog(home), until, progress, indexed)
    if target is not None:
        made = snapshot.Snapshot(str(home), stored.seq, until.text() if until else "", utc_now())
        snapshot.mark(target, made)
    try:
        _build_database(folder, state, space, stored, indexed)
    except (sqlite3.Error, OSError) as exc:
        raise leftovers.failure(exc, folder.db) or exc from None
    with markdown_sync.locked(folder):
        files, written = render.plan(state.entries.values()), load_state(folder)
        written.last = {}  # the files of a rebuild are rendered whole: no order known yet
        notes = remove_unplanned(folder, files, written)
        notes += markdown_sync.write_markdown(folder, files, written, stored)
    if target is None:
        damage.clear(home)  # what damage was noted is gone with the views it was found in
    live = sum(1 for e in state.entries.values() if e.live)
    return Rebuilt(applied, live, stored.seq, notes)


def _build_database(folder: Home, state: State, space: Space, stored: store.Stored,
                    indexed: list[lines.Row]) -> None:  # fmt: skip
    leftovers.sweep(folder)
    aside = leftovers.new_aside(folder)
    ordered = [state.entries[i] for i in state.created]  # slot order: creation order
    slots = {entry_id: n for n, entry_id in enumerate(state.created)}
    meta = {**_space_meta(space), **store.position_meta(stored), "view_format": VIEW_FORMAT}
    try:
        with _preparing(folder):  # no sweep until the live view names the new files
            with store.opened(aside) as db, store.transaction(db):
                store.write_entries(db, ordered, space, slots)
                ledger.write(db, state, everything=True)
                lines.add(db, indexed)
                store.set_meta(db, meta)
                indexes.rebuild(db, folder, space, ordered, stored.seq)
            leftovers.switch_in(aside, folder.db)
    finally:
        leftovers.remove_db_files(aside)  # a failed rebuild leaves nothing the size of the view
    _sweep(folder, wait=True)


@contextlib.contextmanager
def _preparing(folder: Home) -> Iterator[None]:
    """Hold off sweeps of every packed file while new ones are written and named."""
    with index_files.preparing(folder):
        yield


def _sweep(folder: Home, wait: bool = False) -> None:
    """Remove the packed files the committed view no longer names (and the folder of
    vector files earlier versions kept apart)."""
    index_files.sweep(folder, folder.db, wait, spare=not wait)  # a rebuild: every one
    legacy = folder.legacy_vectors
    if legacy.is_dir() and not legacy.is_symlink():  # a link: not memlog's to follow
        shutil.rmtree(legacy, ignore_errors=True)


def catch_up_in_background(home: Home, project: Path | None = None) -> None:
    """Start ``memlog catch-up`` detached, for ``project``'s configuration (its embedding
    space); nothing waits for it."""
    spawn_memlog(["catch-up"], home.root, project=project)
