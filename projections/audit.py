"""Audit: rebuild the views aside from the log and compare them with the live ones."""

from __future__ import annotations

import tempfile
from pathlib import Path

import msgspec

from memlog.eventlog.bounds import Bound
from memlog.projections.freshness import db_path
from memlog.projections.markdown_view.writer import markdown_files
from memlog.projections.runner import catch_up, rebuild
from memlog.projections.sqlite_view.digest import entry_digests, sqlite_digest
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
    """Compare the live views with views rebuilt from the log up to the same event."""
    seq = catch_up(home, space).seq
    with tempfile.TemporaryDirectory(prefix="memlog-audit-") as tmp:
        aside = Path(tmp)
        rebuild(home, space, Bound(seq, None), aside)
        live_db, aside_db = sqlite_digest(db_path(home)), sqlite_digest(db_path(aside))
        drift = [] if live_db == aside_db else _entry_drift(home, aside)
        md_live, md_aside = markdown_files(home), markdown_files(aside)
        drift += _file_drift(md_live, md_aside)
    return Audit(seq, live_db, aside_db, md_live, md_aside, drift)


def _entry_drift(home: Path, aside: Path) -> list[str]:
    live, rebuilt = entry_digests(db_path(home)), entry_digests(db_path(aside))
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
