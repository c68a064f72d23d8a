"""Damage looked for on purpose: what a reader meets only by chance (``damage``), found
page by page and block by block for the commands that take the time (``memlog
catch-up``, ``memlog verify``)."""

from __future__ import annotations

import sqlite3

from memlog.home import Home
from memlog.projections.sqlite_view import index_files, packsums, store


def check(home: Home) -> str | None:
    """Why the views of ``home`` cannot be read as they were written: SQLite's check of
    every page of ``memory.db``, then every block of each packed file the view names
    (None when all is sound, or there is no view)."""
    path = home.db
    if not path.exists():
        return None
    try:
        with store.opened(path, readonly=True) as db:
            found = db.execute("PRAGMA quick_check").fetchone()[0]
            names = sorted(index_files.named(db))
    except sqlite3.DatabaseError as exc:
        return f"{path.name}: {exc}"
    if found != "ok":
        return f"{path.name}: {found}"
    for name in names:
        reason = packsums.full(home.index / name)
        if reason is not None:
            return f"{home.index.name}/{name}: {reason}"
    return None
