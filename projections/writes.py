"""What a catch-up writes once its fold is done: the entries and ledger rows it touched,
their packed records, the position, and which markdown files change.

The rows and records of what the fold did not touch are neither read nor written:
a catch-up's cost follows its events, whether they came in order (``runner``) or
late (``late``).
"""

from __future__ import annotations

import sqlite3
from typing import NamedTuple

from memlog.home import Home
from memlog.projections import markdown_sync
from memlog.projections.fold import Entry, State
from memlog.projections.markdown_view import render
from memlog.projections.sqlite_view import indexes, ledger, store
from memlog.vocabulary import Space


class Snapshot(NamedTuple):
    """What the view showed of the entries a catch-up changes, before it changes them."""

    signatures: dict[str, markdown_sync.Signature]
    blocks: dict[str, dict[str, str]]
    indexed: indexes.Signature

    @classmethod
    def of(cls, entries: dict[str, Entry], space: Space) -> Snapshot:
        return cls(
            {i: render.signature(e) for i, e in entries.items()},
            {i: markdown_sync.blocks(e) for i, e in entries.items()},
            indexes.signature(entries.values(), space),
        )


class Slots(NamedTuple):
    """The slot of each entry written (new ones included), how many slots in all, and the
    entries that took a slot out of their order among the others (``reslot``)."""

    of: dict[str, int]
    total: int
    reslotted: frozenset[str] = frozenset()


def write(
    db: sqlite3.Connection,
    folder: Home,
    space: Space,
    state: State,
    before: Snapshot,
    slots: Slots,
    after: store.Stored,
) -> markdown_sync.Changes:
    """Store the entries and ledger rows ``state`` touched, their packed records, and the
    position ``after`` the events folded (inside the caller's transaction); the markdown
    changes."""
    touched = [state.entries[i] for i in sorted(state.touched)]
    store.write_entries(db, touched, space, slots.of)
    ledger.write(db, state)
    indexes.refresh(db, folder, space, touched, before.indexed, slots.of, slots.total, after.seq,
                    slots.reslotted)  # fmt: skip
    store.set_meta(db, store.position_meta(after))
    return markdown_sync.changed_files(touched, before.signatures, before.blocks)
