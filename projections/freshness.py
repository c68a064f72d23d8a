"""Whether the views already reflect the whole log: read-only checks, no projection code.

A reader that finds the views current reads them as they are and never
loads the projectors (the hook on most starts); ``runner.catch_up`` uses the
same checks before it opens anything for writing, so reading commands also
work on a read-only home.
"""

from __future__ import annotations

import sqlite3

from memlog.eventlog.log import START, EventLog, Position
from memlog.eventlog.merged import unread_bytes
from memlog.home import Home
from memlog.projections.markdown_view.writer import FORMAT, load_state
from memlog.projections.sqlite_view import damage, store
from memlog.projections.sqlite_view.schema import SCHEMA_VERSION, VIEW_FORMAT
from memlog.vocabulary import Space

SPACE_KEYS = ("embedding_provider", "embedding_model", "embedding_dimensions")


def current_seq(home: Home, space: Space) -> int | None:
    """The views' sequence when they already reflect the whole log in ``space``, else None
    (also while a redaction a crash cut short waits to be finished, or damage found in
    them waits to be rebuilt)."""
    if not home.db.exists() or home.rewrite_journal.exists():
        return None
    if home.redaction_journal.exists():
        return None  # a redaction to finish: the views may hold its text
    if damage.marked(home) is not None:
        return None  # the next catch-up rebuilds them
    try:
        with store.opened(home.db, readonly=True) as db:
            in_space = store.space_in_force(db, space) is not None
            version = store.get_meta(db, "schema_version")
            view_format = store.get_meta(db, "view_format")
            stored = store.get_position(db)
    except sqlite3.DatabaseError:
        return None
    if unread_bytes(home, stored.position, stored.folded) != 0:
        return None
    current = in_space and version == str(SCHEMA_VERSION) and view_format == VIEW_FORMAT
    current = current and _markdown_current(home)
    return stored.seq if current and _still_there(home, stored) else None


def _still_there(home: Home, stored: store.Stored) -> bool:
    return EventLog(home).ends_at(stored.position, stored.seq)


def _markdown_current(folder: Home) -> bool:
    state = load_state(folder)
    if state.format != FORMAT:
        return False
    return unread_bytes(folder, Position(state.segment, state.offset)) == 0


def lag_bytes(home: Home) -> int:
    """How many bytes of log the SQLite view has not applied yet (all of it without a view)."""
    total = unread_bytes(home, START) or 0
    if not home.db.exists():
        return total
    try:
        with store.opened(home.db, readonly=True) as db:
            stored = store.get_position(db)
    except sqlite3.DatabaseError:
        return 0  # unreadable: catch_up rebuilds it, whatever the size
    found = unread_bytes(home, stored.position, stored.folded)
    return total if found is None else found


def stored_seq(home: Home) -> int:
    """The sequence the SQLite view stands at (0 when it cannot be read)."""
    try:
        with store.opened(home.db, readonly=True) as db:
            return store.get_position(db).seq
    except sqlite3.DatabaseError:
        return 0


#: what a catch-up says when the log holds less than the views were folded from
SHRUNK = (
    "the log holds less than the views were built from (a segment deleted or cut short; "
    "memlog verify names what is missing): the views were rebuilt from what is left, and "
    "no sequence number handed out is used again"
)


def shrunk(home: Home, stored: store.Stored) -> str:
    """``SHRUNK`` when the log before the views' place is shorter than what they folded
    (or the segment it names is gone), "" when it grew or was rewritten (a redaction, a
    segment taken back from the remote)."""
    from memlog.eventlog.merged import folded_bytes

    now = folded_bytes(home, stored.position)
    return SHRUNK if now < 0 or 0 <= now < stored.folded else ""
