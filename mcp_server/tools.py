"""What the MCP tools do: store a memory, search memories, list memories.

Writes go through the event log like every other writer (``memlog
observe``, imports, retrospectives): one ``entry.observed`` event appended
under the log's lock, then the views catch up.  The content hash of the
description is the entry id, so storing the same description again adds an
observation to the existing entry instead of making a copy.

Validation failures raise ``InvalidInput`` with one readable line; the
server turns every ``MemlogError`` into a tool error and keeps serving.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path

import msgspec
from pydantic import BaseModel, Field

from memlog.commands.common import after_append, current_space, home, open_log, refresh_views
from memlog.config import load_config
from memlog.errors import InvalidInput
from memlog.eventlog.events import CATEGORIES, Observed
from memlog.inject import Request, build
from memlog.observations import from_fields
from memlog.project import find_project_root, project_name
from memlog.projections.fold import Entry, space_key
from memlog.projections.sqlite_view import store

#: What ``store_memory`` accepts.  ``facts`` are left out on purpose: they come
#: from extraction (source ``extraction``) and are not injected by default, so
#: a learning captured here as a fact would not reach the next start of work.
CAPTURE_CATEGORIES = ("anti-patterns", "patterns", "heuristics")
#: What ``search_memory`` and ``list_memories`` can filter on (facts included).
READ_CATEGORIES = CATEGORIES
SOURCE = "session-capture"
COMMAND = "serve-mcp"
SEARCH_LIMIT_MAX = 100
LIST_LIMIT_MAX = 1000
#: seconds a search may take, the query embedding included
SEARCH_DEADLINE = 30.0


class Stored(BaseModel):
    """The outcome of ``store_memory``."""

    id: str = Field(description="Entry id: the content hash of the description.")
    created: bool = Field(description="True for a new entry, false for a new observation.")
    observation_count: int = Field(description="Times the entry has been observed so far.")
    name: str
    category: str
    project: str = Field(description="The project the memory was stored from.")
    source: str = SOURCE
    embedded: bool = Field(description="Whether the entry has a vector in the space in force.")
    keywords: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list, description="Warnings, if any.")


class Hit(BaseModel):
    """One search result."""

    id: str
    name: str
    category: str
    description: str
    score: float = Field(description="Hybrid score (vector, keyword, prominence).")


class Found(BaseModel):
    """The outcome of ``search_memory``."""

    query: str
    mode: str = Field(description="semantic, keyword, prominence (or legacy markdown).")
    results: list[Hit]
    notes: list[str] = Field(default_factory=list)


class Memory(BaseModel):
    """One entry as ``list_memories`` shows it."""

    id: str
    name: str
    category: str
    description: str
    reasoning: str
    project: str = Field(description="The project the entry was first seen in.")
    projects: list[str] = Field(description="Every project the entry was seen in.")
    references: list[str]
    keywords: list[str]
    observation_count: int
    confidence: str
    source: str
    created_at: str
    updated_at: str


class Listed(BaseModel):
    """The outcome of ``list_memories``."""

    total: int = Field(description="Live entries matching the filters (before the limit).")
    memories: list[Memory] = Field(description="Most recently updated first.")
    notes: list[str] = Field(default_factory=list)


# -- store_memory ------------------------------------------------------------------------


def store_memory(
    cwd: Path,
    name: str,
    description: str,
    reasoning: str,
    category: str,
    references: Sequence[str] = (),
) -> Stored:
    """Record one learning as an ``entry.observed`` event and report the entry."""
    _require_text(name=name, description=description, reasoning=reasoning)
    if category not in CAPTURE_CATEGORIES:
        raise InvalidInput(_bad_category(category, CAPTURE_CATEGORIES))
    project = project_name(cwd)
    event = from_fields(
        {
            "name": name,
            "description": description,
            "reasoning": reasoning,
            "category": category,
            "references": list(references),
            "project": project,
            "source": SOURCE,
        }
    )
    existed = _entry(event.entry_id) is not None
    [stored] = open_log(COMMAND).append([event])
    notes = after_append([stored.entry_id])
    return _stored_result(stored, project, existed, notes)


def _require_text(**fields: str) -> None:
    empty = [name for name, value in fields.items() if not value.strip()]
    if empty:
        verb = "is" if len(empty) == 1 else "are"
        raise InvalidInput(f"{' and '.join(empty)} {verb} empty; give some text")


def _stored_result(stored: Observed, project: str, existed: bool, notes: list[str]) -> Stored:
    entry = _entry(stored.entry_id)
    if entry is None:  # the views could not catch up; the log has the event
        return Stored(
            id=stored.entry_id, created=not existed, observation_count=0, name=stored.name,
            category=stored.category, project=project, embedded=False,
            keywords=list(stored.keywords), notes=notes,
        )  # fmt: skip
    space = current_space()
    vector = entry.vectors.get(space_key(space.provider, space.model))
    return Stored(
        id=entry.id, created=entry.created_seq == stored.seq,
        observation_count=entry.observation_count, name=entry.name, category=entry.category,
        project=project, embedded=vector is not None and vector.dimensions == space.dimensions,
        keywords=entry.keywords, notes=notes,
    )  # fmt: skip


def _entry(entry_id: str) -> Entry | None:
    """The entry as the SQLite view has it, or None (absent, or no view yet)."""
    db = _read_view()
    if db is None:
        return None
    try:
        found = store.load_where(db, "id = ?", [entry_id])
    finally:
        db.close()
    return found[0] if found else None


def _read_view() -> sqlite3.Connection | None:
    path = home() / store.DB_NAME
    if not path.exists():
        return None
    return store.connect(path, readonly=True)


# -- search_memory -----------------------------------------------------------------------


def search_memory(cwd: Path, query: str, limit: int = 10, category: str | None = None) -> Found:
    """The entries the hook's hybrid ranking puts first for ``query``."""
    if not query.strip():
        raise InvalidInput("query is empty; give some text to search for")
    _check_limit(limit, SEARCH_LIMIT_MAX)
    _check_category(category)
    root = find_project_root(cwd)
    config, warnings = load_config(root)
    # Search always reads the SQLite view, whatever the hook is set to use.
    config = msgspec.structs.replace(config, memory_semantic_enabled=True)
    request = Request(
        home=home(), root=root, project=root.name if root else "", config=config,
        deadline=time.monotonic() + SEARCH_DEADLINE, limit=limit, query=query,
        categories=(category,) if category else READ_CATEGORIES,
        embed_budget=SEARCH_DEADLINE / 2,
    )  # fmt: skip
    result = build(request)
    descriptions = _descriptions([c.id for c in result.chosen])
    hits = [
        Hit(
            id=c.id,
            name=c.name,
            category=c.category,
            description=descriptions.get(c.id, ""),
            score=round(c.score, 6),
        )
        for c in result.chosen
    ]
    notes = [f"config: {w}" for w in warnings] + result.notes
    return Found(query=query, mode=result.mode, results=hits, notes=notes)


def _descriptions(ids: list[str]) -> dict[str, str]:
    db = _read_view() if ids else None
    if db is None:
        return {}
    try:
        marks = ",".join("?" * len(ids))
        return {e.id: e.description for e in store.load_where(db, f"id IN ({marks})", ids, False)}
    finally:
        db.close()


# -- list_memories -----------------------------------------------------------------------


def list_memories(
    category: str | None = None, project: str | None = None, limit: int = 50
) -> Listed:
    """Live entries, most recently updated first, optionally of one category or project."""
    _check_category(category)
    _check_limit(limit, LIST_LIMIT_MAX)
    notes = refresh_views()
    db = _read_view()
    if db is None:
        return Listed(total=0, memories=[], notes=notes)
    where, params = ["status = 'live'"], []
    if category:
        where.append("category = ?")
        params.append(category)
    if project and project.strip():
        where.append(
            "(source_project = ? OR EXISTS (SELECT 1 FROM json_each(entries.projects) "
            "WHERE value = ?))"
        )
        params += [project.strip(), project.strip()]
    clause = " AND ".join(where)
    try:
        db.execute("BEGIN")  # one snapshot for the count and the rows
        count = db.execute(f"SELECT count(*) FROM entries WHERE {clause}", params).fetchone()
        total = int(count[0])
        ids = [
            row[0]
            for row in db.execute(
                f"SELECT id FROM entries WHERE {clause} ORDER BY updated_at DESC, id LIMIT ?",
                [*params, limit],
            )
        ]
        marks = ",".join("?" * len(ids))
        entries = store.load_where(db, f"id IN ({marks})", ids, False) if ids else []
    finally:
        db.close()
    by_id = {e.id: e for e in entries}
    return Listed(total=total, memories=[_memory(by_id[i]) for i in ids], notes=notes)


def _memory(entry: Entry) -> Memory:
    return Memory(
        id=entry.id, name=entry.name, category=entry.category, description=entry.description,
        reasoning=entry.reasoning, project=entry.source_project, projects=entry.projects,
        references=entry.references, keywords=entry.keywords,
        observation_count=entry.observation_count, confidence=entry.confidence,
        source=entry.source, created_at=entry.created_at, updated_at=entry.updated_at,
    )  # fmt: skip


# -- shared checks -----------------------------------------------------------------------


def _check_category(category: str | None) -> None:
    if category is not None and category not in READ_CATEGORIES:
        raise InvalidInput(_bad_category(category, READ_CATEGORIES))


def _bad_category(category: object, allowed: Sequence[str]) -> str:
    return f"category must be one of {', '.join(allowed)}, not {category!r}"


def _check_limit(limit: int, most: int) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= most:
        raise InvalidInput(f"limit must be a whole number from 1 to {most}, not {limit!r}")
