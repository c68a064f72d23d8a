"""Events that arrive late, folded into their place without folding the whole log again.

Another device's events can sort before events the views already hold (a
machine that was offline for a week, a session that ran while others
synced).  The fold of an entry reads only the events about it, the fold of a
session only its own, a day's spend only that day's, so the entries, sessions
and days the late events touch are folded again from every event about them,
in the log's order, and nothing else is: the rest of the log is read, not
folded.  The runner writes what this makes, as a catch-up writes its events.

An entry's slot, the place of its records in the packed files, is its place
in the order the log created entries, as a replay gives it.  A late event
that creates an entry after every entry with a slot gives it the next one.
One that creates an entry before them, or creates an entry earlier than the
views had it (its first observation came late), changes the slots after it:
the packed files are rewritten in the new order (``reslot``), records moved
and the slots they name renumbered, and the entries folded again are written
at their new slots.  Only a redaction, or a log that changed under the
reader, is ``Unplaceable``: the runner rebuilds the views.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

from memlog.eventlog.events import (
    Event,
    MaintenanceRan,
    MemoryEvolved,
    Observed,
    Redacted,
    SessionPending,
    SessionProgress,
)
from memlog.eventlog.log import DamageHandler, EventLog, Position, Record
from memlog.eventlog.merged import Cursor, Unfollowable, decode, unfolded
from memlog.projections import markdown_sync, writes
from memlog.projections.fold import State, apply
from memlog.projections.sqlite_view import ledger, reslot, store, vectors
from memlog.vocabulary import Space


class Unplaceable(Exception):
    """The late events cannot be folded in place: the views are rebuilt from the log."""


class Touched(NamedTuple):
    """What the late events are about: entries, sessions, days of spend."""

    ids: set[str]
    sessions: set[str]
    days: set[str]

    @classmethod
    def by(cls, late: list[Record]) -> Touched:
        sessions, days = ledger.touched_keys(r.event for r in late)
        return cls({i for r in late for i in r.event.entry_ids}, set(sessions), set(days))


class Refolded(NamedTuple):
    """The state of what the late events touched, as a replay makes it; every entry's slot
    as a replay gives it (its place in the order of creation); the entries whose first
    observation is among the late events; and the last record read."""

    state: State
    created: dict[str, int]
    created_late: set[str]
    last: Record


def fold_in(
    db: sqlite3.Connection,
    folder: Path,
    space: Space,
    log: EventLog,
    stored_at: store.Stored,
    on_damage: DamageHandler | None,
) -> tuple[markdown_sync.Changes, int]:
    """Fold the events past ``stored_at`` into their place and write what they touched,
    as a catch-up writes its events (inside its transaction); the markdown changes and
    how many events there were.  ``Unplaceable`` when they cannot be."""
    try:
        found = late_records(log.events_dir, stored_at.position, on_damage)
    except Unfollowable as exc:
        raise Unplaceable(str(exc)) from None
    touched = Touched.by(found)
    stored = store.load_entries(db, touched.ids)
    vectors.attach(db, folder, stored)
    before = writes.Snapshot.of(stored, space)
    slots, count = store.slots_of(db, stored), store.slot_count(db)
    done = refold(log, found, stored_at.position, touched)
    placed = _place(db, folder, space, slots, count, done)
    changes = writes.write(db, folder, space, done.state, before, placed, done.last)
    moved = {i for i, e in stored.items() if done.state.entries[i].created_seq != e.created_seq}
    return _whole_where(changes, moved), len(found)


def _place(db: sqlite3.Connection, folder: Path, space: Space, slots: dict[str, int], count: int,
           done: Refolded) -> writes.Slots:  # fmt: skip
    """The slots of the entries folded again: each its place in the order of creation.
    When that moves an entry with a slot (one was created before it), every row and
    packed record moves to its new slot first (``reslot``); ``Unplaceable`` when they
    cannot be moved."""
    placed = {i: done.created[i] for i in done.state.touched}
    total = len(done.created)
    if all(done.created.get(i) == slot for i, slot in slots.items()) and all(
        s >= count for i, s in placed.items() if i not in slots
    ):
        return writes.Slots(placed, total)
    if not reslot.move(db, folder, space, done.created, total, done.last.ordinal):
        raise Unplaceable("the packed files do not cover the entries' slots")
    return writes.Slots(placed, total, frozenset(done.created_late & slots.keys()))


def _whole_where(changes: markdown_sync.Changes, moved: set[str]) -> markdown_sync.Changes:
    """The files showing an entry created earlier than the views had it are rendered
    whole (its block moves), not patched."""
    edits = {p: e for p, e in changes.edits.items() if all(x.key[1] not in moved for x in e)}
    return markdown_sync.Changes(changes.files, edits)


def late_records(
    events_dir: Path, position: Position, on_damage: DamageHandler | None
) -> list[Record]:
    """The events past ``position`` on every device (``Unfollowable`` when it no longer
    fits the log); a redaction among them is ``Unplaceable`` (only a replay removes the
    text it took out of earlier lines)."""
    late = list(unfolded(events_dir, position, on_damage))
    if any(isinstance(r.event, Redacted) for r in late):
        raise Unplaceable("a redaction")
    return late


def refold(log: EventLog, late: list[Record], position: Position, touched: Touched) -> Refolded:
    """Fold again what ``late`` touched, from the whole log up to the last of ``late``
    (``position``: where the views stood), and place every entry in the order the log
    created them."""
    state, last, created = State(), None, dict[str, int]()
    waiting, created_late = {(r.segment, r.offset) for r in late}, set[str]()
    for record in _up_to(log.read(), decode(position), late):
        last, ids = record, record.event.entry_ids  # (an observation's id is a hash: once)
        if isinstance(record.event, Observed) and ids[0] not in created:
            created[ids[0]] = len(created)
            if (record.segment, record.offset) in waiting:
                created_late.add(ids[0])
        if _about(record.event, ids, touched):
            apply(state, record.event)
    if last is None:
        raise Unplaceable("the log lost its events meanwhile")
    state.touched = touched.ids & state.entries.keys()
    state.touched_ledger = {f"session:{s}" for s in touched.sessions if s in state.sessions}
    state.touched_ledger |= {f"spend:{d}" for d in touched.days if d in state.spend}
    return Refolded(state, created, created_late, last)


def _up_to(records: Iterable[Record], folded: Cursor, late: list[Record]) -> Iterator[Record]:
    """``records`` (the whole log) up to the last one folded or in ``late``: a record
    appended since ``late`` was read ends them, unless one of ``late`` is still to come
    (then the order is not known)."""
    waiting = {(r.segment, r.offset) for r in late}
    for record in records:
        device, _, name = record.segment.partition("/")
        mark = folded.devices.get(device)
        if mark is not None and (name, record.offset) < (mark.segment, mark.end):
            yield record  # folded before
        elif (record.segment, record.offset) in waiting:
            waiting.discard((record.segment, record.offset))
            yield record
        elif waiting:
            raise Unplaceable("an event was appended among the late ones")
        else:
            return
    if waiting:
        raise Unplaceable("a late event is gone (the log was rewritten meanwhile)")


def _about(event: Event, ids: tuple[str, ...], touched: Touched) -> bool:
    """Whether ``event`` (about the entries ``ids``) is part of the fold of an entry,
    session or day of spend ``touched`` names (or of the maintenance times, kept whole)."""
    if isinstance(event, MaintenanceRan):
        return True
    if isinstance(event, SessionPending | SessionProgress | MemoryEvolved):
        return event.session_id in touched.sessions or event.ts[:10] in touched.days
    return not touched.ids.isdisjoint(ids)
