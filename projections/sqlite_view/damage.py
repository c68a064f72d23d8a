"""Views found damaged: noted in the home, rebuilt by the next command that writes them.

A reader that finds ``memory.db`` malformed (SQLite checks a page only when a
query reaches it), a packed file whose sums fail, or ``memlog verify`` finding
the views drifted from a rebuild, cannot always rebuild them there (a hook in
a hurry, a read-only moment).  It notes the damage (``mark``: one small file,
``.views-damaged``, with why); every catch-up looks for it first and rebuilds
the views aside from the log and swaps them in, then clears it.  ``soundness.check``
looks for such damage on purpose, page by page and block by block, for the
commands that take the time (``memlog catch-up``, ``memlog verify``).
"""

from __future__ import annotations

import contextlib
import sqlite3

from memlog.errors import MemlogError
from memlog.files import atomic_write
from memlog.home import Home

_CORRUPT_CODES = {11, 26}  # SQLITE_CORRUPT, SQLITE_NOTADB


def is_corrupt(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite finding the database malformed (or not a database)."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in _CORRUPT_CODES
    return "malformed" in str(exc) or "not a database" in str(exc)


def mark(home: Home, reason: str) -> bool:
    """Note that the views of ``home`` are damaged (``reason``); False when the home cannot
    be written (a snapshot, a read-only folder: the damage is then only said)."""
    from memlog.eventlog.snapshot import is_snapshot

    if is_snapshot(home) or not home.db.exists():
        return False
    try:
        atomic_write(home.views_damaged, f"{reason}\n".encode("utf-8", "replace"), home)
    except (OSError, MemlogError):
        return False
    return True


def marked(home: Home) -> str | None:
    """Why the views were noted damaged (None when they were not)."""
    try:
        return home.views_damaged.read_text(encoding="utf-8", errors="replace").strip() or "damaged"
    except OSError:
        return None


def clear(home: Home) -> None:
    with contextlib.suppress(FileNotFoundError):
        home.views_damaged.unlink()
