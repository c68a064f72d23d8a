"""Events that arrive late, folded into their place without reading the whole log again.

Another device's events can sort before events the views already hold (a
machine that was offline for a week, a session that ran while others
synced).  The fold of an entry reads only the events about it, the fold of a
session only its own, a day's spend only that day's, so the entries, sessions
and days the late events touch are folded again from every event about them,
in the log's order, and nothing else is.  The view's ``lines`` table says
where those events are: their lines alone are read, so the cost follows the
late events and the history of what they touch, not the size of the log.
The runner writes what this makes, as a catch-up writes its events.

An entry's slot, the place of its records in the packed files, is its place
in the order the log created entries, as a replay gives it (``placing``).
A late event that creates an entry after every entry with a slot gives it
the next one.  One that creates an entry before them, or creates an entry
earlier than the views had it (its first observation came late), changes
the slots after it: the packed files are rewritten in the new order
(``reslot``), and the entries folded again are written at their new slots.
A redaction, a line that no longer reads as the event indexed there, or a
log that changed under the reader is ``Unplaceable``: the runner rebuilds the
views.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import NamedTuple

from memlog.eventlog.events import Event, Observed, Redacted
from memlog.eventlog.log import DamageHandler, EventLog, Position
from memlog.eventlog.merged import Unfolded, Unfollowable, advanced, decode, encode, unfolded
from memlog.home import Home
from memlog.projections import markdown_sync, writes
from memlog.projections.fold import Entry, State, apply
from memlog.projections.holds import device_of
from memlog.projections.markdown_view import branch, render
from memlog.projections.sqlite_view import ledger, lines, store, vectors
from memlog.vocabulary import Space

#: why late events with a redaction among them rebuild the views
REDACTION = "a redaction"


class Unplaceable(Exception):
    """The late events cannot be folded in place: the views are rebuilt from the log."""


class Touched(NamedTuple):
    """What the late events are about: entries, sessions, days of spend."""

    ids: set[str]
    sessions: set[str]
    days: set[str]

    @classmethod
    def by(cls, late: Iterable[Event]) -> Touched:
        events = list(late)
        sessions, days = ledger.touched_keys(events)
        return cls({i for e in events for i in e.entry_ids}, set(sessions), set(days))

    def keys(self) -> set[str]:
        """The ``lines`` keys of every event about them (and the maintenance times')."""
        found = {*self.ids, lines.MAINTENANCE}
        return found | {f"session:{s}" for s in self.sessions} | {f"day:{d}" for d in self.days}


class Refolded(NamedTuple):
    """The state of what the late events touched, as a replay makes it, and the first
    observation of each entry in it (``lines.First``); ``held``: the same folded from the
    events the views hold alone (what the views must show of it, ``check_held``)."""

    state: State
    firsts: dict[str, lines.First]
    held: State


def fold_in(
    db: sqlite3.Connection,
    folder: Home,
    space: Space,
    log: EventLog,
    stored_at: store.Stored,
    on_damage: DamageHandler | None,
) -> tuple[markdown_sync.Changes, int]:
    """Fold the events past ``stored_at`` into their place and write what they touched,
    as a catch-up writes its events (inside its transaction); the markdown changes and
    how many events there were.  ``Unplaceable`` when they cannot be."""
    try:
        found = late_records(log.home, stored_at.position, on_damage)
        base = decode(stored_at.position)
    except Unfollowable as exc:
        raise Unplaceable(str(exc)) from None
    touched = Touched.by(item.record.event for item in found)
    stored = store.load_entries(db, touched.ids)
    vectors.attach(db, folder, stored)
    before = writes.Snapshot.of(stored, space)
    done = refold(db, log.home, found, touched)
    check_held(db, done.held, stored, touched)
    after = store.Stored.measured(log.home, encode(advanced(base, found)), base.n + len(found))
    from memlog.projections import placing  # numpy: only when a late event comes

    try:
        placed = placing.place(db, folder, space, done.firsts, after.seq)
    except placing.Unplaced as exc:
        raise Unplaceable(str(exc)) from None
    lines.add(db, (row for item in found for row in _rows(item)))
    changes = writes.write(db, folder, space, done.state, before, placed, after)
    moved = [e for e in stored.values() if done.state.entries[e.id].created_seq != e.created_seq]
    return _whole_where(changes, moved, done.state), len(found)


def _rows(item: Unfolded) -> Iterable[lines.Row]:
    return lines.rows(item.key[0], item.record, item.record.event.entry_ids)


def _whole_where(
    changes: markdown_sync.Changes, moved: list[Entry], state: State
) -> markdown_sync.Changes:
    """The files showing an entry created earlier than the views had it (``moved``: as
    the views had it) are rendered whole (its block moves, even where it reads the same),
    not patched; a file it showed before is rendered with the project it had then (its
    first observation, and so its project and category, may be another one now)."""
    shown: set[str] = set()
    for entry in moved:
        shown |= {*markdown_sync.blocks(entry), *markdown_sync.blocks(state.entries[entry.id])}
        for path in render.paths_of(entry):
            if not branch.is_branch_file(path):
                changes.files.setdefault(path, set()).add(entry.source_project)
    edits = {p: e for p, e in changes.edits.items() if p not in shown}
    return markdown_sync.Changes(changes.files, edits)


def late_records(home: Home, position: Position, on_damage: DamageHandler | None) -> list[Unfolded]:
    """The events past ``position`` on every device (``Unfollowable`` when it no longer
    fits the log); a redaction among them is ``Unplaceable`` (only a replay removes the
    text it took out of earlier lines)."""
    late = list(unfolded(home, position, on_damage))
    if any(isinstance(item.record.event, Redacted) for item in late):
        raise Unplaceable(REDACTION)
    return late


class _Timed(NamedTuple):
    """An event in the merged order: its key, the event, whether it came late, and the
    device folder its line is in."""

    key: tuple[int, str]
    event: Event
    late: bool
    device: str


def refold(db: sqlite3.Connection, home: Home, late: list[Unfolded], touched: Touched) -> Refolded:
    """Fold again what ``late`` touched from every event about it: those the views hold
    (read where ``lines`` says they are) and the late ones, in the log's order."""
    held = [
        _Timed((line.stamp, e.id), e, False, device_of(line.segment))
        for line, e in _read(home, _held(db, touched))
    ]
    arrived = (_Timed(i.key, i.record.event, True, device_of(i.record.segment)) for i in late)
    timed = sorted([*held, *arrived], key=lambda t: t.key)
    state, firsts, before = State(), dict[str, lines.First](), State()
    keys = touched.keys()
    for key, event, arrived_late, device in timed:
        ids = event.entry_ids  # (an observation's id is a hash: once)
        if isinstance(event, Observed) and ids[0] in touched.ids and ids[0] not in firsts:
            firsts[ids[0]] = lines.First(key, arrived_late)
        if not keys.isdisjoint(lines.keys(event, ids)):  # (maintenance times: kept whole)
            apply(state, event, device)
            if not arrived_late:
                apply(before, event, device)
    state.touched = touched.ids & state.entries.keys()
    state.touched_ledger = {f"session:{s}" for s in touched.sessions if s in state.sessions}
    state.touched_ledger |= {f"spend:{d}" for d in touched.days if d in state.spend}
    return Refolded(state, firsts, before)


def _held(db: sqlite3.Connection, touched: Touched) -> dict[lines.Line, set[str]]:
    """Where the events about what ``touched`` names are, each line with the keys whose
    rows name it."""
    try:
        return lines.keyed(db, touched.keys())
    except lines.Damaged as exc:
        raise Unplaceable(str(exc)) from None


def _read(home: Home, found: dict[lines.Line, set[str]]) -> Iterable[tuple[lines.Line, Event]]:
    """The events at ``found`` (``Unplaceable`` when a line is gone, no longer one, or not
    an event about a key whose row named it)."""
    try:
        for line, event in lines.events_at(home, sorted(found)):
            if found[line].isdisjoint(lines.keys(event, event.entry_ids)):
                raise Unplaceable(f"a line indexed under {min(found[line])} is about other keys")
            yield line, event
    except lines.Damaged as exc:
        raise Unplaceable(str(exc)) from None


def check_held(
    db: sqlite3.Connection, held: State, stored: dict[str, Entry], touched: Touched
) -> None:
    """``Unplaceable`` unless the events the views hold about what ``touched`` names (read
    where ``lines`` says they are) fold to what the views show of it: the entries, the
    sessions, the days of spend and the maintenance times.  A row of ``lines`` that lost a
    line, names another key's lines, or is gone, folds to something else."""
    for entry_id in sorted(touched.ids):
        if held.entries.get(entry_id) != stored.get(entry_id):
            raise Unplaceable(f"the lines of entry {entry_id} do not fold to what the views hold")
    sessions = {s.id: s for s in ledger.stored_sessions(db, touched.sessions)}
    for session_id in sorted(touched.sessions):
        if held.sessions.get(session_id) != sessions.get(session_id):
            raise Unplaceable(f"the lines of session {session_id} do not fold to its row")
    days = {d.day: d for d in ledger.stored_spend(db, touched.days)}
    for day in sorted(touched.days):
        if held.spend.get(day) != days.get(day):
            raise Unplaceable(f"the lines of {day} do not fold to its spend")
    if held.maintenance != ledger.stored_maintenance(db):
        raise Unplaceable("the maintenance lines do not fold to the times the views hold")
