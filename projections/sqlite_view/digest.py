"""Fingerprints of ``memory.db``: one for the whole view, one per entry row.

Replay reports print them and audits compare them.  The packed files count by
what they hold, not by their names (a name says when a file was first
written): the records each view covers, and the lexical index as the one
base a rebuild would write.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import msgspec

from memlog.home import Home
from memlog.projections.sqlite_view import index_files, ranks, store, vectors
from memlog.projections.sqlite_view.plain import GRAPH

_ENC = msgspec.json.Encoder()
_TABLES = (
    ("_metadata", "key", "*"),
    ("entries", "id", "*"),
    ("vectors", "provider, model, entry_id", "*"),
    ("packed_sets WHERE kind != 'lxd'", "kind", "kind, count"),  # the delta: in lexicon's
    ("sessions", "id", "*"),
    ("spend", "day", "*"),
)
#: the slot files, by kind, with their magic
_SLOT_FILES = ((ranks.KIND, ranks.MAGIC), (vectors.KIND, vectors.MAGIC), GRAPH)


def sqlite_digest(home: Home) -> str:
    """sha256 of the view's content in a canonical order: the database's rows and what its
    packed files hold."""
    with store.opened(home.db, readonly=True) as db, store.snapshot(db):
        return digest_of(db, home)


def digest_of(db: sqlite3.Connection, folder: Home) -> str:
    """``sqlite_digest`` of an open connection (inside a read transaction: one state) to the
    database in ``folder``."""
    hasher = hashlib.sha256()
    for table, order, columns in _TABLES:
        for row in db.execute(f"SELECT {columns} FROM {table} ORDER BY {order}"):
            hasher.update(_ENC.encode(row))
    hasher.update(packed_digest(db, folder).encode("ascii"))
    return hasher.hexdigest()


def packed_digest(db: sqlite3.Connection, folder: Home) -> str:
    """sha256 of the records this snapshot's slot files cover and of the lexical index as
    one base (missing ones count as empty)."""
    from memlog.projections.sqlite_view import lexicon  # numpy: only when digesting

    hasher = hashlib.sha256()
    for kind, magic in _SLOT_FILES:
        found = index_files.slots(db, folder, kind, magic)
        hasher.update(kind.encode("ascii"))
        if found is not None:
            hasher.update(_ENC.encode([found.total, found.record, found.extra]))
            hasher.update(found.data)
    hasher.update(lexicon.canonical(db, folder) or b"")
    return hasher.hexdigest()


def entry_digests(path: Path) -> dict[str, str]:
    """A digest per entry row (for naming which entries drifted)."""
    with store.opened(path, readonly=True) as db:
        return entry_digests_of(db)


def entry_digests_of(db: sqlite3.Connection) -> dict[str, str]:
    rows = db.execute(f"SELECT {store.QUOTED_COLUMNS} FROM entries ORDER BY id")
    return {row[0]: hashlib.sha256(_ENC.encode(row)).hexdigest() for row in rows}
