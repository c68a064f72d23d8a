"""Putting knowledge in: observe, promote, import, retire.

Each writer validates its input here, then goes through the one capture
pipeline (``capture.pipeline``): append, views, vectors, labels.  Input
that fails validation raises ``InvalidInput`` before anything is appended.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

import msgspec

from memlog.capture import claude_memory
from memlog.capture import promote as promotion
from memlog.capture.claude_memory import NativePlan
from memlog.capture.importer import ImportPlan, markdown_files, plan_import
from memlog.capture.observe import from_fields, parse_json_lines, with_references
from memlog.capture.pipeline import Captured, Meter, capture
from memlog.errors import InvalidInput, MemlogError
from memlog.eventlog import secrets
from memlog.eventlog.events import EventBase, Influenced, Observed, Retired
from memlog.eventlog.secrets import redact_batch
from memlog.git import changed_since
from memlog.projections.fold import Entry
from memlog.projections.sqlite_view import queries
from memlog.vocabulary import VERDICTS, InfluenceSource, Scope
from memlog.workspace import Workspace

__all__ = [
    "Captured",
    "Imported",
    "Meter",
    "Promotion",
    "import_claude_memory",
    "import_files",
    "observation",
    "observations",
    "observe",
    "promote_entries",
    "promote_input",
    "retire",
]

observation = from_fields
observations = parse_json_lines
Named = list[tuple[str, promotion.Verdict]]


class Promotion(NamedTuple):
    """The report lines of a promotion, what could not be done after it, and each
    entry's name with the scope it was given and why."""

    report: list[str]
    notes: list[str]
    named: Named = []


class Imported(NamedTuple):
    plan: ImportPlan
    notes: list[str]


def observe(
    ws: Workspace,
    events: Sequence[Observed],
    *,
    references_base: str | None = None,
    redact: bool = True,
    command: str = "observe",
    revive: bool = False,
    meter: Meter | None = None,
) -> Captured[Observed]:
    """Record observations as one batch (with the files changed since a git base).

    Observing a retired or superseded entry records the observation and leaves
    it so, with a note; ``revive`` brings it back.
    """
    notes: list[str] = []
    if references_base is not None:
        changed = changed_since(references_base, Path.cwd())
        if not changed:
            notes.append(
                f"no files changed between {references_base} and HEAD; no references added"
            )
        events = [with_references(e, changed) for e in events]
    events = [msgspec.structs.replace(e, revive=revive) for e in events]
    notes += _not_live(
        ws, [e.entry_id for e in (redact_batch(events) if redact else events)], revive
    )
    done = capture(ws, events, command, redact=redact, meter=meter)
    return Captured(done.stored, notes + done.notes, done.held)


def _not_live(ws: Workspace, ids: Sequence[str], revive: bool) -> list[str]:
    """A note for each entry observed that is retired or superseded."""
    if not ws.home.db.exists():
        return []  # no view: nothing observed yet, or nothing to tell from
    try:
        ws.catch_up()
        found = queries.entries(ws.home, ids, vectors=False)
    except (MemlogError, sqlite3.Error, OSError):
        return []  # the views cannot tell; the log keeps the observation either way
    notes = []
    for entry in (e for e in found if not e.live):
        why = f" ({entry.status_reason})" if entry.status_reason else ""
        if revive:
            notes.append(f"entry {entry.id} was {entry.status}{why}; brought back (--revive)")
        else:
            notes.append(
                f"entry {entry.id} is {entry.status}{why}: the observation is recorded and "
                f"the entry stays {entry.status} (memlog observe --revive brings it back)"
            )
    return notes


def promote_input(
    ws: Workspace,
    data: bytes,
    scope: Scope | None = None,
    reason: str = "",
    feature: str = "",
    references_base: str | None = None,
    meter: Meter | None = None,
) -> Promotion:
    """Observe and promote the entries of a retrospective's JSON lines."""
    candidates = promotion.parse_candidates(data, ws.project, feature.strip())
    refs = changed_since(references_base, Path.cwd()) if references_base is not None else []
    notes = []
    if references_base is not None and not refs:
        notes.append(f"no files changed between {references_base} and HEAD; no references added")
    context = promotion.scan_project(ws.root, ws.project)
    filled = [_filled(c, scope, reason, refs) for c in candidates]
    named: Named = [(c.event.name, promotion.decide(c, context)) for c in filled]
    promotions = [
        promotion.promotion(c.event.entry_id, verdict, c.event.project, c.event.feature)
        for c, (_, verdict) in zip(filled, named, strict=True)
    ]
    done = capture(ws, [*(c.event for c in filled), *promotions], "promote", meter=meter)
    notes += redaction_notes(done.stored)
    return Promotion(promotion.report(named), notes + done.notes, named)


def _filled(
    candidate: promotion.Candidate, scope: Scope | None, reason: str, refs: list[str]
) -> promotion.Candidate:
    """A candidate with the caller's default scope and the git references added."""
    if candidate.scope is None and scope is not None:
        candidate = candidate._replace(scope=scope, reason=reason)
    return candidate._replace(event=with_references(candidate.event, refs))


def promote_entries(
    ws: Workspace,
    prefixes: Iterable[str],
    scope: Scope | None = None,
    reason: str = "",
    feature: str = "",
) -> Promotion:
    """Promote entries already in the log (a unique id prefix each)."""
    notes = ws.refresh()  # a global store that cannot be written is only a note
    entries = [_live(ws, prefix) for prefix in prefixes]
    context = promotion.scan_project(ws.root, ws.project)
    named: Named = [(e.name, _verdict(e, scope, reason, context)) for e in entries]
    events = [
        promotion.promotion(e.id, v, context.name, feature.strip())
        for e, (_, v) in zip(entries, named, strict=True)
    ]
    done = capture(ws, events, "promote")
    return Promotion(promotion.report(named), notes + done.notes, named)


def _verdict(
    entry: Entry, scope: Scope | None, reason: str, context: promotion.ProjectContext
) -> promotion.Verdict:
    if scope is not None:
        return promotion.Verdict(scope, promotion.because(scope, reason))
    return promotion.classify(promotion.entry_text(entry.name, entry.description), context)


def _live(ws: Workspace, prefix: str) -> Entry:
    entry = queries.find_entry(ws.home, prefix)
    if not entry.live:
        raise InvalidInput(f"entry {entry.id} is {entry.status}; only live entries are promoted")
    return entry


def import_files(
    ws: Workspace,
    paths: Iterable[Path],
    project: str | None = None,
    dry_run: bool = False,
    meter: Meter | None = None,
) -> Imported:
    """Import knowledge-bank files; importing the same files again appends nothing
    (``meter`` shows the embedding's progress)."""
    ws.catch_up()
    existing = {e.id: e for e in queries.entries(ws.home)}
    plan = plan_import(markdown_files(paths), existing, project)
    if not plan.events or dry_run:
        return Imported(plan, [])
    done = capture(ws, plan.events, "import", meter=meter)
    return Imported(plan, redaction_notes(done.stored) + done.notes)


class NativeImported(NamedTuple):
    """What reading Claude Code's auto memory found and appended."""

    plan: NativePlan
    notes: list[str]


def import_claude_memory(
    ws: Workspace, where: Path | None = None, dry_run: bool = False, meter: Meter | None = None
) -> NativeImported:
    """Record Claude Code's auto memory files: every project's folder under its config
    dir and the one configured for ``where`` (default: the workspace's project).  Only
    what changed since the last reading is appended; memlog never touches the files."""
    cwd = where or ws.root
    folders = claude_memory.every_folder(str(cwd) if cwd is not None else None)
    if dry_run:
        ws.catch_up()
        found = claude_memory.read(ws, folders)
        return NativeImported(found, list(found.skipped))
    found, notes = claude_memory.record(ws, folders, meter)
    return NativeImported(found, notes)


def redaction_notes(stored: Iterable[EventBase]) -> list[str]:
    """One line per stored event whose text had secrets replaced: which fields, which classes."""
    return [
        f"{_what(e)}: secrets replaced by [REDACTED] ({secrets.describe(e.redactions)})"
        for e in stored
        if e.redactions
    ]


def _what(event: EventBase) -> str:
    name = f" {event.name}" if isinstance(event, Observed) else ""
    return f"entry {','.join(event.entry_ids)}{name}"


def retire(ws: Workspace, prefix: str, reason: str) -> tuple[Entry, list[str]]:
    """Take an entry (live, or held for review) out of retrieval and the markdown view; its
    history stays."""
    ws.catch_up()
    entry = queries.find_entry(ws.home, prefix)
    if entry.status not in ("live", "held"):  # a held one may be retired before review
        raise InvalidInput(f"entry {entry.id} is already {entry.status}")
    if not reason.strip():
        raise InvalidInput("--reason is empty")
    ws.log("retire").append([Retired(entry_id=entry.id, reason=reason.strip())])
    return entry, ws.refresh()


def lesson(ws: Workspace, given: str) -> Entry:
    """The entry ``given`` names: its id, a unique prefix of it, or its exact name."""
    ws.catch_up()
    text = given.strip()
    if text and all(c in "0123456789abcdef" for c in text.lower()):
        try:
            return queries.find_entry(ws.home, text)
        except MemlogError:
            pass  # a name made of hex letters ("bad"), perhaps
    found = queries.named(ws.home, text)
    if len(found) == 1:
        return found[0]
    if found:
        ids = ", ".join(e.id for e in found)
        raise InvalidInput(f"{len(found)} live entries are called {text!r} ({ids}): give the id")
    raise InvalidInput(f"no entry has the id or name {text!r}")


def record_influence(
    ws: Workspace, given: str, session_id: str, verdict: str, evidence: str = "",
    source: InfluenceSource = "agent",
) -> tuple[Entry, list[str]]:  # fmt: skip
    """Record what a session did with a lesson (``entry.influenced``), the entry as it
    stands once the views have it."""
    if verdict not in VERDICTS:
        raise InvalidInput(f"verdict must be one of {', '.join(VERDICTS)}, not {verdict!r}")
    if not session_id.strip():
        raise InvalidInput("no session: give the session id (Claude Code names it to its tools)")
    entry = lesson(ws, given)
    event = Influenced(
        entry_id=entry.id, session_id=session_id.strip(), verdict=verdict,
        evidence=" ".join(evidence.split()), source=source,
    )  # fmt: skip
    done = capture(ws, [event], "influence")
    judged = queries.entries(ws.home, [entry.id], vectors=False)
    return (judged[0] if judged else entry), redaction_notes(done.stored) + done.notes
