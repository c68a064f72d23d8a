"""Audit: rebuild the views aside from the log and compare them with the live ones."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path
from typing import NamedTuple

import msgspec

from memlog.eventlog.bounds import Bound
from memlog.home import Home
from memlog.projections import markdown_sync
from memlog.projections.freshness import stored_seq
from memlog.projections.markdown_view.writer import load_state, markdown_files
from memlog.projections.runner import catch_up, rebuild
from memlog.projections.sqlite_view import index_files, packsums, store
from memlog.projections.sqlite_view.damage import is_corrupt
from memlog.projections.sqlite_view.digest import (
    digest_of,
    entry_digests,
    entry_digests_of,
    sqlite_digest,
)
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


def audit(home: Home, space: Space) -> Audit:
    """Compare the live views with views rebuilt from the log up to the same event.

    Writers may run meanwhile (a loop of ``observe``): the database and the packed
    files are read under the view's write lock, at the position stored with its rows,
    and the markdown files under their lock, at the position their state records; each
    is compared with a rebuild up to its own position, so what a writer adds is never
    taken for drift.  The rebuild is in the space the view is in (it keeps its own
    while ``space`` has no vector).
    """
    catch_up(home, space)
    try:
        live = _live_database(home)
    except sqlite3.DatabaseError as exc:
        if not is_corrupt(exc):
            raise
        live = _Live(stored_seq(home), None, "", {}, [f"{home.db.name}: {exc}"])
    md_seq, md_live = _live_markdown(home)
    kept = live.space or space
    with tempfile.TemporaryDirectory(prefix="memlog-audit-") as tmp:
        aside = Home(Path(tmp) / "views")
        rebuild(home, kept, Bound(live.seq, None), aside)
        aside_db = sqlite_digest(aside)
        drift = (
            []
            if live.digest == aside_db or not live.digest
            else _entry_drift(live.entries, aside.db)
        )
        if md_seq != live.seq:
            aside = Home(Path(tmp) / "markdown")
            rebuild(home, kept, Bound(md_seq, None), aside)
        md_aside = markdown_files(aside)
        drift += _file_drift(md_live, md_aside)
    drift += live.packed_drift
    return Audit(live.seq, live.digest, aside_db, md_live, md_aside, drift)


class _Live(NamedTuple):
    """The live database and its packed files as one moment saw them."""

    seq: int
    space: Space | None
    digest: str
    entries: dict[str, str]
    packed_drift: list[str]


def _live_database(home: Home) -> _Live:
    """Read under the view's write lock: a catch-up patches packed records in place
    inside its write transaction, so a read transaction alone could see records of
    a later position than its rows'.  The sweep is held off meanwhile (the files the
    view names stay while they are checked)."""
    path = home.db
    with index_files.preparing(home), store.opened(path) as db, store.transaction(db):
        with index_files.undoable(db, home):  # what a killed catch-up patched goes back
            pass
        index_files.committed(home)
        return _Live(
            store.get_position(db).seq,
            store.space_of(db),
            digest_of(db, home),
            entry_digests_of(db),
            _packed_drift(home, _named_files(db)),
        )


def _named_files(db: sqlite3.Connection) -> list[str]:
    return sorted(row[0] for row in db.execute("SELECT file FROM packed_sets"))


def _packed_drift(home: Home, names: list[str]) -> list[str]:
    """Every packed file the view names, checked block by block against its sums (what
    the files hold is compared with a rebuild's in the digest)."""
    drift = []
    for name in names:
        reason = packsums.full(home.index / name)
        if reason is not None:
            rel = f"{home.index.name}/{name}"
            drift.append(f"{rel}: {reason} (memlog replay writes it again)")
    return drift


def _live_markdown(home: Home) -> tuple[int, dict[str, str]]:
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
    return drift or ["memory.db: metadata, vectors or packed index files differ from the log"]


def _file_drift(live: dict[str, str], rebuilt: dict[str, str]) -> list[str]:
    drift = []
    for rel in sorted(live.keys() | rebuilt.keys()):
        if live.get(rel) != rebuilt.get(rel):
            state = "missing" if live.get(rel) in (None, "missing") else "differs (edited by hand?)"
            drift.append(f"{rel}: {state}")
    return drift
