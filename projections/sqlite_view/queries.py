"""Reading entries out of the SQLite view."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from memlog.errors import EntryNotFound, InvalidInput
from memlog.projections.fold import Entry
from memlog.projections.sqlite_view import store


def find_entry(folder: Path, prefix: str) -> Entry:
    """The entry whose id starts with ``prefix``; a clear error when none or several."""
    text = prefix.strip().lower()
    if not text or any(c not in "0123456789abcdef" for c in text):
        raise InvalidInput(f"{prefix!r} is not an entry id (16 hex characters or a prefix)")
    db = store.connect(folder / store.DB_NAME, readonly=True)
    try:
        found = store.load_where(db, "id LIKE ?", [text + "%"])
    finally:
        db.close()
    if not found:
        raise EntryNotFound(f"no entry with id {text}")
    if len(found) > 1:
        raise InvalidInput(f"{text} matches {len(found)} entries; give more characters")
    return found[0]


def entry_counts(folder: Path) -> dict[str, object]:
    """Live entries by category and by project, and how many are not live."""
    db = store.connect(folder / store.DB_NAME, readonly=True)
    try:
        rows = db.execute("SELECT status, category, coalesce(source_project, '') FROM entries")
        status: Counter[str] = Counter()
        category: Counter[str] = Counter()
        project: Counter[str] = Counter()
        for state, cat, proj in rows:
            status[state] += 1
            if state == "live":
                category[cat] += 1
                project[proj or "(none)"] += 1
    finally:
        db.close()
    return {
        "live": status["live"],
        "by_status": dict(sorted(status.items())),
        "by_category": dict(sorted(category.items())),
        "by_project": dict(sorted(project.items())),
    }
