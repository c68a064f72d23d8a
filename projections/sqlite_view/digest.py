"""Fingerprints of ``memory.db``: one for the whole view, one per entry row.

Replay reports print them and audits compare them; the packed vector files
are left out (their names are not content).
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import msgspec

from memlog.projections.sqlite_view import store

_ENC = msgspec.json.Encoder()
_TABLES = (
    ("_metadata", "key"),
    ("entries", "id"),
    ("vectors", "provider, model, entry_id"),
    ("vector_sets", "provider, model"),
    ("lexical_terms", "entry_id"),
    ("packed_sets", "kind"),  # content-named files: the name is the content
    ("sessions", "id"),
    ("spend", "day"),
)


def sqlite_digest(path: Path) -> str:
    """sha256 of the database's content in a canonical order (packed file names left out)."""
    with store.opened(path, readonly=True) as db:
        return digest_of(db)


def digest_of(db: sqlite3.Connection) -> str:
    """``sqlite_digest`` of an open connection (inside a read transaction: one state)."""
    hasher = hashlib.sha256()
    for table, order in _TABLES:
        columns = "provider, model, dimensions, count" if table == "vector_sets" else "*"
        for row in db.execute(f"SELECT {columns} FROM {table} ORDER BY {order}"):
            hasher.update(_ENC.encode(row))
    return hasher.hexdigest()


def entry_digests(path: Path) -> dict[str, str]:
    """A digest per entry row (for naming which entries drifted)."""
    with store.opened(path, readonly=True) as db:
        return entry_digests_of(db)


def entry_digests_of(db: sqlite3.Connection) -> dict[str, str]:
    rows = db.execute(f"SELECT {store.QUOTED_COLUMNS} FROM entries ORDER BY id")
    return {row[0]: hashlib.sha256(_ENC.encode(row)).hexdigest() for row in rows}
