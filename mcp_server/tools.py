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

import os
from collections.abc import Sequence

from memlog.api import capturing, reading, recall
from memlog.errors import InvalidInput
from memlog.eventlog import secrets
from memlog.eventlog.events import Observed
from memlog.mcp_server.catalog import LIST_LIMIT_MAX, SEARCH_LIMIT_MAX
from memlog.mcp_server.results import SOURCE, Found, Hit, Influence, Listed, Memory, Stored
from memlog.projections.fold import Entry, space_key
from memlog.untrusted import shown
from memlog.vocabulary import CATEGORIES, KB_CATEGORIES
from memlog.workspace import Workspace

#: What ``store_memory`` accepts.  ``facts`` are left out on purpose: they come
#: from extraction (source ``extraction``) and are not injected by default, so
#: a learning captured here as a fact would not reach the next start of work.
CAPTURE_CATEGORIES = KB_CATEGORIES
#: What ``search_memory`` and ``list_memories`` can filter on (facts included).
READ_CATEGORIES = CATEGORIES
COMMAND = "serve-mcp"


# -- store_memory ------------------------------------------------------------------------


def store_memory(
    ws: Workspace,
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
    event = capturing.observation(
        {
            "name": name,
            "description": description,
            "reasoning": reasoning,
            "category": category,
            "references": list(references),
            "project": ws.project,
            "source": SOURCE,
        }
    )
    existed = _entry(ws, event.entry_id) is not None
    done = capturing.observe(ws, [event], command=COMMAND)
    stored = done.stored[0]
    notes = done.notes
    if stored.redactions:
        notes = [f"secrets replaced by [REDACTED]: {secrets.describe(stored.redactions)}", *notes]
    result = _stored_result(ws, stored, existed, notes)
    result.redacted = [f"{f.field}: {f.kind}" for f in stored.redactions]
    if not result.observation_count:  # no view to tell: what the scan held it for
        result.held = list(dict.fromkeys(r for h in done.held for r in h.rules))
    return result


def _require_text(**fields: str) -> None:
    empty = [name for name, value in fields.items() if not value.strip()]
    if empty:
        verb = "is" if len(empty) == 1 else "are"
        raise InvalidInput(f"{' and '.join(empty)} {verb} empty; give some text")


def _stored_result(ws: Workspace, stored: Observed, existed: bool, notes: list[str]) -> Stored:
    entry = _entry(ws, stored.entry_id)
    if entry is None:  # the views could not catch up; the log has the event
        return Stored(
            id=stored.entry_id, created=not existed, observation_count=0, name=stored.name,
            category=stored.category, project=ws.project, embedded=False,
            keywords=list(stored.keywords), notes=notes,
        )  # fmt: skip
    space = ws.space
    vector = entry.vectors.get(space_key(space.provider, space.model))
    return Stored(
        id=entry.id, created=entry.created_seq == stored.seq,
        observation_count=entry.observation_count, name=entry.name, category=entry.category,
        project=ws.project, embedded=vector is not None and vector.dimensions == space.dimensions,
        keywords=entry.keywords, notes=notes,
        held=entry.held if entry.status == "held" else [],
    )  # fmt: skip


def _entry(ws: Workspace, entry_id: str) -> Entry | None:
    """The entry as the SQLite view has it, or None (absent, or no view yet)."""
    found = reading.entries(ws, [entry_id], vectors=True)
    return found[0] if found else None


# -- search_memory -----------------------------------------------------------------------


def search_memory(ws: Workspace, query: str, limit: int = 10, category: str | None = None) -> Found:
    """The entries the hook's hybrid ranking puts first for ``query``."""
    if not query.strip():
        raise InvalidInput("query is empty; give some text to search for")
    _check_limit(limit, SEARCH_LIMIT_MAX)
    _check_category(category)
    result = recall.search(ws, query, limit, (category,) if category else READ_CATEGORIES)
    descriptions = {e.id: e.description for e in reading.entries(ws, [c.id for c in result.chosen])}
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
    notes = [f"config: {w}" for w in ws.warnings] + result.notes
    return Found(query=query, mode=result.mode, results=hits, notes=notes)


# -- list_memories -----------------------------------------------------------------------


def list_memories(
    ws: Workspace, category: str | None = None, project: str | None = None, limit: int = 50
) -> Listed:
    """Live entries, most recently updated first, optionally of one category or project."""
    _check_category(category)
    _check_limit(limit, LIST_LIMIT_MAX)
    listing, notes = reading.list_live(ws, category, project, limit)
    return Listed(total=listing.total, memories=[_memory(e) for e in listing.entries], notes=notes)


def _memory(entry: Entry) -> Memory:
    return Memory(
        id=entry.id, name=entry.name, category=entry.category, description=entry.description,
        reasoning=entry.reasoning, project=entry.source_project, projects=entry.projects,
        references=entry.references, keywords=entry.keywords,
        observation_count=entry.observation_count, confidence=entry.confidence,
        source=entry.source, created_at=entry.created_at, updated_at=entry.updated_at,
    )  # fmt: skip


# -- record_influence --------------------------------------------------------------------

#: the variable Claude Code sets for the MCP servers it starts: the session's id
SESSION_VARIABLE = "CLAUDE_CODE_SESSION_ID"
#: characters of evidence kept
EVIDENCE_CHARS = 300


def record_influence(
    ws: Workspace, entry: str, verdict: str, evidence: str = "", session: str | None = None
) -> Influence:
    """Record what this session did with a memory (``entry.influenced``, source agent)."""
    _require_text(entry=entry)
    session_id = session or os.environ.get(SESSION_VARIABLE, "")
    if not session_id.strip():
        raise InvalidInput(
            f"no session: {SESSION_VARIABLE} is not set (Claude Code sets it); give session"
        )
    text = " ".join(evidence.split())
    if len(text) > EVIDENCE_CHARS:
        text = text[: EVIDENCE_CHARS - 1] + "…"
    found, notes = capturing.record_influence(ws, entry, session_id, verdict, text)
    return Influence(
        id=found.id, name=found.name, session=session_id.strip(), verdict=verdict,
        applied_in=found.applied_count, judged_in=found.judged_count, notes=notes,
    )  # fmt: skip


# -- shared checks -----------------------------------------------------------------------


def _check_category(category: str | None) -> None:
    if category is not None and category not in READ_CATEGORIES:
        raise InvalidInput(_bad_category(category, READ_CATEGORIES))


def _bad_category(category: object, allowed: Sequence[str]) -> str:
    return f"category must be one of {', '.join(allowed)}, not {shown(category)}"


def _check_limit(limit: int, most: int) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= most:
        raise InvalidInput(f"limit must be a whole number from 1 to {most}, not {shown(limit)}")
