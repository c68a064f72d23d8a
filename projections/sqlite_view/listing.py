"""Browsing ``memory.db``: entries by any filter, the values to filter by, and lineage.

``memlog list`` and the page read through here.  Filters on columns run in
SQL; the branch filter reads the branch memories an entry is in (its
``project/branch`` keys), for the branch in any project.
"""

from __future__ import annotations

import sqlite3

import msgspec

from memlog.home import Home
from memlog.projections.fold import Entry
from memlog.projections.markdown_view.branch import split_key
from memlog.projections.sqlite_view import store
from memlog.projections.sqlite_view.queries import Listing

#: the states an entry can be in, ``any`` for all of them
STATUSES = ("live", "held", "rejected", "retired", "superseded")


class Filters(msgspec.Struct, frozen=True, kw_only=True):
    """What to list: every field is optional (``status`` None means any state)."""

    category: str | None = None
    project: str | None = None
    branch: str | None = None
    status: str | None = "live"
    source: str | None = None


def on_branch(entry: Entry, branch: str) -> bool:
    """Whether ``entry`` is in the branch memory of ``branch`` (in any project)."""
    return any(split_key(key)[1] == branch for key in entry.branches)


def matches(entry: Entry, filters: Filters) -> bool:
    """Whether ``entry`` passes ``filters`` (what ``list_entries`` asks of SQL, in Python)."""
    checks = (
        not filters.status or entry.status == filters.status,
        not filters.category or entry.category == filters.category,
        not filters.project or filters.project in (entry.source_project, *entry.projects),
        not filters.source or filters.source in (entry.source, *entry.sources),
        not filters.branch or on_branch(entry, filters.branch),
    )
    return all(checks)


def _where(filters: Filters) -> tuple[str, list[object]]:
    where: list[str] = []
    params: list[object] = []
    if filters.status:
        where.append("status = ?")
        params.append(filters.status)
    if filters.category:
        where.append("category = ?")
        params.append(filters.category)
    if filters.project:
        where.append(
            "(source_project = ? OR EXISTS (SELECT 1 FROM json_each(entries.projects) "
            "WHERE value = ?))"
        )
        params += [filters.project, filters.project]
    if filters.source:
        where.append(
            "(source = ? OR EXISTS (SELECT 1 FROM json_each(entries.sources) WHERE value = ?))"
        )
        params += [filters.source, filters.source]
    return " AND ".join(where) or "1", params


def list_entries(folder: Home, filters: Filters, limit: int = 50, offset: int = 0) -> Listing:
    """Entries matching ``filters``, most recently updated first: the total and one page."""
    clause, params = _where(filters)
    order = f"SELECT id FROM entries WHERE {clause} ORDER BY updated_at DESC, id"
    with store.opened(folder.db, readonly=True) as db, store.snapshot(db):
        if filters.branch:
            return _on_branch(db, order, params, filters.branch, limit, offset)
        total = int(
            db.execute(f"SELECT count(*) FROM entries WHERE {clause}", params).fetchone()[0]
        )
        ids = [row[0] for row in db.execute(order + " LIMIT ? OFFSET ?", [*params, limit, offset])]
        by_id = {e.id: e for e in store.load_ids(db, ids, vectors=False)}
    return Listing(total, [by_id[i] for i in ids])


def _on_branch(
    db: sqlite3.Connection, order: str, params: list[object], branch: str, limit: int, offset: int
) -> Listing:
    ids = [row[0] for row in db.execute(order, params)]
    by_id = {e.id: e for e in store.load_ids(db, ids, vectors=False)}
    matching = [by_id[i] for i in ids if on_branch(by_id[i], branch)]
    return Listing(len(matching), matching[offset : offset + limit])


def facets(folder: Home) -> dict[str, dict[str, int]]:
    """How many entries each category and each project has (the values to filter by):
    one scan of columns stored before the embedding blob, never the blobs' pages."""
    found: dict[str, dict[str, int]] = {"category": {}, "project": {}}
    with store.opened(folder.db, readonly=True) as db, store.snapshot(db):
        rows = db.execute(
            "SELECT category, coalesce(source_project, ''), count(*) FROM entries GROUP BY 1, 2"
        )
        for category, project, count in rows:
            for name, value in (("category", category), ("project", project)):
                found[name][value] = found[name].get(value, 0) + int(count)
    return {name: dict(sorted(counts.items())) for name, counts in found.items()}


def lineage(folder: Home, entry: Entry) -> tuple[list[Entry], list[Entry]]:
    """The entries ``entry`` replaced (oldest first) and those that replaced it, in order."""
    with store.opened(folder.db, readonly=True) as db, store.snapshot(db):
        before = _predecessors(db, entry.id)
        after: list[Entry] = []
        seen = {entry.id}
        successor = entry.superseded_by
        while successor and successor not in seen:
            seen.add(successor)
            found = store.load_ids(db, [successor], vectors=False)
            if not found:
                break
            after.append(found[0])
            successor = found[0].superseded_by
    return before, after


def _predecessors(db: sqlite3.Connection, entry_id: str) -> list[Entry]:
    """Every entry superseded, directly or through others, by ``entry_id``; oldest first."""
    found: list[Entry] = []
    frontier, seen = [entry_id], {entry_id}
    while frontier:
        marks = ",".join("?" * len(frontier))
        rows = store.load_where(db, f"superseded_by IN ({marks})", frontier, vectors=False)
        frontier = [e.id for e in rows if e.id not in seen]
        seen.update(frontier)
        found += [e for e in rows if e.id in frontier]
    return sorted(found, key=lambda e: (e.created_seq, e.id))
