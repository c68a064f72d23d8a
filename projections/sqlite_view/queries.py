"""Questions asked of ``memory.db`` outside ranking: one entry, counts, listings, pending work.

Every function opens its own connection (read-only unless it must write)
and closes it; callers never write SQL.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterable

import msgspec

from memlog.errors import EntryNotFound, InvalidInput
from memlog.home import Home
from memlog.projections.fold import Entry
from memlog.projections.sqlite_view import ranks, store
from memlog.projections.sqlite_view import vectors as packed_vectors
from memlog.untrusted import shown
from memlog.vocabulary import Space

#: live entries without a row in the table of vectors (of spaces not in force)
_NOT_IN_TABLE = (
    "id NOT IN (SELECT entry_id FROM vectors WHERE provider = ? AND model = ? AND dimensions = ?)"
)


class Listing(msgspec.Struct):
    """Live entries matching some filters: how many in all, and the page asked for."""

    total: int
    entries: list[Entry]


def find_entry(folder: Home, prefix: str) -> Entry:
    """The entry whose id starts with ``prefix``; a clear error when none or several."""
    text = prefix.strip().lower()
    if not text or any(c not in "0123456789abcdef" for c in text):
        raise InvalidInput(f"{shown(prefix)} is not an entry id (16 hex characters or a prefix)")
    with store.opened(folder.db, readonly=True) as db:
        found = store.load_where(db, "id LIKE ?", [text + "%"])
        packed_vectors.attach(db, folder, {e.id: e for e in found})
    if not found:
        raise EntryNotFound(f"no entry with id {text}")
    if len(found) > 1:
        raise InvalidInput(f"{text} matches {len(found)} entries; give more characters")
    return found[0]


def named(folder: Home, name: str) -> list[Entry]:
    """The live entries called ``name`` (case and spacing aside), without vectors."""
    wanted = " ".join(name.split()).lower()
    if not wanted or not folder.db.exists():
        return []
    with store.opened(folder.db, readonly=True) as db:
        found = store.load_where(db, "status = 'live' AND lower(name) = ?", [wanted], False)
    return [e for e in found if " ".join(e.name.split()).lower() == wanted]


def entries(folder: Home, ids: Iterable[str] | None = None, vectors: bool = True) -> list[Entry]:
    """Entries of ``ids`` (all without), in id order, with their vectors (unless not
    wanted); none when there is no view."""
    path = folder.db
    if not path.exists():
        return []
    with store.opened(path, readonly=True) as db:
        if ids is None:
            found = store.load_entries(db)
        else:
            found = {e.id: e for e in store.load_ids(db, ids, vectors)}
        if vectors:
            packed_vectors.attach(db, folder, found)
        return list(found.values())


def entry_counts(folder: Home) -> dict[str, object]:
    """Live entries by category and by project, and how many are not live."""
    status: Counter[str] = Counter()
    category: Counter[str] = Counter()
    project: Counter[str] = Counter()
    with store.opened(folder.db, readonly=True) as db:
        rows = db.execute("SELECT status, category, coalesce(source_project, '') FROM entries")
        for state, cat, proj in rows:
            status[state] += 1
            if state == "live":
                category[cat] += 1
                project[proj or "(none)"] += 1
    return {
        "live": status["live"],
        "by_status": dict(sorted(status.items())),
        "by_category": dict(sorted(category.items())),
        "by_project": dict(sorted(project.items())),
    }


def pending_entries(
    folder: Home, space: Space, ids: Iterable[str] | None = None, everything: bool = False
) -> list[Entry]:
    """Live entries without a vector in ``space`` (all live ones with ``everything``), of
    ``ids`` when given."""
    with store.opened(folder.db) as db:
        if everything:
            found = store.load_where(db, "status = 'live'", [])
            wanted = set(ids) if ids is not None else None
            return [e for e in found if wanted is None or e.id in wanted]
        pending = _pending_ids(db, folder, space, ids)
        return store.load_ids(db, pending)


def pending_count(folder: Home, space: Space) -> int:
    """How many live entries lack a vector in ``space``."""
    with store.opened(folder.db, readonly=True) as db:
        return len(_pending_ids(db, folder, space, None))


def _pending_ids(
    db: sqlite3.Connection, folder: Home, space: Space, ids: Iterable[str] | None
) -> list[str]:
    """Live entries (of ``ids``) without a vector in ``space``: the packed records say for
    the space in force, the table of vectors for any other."""
    records = ranks.read(db, folder) if store.space_of(db) == space else None
    if records is None:
        where = f"status = 'live' AND {_NOT_IN_TABLE}"
        found = [r[0] for r in db.execute(f"SELECT id FROM entries WHERE {where}", space)]
        return found if ids is None else sorted(set(found) & set(ids))
    if ids is None:
        slots: Iterable[int] = range(records.total)
    else:
        slots = [s for s in store.slots_of(db, ids).values() if 0 <= s < records.total]
    size, flags = ranks.RECORD.size, ranks.LIVE | ranks.VECTOR
    found = []
    for slot in slots:
        record = records.data[slot * size : (slot + 1) * size]
        if record[size - 6] & flags == ranks.LIVE:
            found.append(bytes(record[:16]).decode("ascii"))
    return sorted(found)


def list_live(
    folder: Home, category: str | None = None, project: str | None = None, limit: int = 50
) -> Listing:
    """Live entries, most recently updated first, of one category and/or project."""
    where, params = ["status = 'live'"], []
    if category:
        where.append("category = ?")
        params.append(category)
    if project:
        where.append(
            "(source_project = ? OR EXISTS (SELECT 1 FROM json_each(entries.projects) "
            "WHERE value = ?))"
        )
        params += [project, project]
    clause = " AND ".join(where)
    with store.opened(folder.db, readonly=True) as db, store.snapshot(db):
        total = int(
            db.execute(f"SELECT count(*) FROM entries WHERE {clause}", params).fetchone()[0]
        )
        order = f"SELECT id FROM entries WHERE {clause} ORDER BY updated_at DESC, id LIMIT ?"
        ids = [row[0] for row in db.execute(order, [*params, limit])]
        by_id = {e.id: e for e in store.load_ids(db, ids)}
    return Listing(total, [by_id[i] for i in ids])


def live_members(db: sqlite3.Connection, category: str, projects: set[str] | None) -> list[Entry]:
    """Live entries of ``category``: of ``projects`` (a project file) or promoted (global).

    ``status = 'live'`` lets the ``(status, category)`` index narrow the search
    instead of scanning every row; rendering needs no vectors.
    """
    where, params = _file_where(category, projects)
    return store.load_where(db, f"status = 'live' AND {where}", params, vectors=False)


def holds_any(db: sqlite3.Connection, category: str, projects: set[str] | None) -> bool:
    """Whether any entry, live or not, is of the file ``live_members`` reads."""
    where, params = _file_where(category, projects)
    return db.execute(f"SELECT 1 FROM entries WHERE {where} LIMIT 1", params).fetchone() is not None


def source_projects(db: sqlite3.Connection, category: str) -> set[str]:
    """The projects entries of ``category`` were first seen in."""
    rows = db.execute(
        "SELECT DISTINCT coalesce(source_project, '') FROM entries WHERE category = ?", (category,)
    )
    return {str(row[0]) for row in rows}


def _file_where(category: str, projects: set[str] | None) -> tuple[str, list[str]]:
    if projects is None:
        return "category = ? AND promoted = 1", [category]
    marks = ",".join("?" * len(projects))
    return (f"category = ? AND coalesce(source_project, '') IN ({marks})",
            [category, *sorted(projects)])  # fmt: skip


# -- branch memory ------------------------------------------------------------------------

#: the keys (``project/branch``) an entry ever joined, out of its ``key<TAB>time`` stamps
_STAMP_KEY = "substr(j.value, 1, instr(j.value, char(9)) - 1)"


def branch_members(db: sqlite3.Connection, keys: Iterable[str]) -> list[Entry]:
    """Every entry (live or not) that ever joined one of the branch memories ``keys``."""
    wanted = sorted(set(keys))
    if not wanted:
        return []
    marks = ",".join("?" * len(wanted))
    where = (
        "branch_stamps != '[]' AND EXISTS (SELECT 1 FROM json_each(entries.branch_stamps) j "
        f"WHERE {_STAMP_KEY} IN ({marks}))"
    )
    return store.load_where(db, where, wanted, vectors=False)


#: live entries of one branch memory: ``branches != '[]'`` lets the partial index answer
_BRANCH_WHERE = (
    "status = 'live' AND branches != '[]' AND "
    "EXISTS (SELECT 1 FROM json_each(entries.branches) WHERE value = ?)"
)
BRANCH_ENTRIES = f"SELECT id FROM entries WHERE {_BRANCH_WHERE} ORDER BY id"


def branch_entries(folder: Home, key: str, vectors: bool = False) -> list[Entry]:
    """The live entries of the branch memory ``key``, first seen first; none without a view."""
    path = folder.db
    if not path.exists():
        return []
    with store.opened(path, readonly=True) as db:
        found = store.load_where(db, _BRANCH_WHERE, [key], vectors=vectors)
    return sorted(found, key=lambda e: (e.created_seq, e.id))


def branch_file_members(folder: Home, key: str) -> list[Entry]:
    """Every entry (live or not) that ever joined the branch memory ``key``."""
    path = folder.db
    if not path.exists():
        return []
    with store.opened(path, readonly=True) as db:
        return branch_members(db, [key])


def branch_summary(folder: Home) -> dict[str, dict[str, int]]:
    """Live entries of every branch memory ever made, by key and section (cleared: none)."""
    path = folder.db
    if not path.exists():
        return {}
    found: dict[str, dict[str, int]] = {}
    ever = f"SELECT DISTINCT {_STAMP_KEY} FROM entries, json_each(entries.branch_stamps) j"
    live = (
        "SELECT j.value, e.section, count(*) FROM entries e, json_each(e.branches) j "
        "WHERE e.status = 'live' AND e.branches != '[]' GROUP BY j.value, e.section"
    )
    with store.opened(path, readonly=True) as db:
        for (key,) in db.execute(ever):
            found[str(key)] = {}
        for key, section, count in db.execute(live):
            found.setdefault(str(key), {})[str(section)] = int(count)
    return dict(sorted(found.items()))


# -- what a session already holds -------------------------------------------------------


def branch_scoped(folder: Home) -> list[tuple[str, list[str], bool]]:
    """Every live entry of a branch memory: its id, its branch memories, whether promoted."""
    path = folder.db
    if not path.exists():
        return []
    select = "SELECT id, branches, promoted FROM entries WHERE status = 'live' AND branches != '[]'"
    with store.opened(path, readonly=True) as db:
        rows = db.execute(select).fetchall()
    return [(str(i), list(msgspec.json.decode(b)), bool(p)) for i, b, p in rows]


def with_origin(folder: Home, source: str, prefix: str) -> list[str]:
    """The live entries of ``source`` with an origin starting with ``prefix``, in id order."""
    path = folder.db
    if not path.exists():
        return []
    select = (
        "SELECT id FROM entries WHERE status = 'live' AND source = ? AND EXISTS (SELECT 1 FROM "
        "json_each(entries.origins) WHERE substr(value, 1, ?) = ?) ORDER BY id"
    )
    with store.opened(path, readonly=True) as db:
        return [str(r[0]) for r in db.execute(select, [source, len(prefix), prefix])]


def of_source(folder: Home, source: str) -> list[Entry]:
    """Every entry (live or not) first recorded from ``source``, in id order."""
    path = folder.db
    if not path.exists():
        return []
    with store.opened(path, readonly=True) as db:
        return store.load_where(db, "source = ?", [source], vectors=False)


def all_live(folder: Home) -> list[Entry]:
    """Every live entry (without vectors), in id order."""
    with store.opened(folder.db, readonly=True) as db:
        return store.load_where(db, "status = 'live'", [], vectors=False)
