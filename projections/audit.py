"""Audit: rebuild the views aside from the log and compare them with the live ones."""

from __future__ import annotations

import contextlib
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import msgspec

from memlog.eventlog.bounds import Bound
from memlog.projections import markdown_sync
from memlog.projections.freshness import db_path
from memlog.projections.markdown_view.writer import load_state, markdown_files
from memlog.projections.runner import catch_up, rebuild
from memlog.projections.sqlite_view import index_files, packed, packsums, store
from memlog.projections.sqlite_view.digest import (
    digest_of,
    entry_digests,
    entry_digests_of,
    sqlite_digest,
)
from memlog.projections.sqlite_view.index_files import INDEX_DIR
from memlog.projections.sqlite_view.vectors import VECTOR_DIR
from memlog.vocabulary import Space


class Audit(msgspec.Struct):
    seq: int
    sqlite_live: str
    sqlite_rebuilt: str
    markdown_live: dict[str, str]
    markdown_rebuilt: dict[str, str]
    drift: list[str]

    @property
    def clean(self) -> bool:
        return not self.drift


def audit(home: Path, space: Space) -> Audit:
    """Compare the live views with views rebuilt from the log up to the same event.

    Writers may run meanwhile (a loop of ``observe``): the database is read in one
    read transaction, at the position stored with its rows, and the markdown files
    under their lock, at the position their state records; each is compared with a
    rebuild up to its own position, so what a writer adds is never taken for drift.
    """
    catch_up(home, space)
    with _unswept(home):  # the packed files the snapshot names stay while they are checked
        live = _live_database(home)
        packed_drift = _packed_drift(home, live.packed)
    md_seq, md_live = _live_markdown(home)
    with tempfile.TemporaryDirectory(prefix="memlog-audit-") as tmp:
        aside = Path(tmp) / "views"
        rebuild(home, space, Bound(live.seq, None), aside)
        aside_db = sqlite_digest(db_path(aside))
        drift = [] if live.digest == aside_db else _entry_drift(live.entries, db_path(aside))
        if md_seq != live.seq:
            aside = Path(tmp) / "markdown"
            rebuild(home, space, Bound(md_seq, None), aside)
        md_aside = markdown_files(aside)
        drift += _file_drift(md_live, md_aside)
    drift += packed_drift
    return Audit(live.seq, live.digest, aside_db, md_live, md_aside, drift)


class _Live(NamedTuple):
    """The live database as one read transaction saw it, and the packed files it names."""

    seq: int
    digest: str
    entries: dict[str, str]
    packed: list[str]


def _live_database(home: Path) -> _Live:
    with store.opened(db_path(home), readonly=True) as db, store.snapshot(db):
        seq = store.get_position(db).seq
        return _Live(seq, digest_of(db), entry_digests_of(db), _named_files(db))


#: the tables naming packed files, and the folder each kind lives in
_POINTERS = (("packed_sets", INDEX_DIR), ("vector_sets", VECTOR_DIR))


def _named_files(db: sqlite3.Connection) -> list[str]:
    found = []
    for table, folder in _POINTERS:
        with contextlib.suppress(sqlite3.OperationalError):  # a table a schema lacks
            found += [f"{folder}/{row[0]}" for row in db.execute(f"SELECT file FROM {table}")]
    return sorted(found)


def _packed_drift(home: Path, names: list[str]) -> list[str]:
    """Every packed file the view names, checked block by block against its sums (its
    content against a rebuild's: the index files' names, which are their content, are
    in the database the rebuild is compared with)."""
    drift = []
    for rel in names:
        reason = packsums.full(home / rel)
        if reason is not None:
            drift.append(f"{rel}: {reason} (memlog replay writes it again)")
    return drift


@contextlib.contextmanager
def _unswept(home: Path) -> Iterator[None]:
    """Hold off sweeps of the packed files (as a writer preparing files does)."""
    with packed.preparing(home / VECTOR_DIR), index_files.preparing(home):
        yield


def _live_markdown(home: Path) -> tuple[int, dict[str, str]]:
    """The markdown files as they are and the position they reflect (no writer between)."""
    with markdown_sync.locked(home):
        return load_state(home).seq, markdown_files(home)


def _entry_drift(live: dict[str, str], aside: Path) -> list[str]:
    rebuilt = entry_digests(aside)
    drift = []
    for entry_id in sorted(live.keys() | rebuilt.keys()):
        if entry_id not in rebuilt:
            drift.append(f"memory.db: entry {entry_id} is not in the log")
        elif entry_id not in live:
            drift.append(f"memory.db: entry {entry_id} is missing")
        elif live[entry_id] != rebuilt[entry_id]:
            drift.append(f"memory.db: entry {entry_id} differs from the log")
    return drift or ["memory.db: metadata or vectors differ from the log"]


def _file_drift(live: dict[str, str], rebuilt: dict[str, str]) -> list[str]:
    drift = []
    for rel in sorted(live.keys() | rebuilt.keys()):
        if live.get(rel) != rebuilt.get(rel):
            state = "missing" if live.get(rel) in (None, "missing") else "differs (edited by hand?)"
            drift.append(f"{rel}: {state}")
    return drift
