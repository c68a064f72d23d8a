"""Slots for entries whose events arrive late: each entry's place in the order of creation.

A replay gives entries their slots in the order the log created them (the
merge key of each one's first observation).  The entries that hold slots are
already in that order, so where a late entry goes is a binary search among
them: the key of the first observation of the entry at a slot comes from the
view's ``lines`` (the lines of its observations with the lowest stamp, read
when stamps tie).  An entry the views hold whose first observation came
late takes a new place too.  When every new entry comes after the entries
with slots and none of those moves, new entries take the next slots; else
every record moves to its new slot (``reslot``) first.
"""

from __future__ import annotations

import sqlite3

import numpy as np

from memlog.home import Home
from memlog.projections import writes
from memlog.projections.sqlite_view import lines, ranks, reslot, store
from memlog.vocabulary import Space

Key = tuple[int, str]


class Unplaced(Exception):
    """The slots cannot be worked out (a line or a packed file no longer reads)."""


def place(db: sqlite3.Connection, folder: Home, space: Space,
          firsts: dict[str, lines.First], ordinal: int) -> writes.Slots:  # fmt: skip
    """The slot of each entry of ``firsts`` as a replay gives it, every row and packed
    record moved first when an entry with a slot moves (inside the caller's transaction,
    before the late events' lines are added)."""
    slots, count = store.slots_of(db, firsts), store.slot_count(db)
    moved = {i for i, first in firsts.items() if i in slots and first.late}
    coming = sorted((firsts[i].key, i) for i in firsts if i not in slots or i in moved)
    total = count + sum(1 for i in firsts if i not in slots)
    if not coming:
        return writes.Slots(dict(slots), total)
    keys = _Keys(db, folder)
    below = _counts([key for key, _ in coming], keys, count)
    moved_slots = np.array(sorted(slots[i] for i in moved), dtype=np.int64)
    at = np.array(below, dtype=np.int64) - np.searchsorted(moved_slots, below)  # among the rest
    placed = {i: slots[i] for i in firsts if i in slots and i not in moved}
    new_of_old = _new_of_old(count, moved_slots, at)
    placed |= {i: int(new_of_old[slots[i]]) for i in placed}
    placed |= {i: int(at[n]) + n for n, (_, i) in enumerate(coming)}
    for i in moved:
        new_of_old[slots[i]] = placed[i]
    if (new_of_old == np.arange(count)).all():
        return writes.Slots(placed, total)
    if not reslot.move(db, folder, space, new_of_old, total, ordinal):
        raise Unplaced("the packed files do not cover the entries' slots")
    return writes.Slots(placed, total, frozenset(moved))


def _new_of_old(count: int, moved: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Each old slot's new one, for the entries that keep their order (``moved``: the old
    slots of those that do not; ``at``: where each coming entry goes among the others,
    ascending)."""
    old = np.arange(count, dtype=np.int64)
    rank = old - np.searchsorted(moved, old)  # place among the entries that keep their order
    new_of_old: np.ndarray = rank + np.searchsorted(at, rank, side="right")
    return new_of_old


def _counts(wanted: list[Key], keys: _Keys, count: int) -> list[int]:
    """For each of ``wanted`` (ascending), how many slots hold an entry first observed
    before it."""
    found, low = [], 0
    for key in wanted:
        high = count
        if high and keys.at(high - 1) < key:  # after every one: the common case, one probe
            low = high
        while low < high:
            middle = (low + high) // 2
            if keys.at(middle) < key:
                low = middle + 1
            else:
                high = middle
        found.append(low)
    return found


class _Keys:
    """The merge key of the first observation of the entry at each slot, read on demand."""

    def __init__(self, db: sqlite3.Connection, folder: Home) -> None:
        self.db, self.home = db, folder
        found = ranks.read(db, folder)
        if found is None:
            raise Unplaced("the ranking records are missing")
        self.ids, self.known = found, dict[int, Key]()

    def at(self, slot: int) -> Key:
        if slot not in self.known:
            self.known[slot] = self._read(slot)
        return self.known[slot]

    def _read(self, slot: int) -> Key:
        size = ranks.RECORD.size
        entry_id = bytes(self.ids.data[slot * size : slot * size + 16]).decode("ascii")
        try:
            found = lines.first_observations(self.db, entry_id)
            keys = [(line.stamp, e.id) for line, e in lines.events_at(self.home, found)]
        except lines.Damaged as exc:
            raise Unplaced(f"the first observation of {entry_id} no longer reads: {exc}") from None
        if not keys:
            raise Unplaced(f"no observation of {entry_id} is indexed")
        return min(keys)
