"""The one path every capture takes: append, update the views, embed, label.

``capture(ws, events, …)`` appends the events as one atomic batch, then
does what new observations need: the views catch up, entries without a
vector in the space in force are embedded when the provider can, entries
are labelled with keywords, and the views catch up once more if that
appended anything.  Observe, promote, import and the MCP server all come
through here, so an observation is never embedded twice or left out.

Everything after the append is best effort: the log already holds what was
recorded, so a failure there is a note for the caller, never an error.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Generic, NamedTuple, TypeVar

from memlog.capture.contradiction import RESOLVED_SOURCES, resolve
from memlog.capture.embed import embed_entries
from memlog.capture.label import label_entries, needs_labels
from memlog.errors import MemlogError
from memlog.eventlog.events import EventBase, Held, Observed
from memlog.projections.sqlite_view import queries
from memlog.untrusted import shown
from memlog.workspace import Workspace

E = TypeVar("E", bound=EventBase)
#: opens a progress report for a stage of ``total`` steps; returns what counts the steps
Meter = Callable[[str, int], Callable[[int], None]]


class Captured(NamedTuple, Generic[E]):
    """The events as stored, and what could not be done after appending them; the
    ``entry.held`` events the scan of lessons added (``eventlog.screening``)."""

    stored: list[E]
    notes: list[str]
    held: list[Held] = []


def capture(
    ws: Workspace,
    events: Sequence[E],
    command: str,
    redact: bool = True,
    meter: Meter | None = None,
) -> Captured[E]:
    """Append ``events`` (one batch), then bring the new entries to full strength.

    ``meter`` reports the long part (embedding) to a progress display.
    """
    log = ws.log(command, redact=redact)
    stored = log.append(events)
    observed = [e for e in stored if isinstance(e, Observed)]
    supplied = {e.entry_id: e.keywords for e in observed}
    notes = settle(ws, supplied.keys(), supplied, meter)
    return Captured(stored, held_notes(ws, log.held, observed) + notes
                    + resolve_new(ws, observed), log.held)  # fmt: skip


def resolve_new(ws: Workspace, observed: Sequence[Observed]) -> list[str]:
    """Held lessons the new ones contradict are superseded (``contradiction.resolve``)."""
    fresh = [e.entry_id for e in observed if e.source in RESOLVED_SOURCES and e.count is None]
    if not fresh:
        return []
    try:
        found = queries.entries(ws.home, fresh, vectors=False)
    except (MemlogError, sqlite3.Error) as exc:  # no view (a full disk): the log has them
        return [f"contradictions not checked ({exc})"]
    created = {e.id for e in found if e.created_seq in {o.seq for o in observed}}
    return resolve(ws, created) if created else []


def held_notes(ws: Workspace, held: Sequence[Held], observed: Sequence[Observed]) -> list[str]:
    """A line for each entry held for review (as the views have it: text accepted before
    is not held again): what held it, and how to let it in."""
    if not held:
        return []
    try:
        still = {e.id for e in queries.entries(ws.home, [h.entry_id for h in held], False)
                 if e.status == "held"}  # fmt: skip
    except (MemlogError, sqlite3.Error):
        still = {h.entry_id for h in held}  # the views cannot tell: say all of them
    names = {e.entry_id: e.name for e in observed}
    return [
        f"entry {h.entry_id} {shown(names.get(h.entry_id, ''), 60)}: held for review "
        f"({', '.join(h.rules)}); it is not injected until `memlog review accept {h.entry_id}`"
        for h in held
        if h.entry_id in still
    ]


def settle(
    ws: Workspace,
    entry_ids: Iterable[str],
    supplied: Mapping[str, Sequence[str]] | None = None,
    meter: Meter | None = None,
) -> list[str]:
    """Update the views, embed and label ``entry_ids``; update again if anything was added."""
    ids = set(entry_ids)
    notes = ws.refresh()
    if not ids:
        return notes
    embedded, more_vectors = _embed(ws, ids, meter)
    labelled, more_labels = _label(ws, ids, supplied or {})
    notes += embedded + labelled
    return notes + (ws.refresh() if more_vectors or more_labels else [])


def _embed(ws: Workspace, entry_ids: set[str], meter: Meter | None) -> tuple[list[str], bool]:
    """Embed the entries now if the provider can; otherwise they stay pending."""
    try:
        entries = queries.pending_entries(ws.home, ws.space, ids=entry_ids)
        if not entries:
            return [], False
        provider = ws.provider()
        step = meter("embedding", len(entries)) if meter is not None else None
        try:
            outcome = embed_entries(ws.log("embed"), entries, provider, ws.space, step)
        finally:
            provider.close()
    except (MemlogError, sqlite3.Error) as exc:
        return [f"not embedded now ({exc}); memlog reembed will do it"], False
    notes = [f"{outcome.pending} entries left for memlog reembed: {outcome.stopped}"]
    return (notes if outcome.stopped else []), outcome.embedded > 0


def _label(
    ws: Workspace, entry_ids: set[str], given: Mapping[str, Sequence[str]]
) -> tuple[list[str], bool]:
    """Label the entries with keywords now (``given``: the writer's own keywords)."""
    if ws.config.memory_keyword_provider == "off":
        return [], False
    try:
        entries = queries.entries(ws.home, entry_ids, vectors=False)
        todo = [e for e in entries if e.live and needs_labels(e, given)]
        outcome = label_entries(ws.log("label"), todo, ws.config, given)
    except (MemlogError, sqlite3.Error) as exc:
        return [f"keywords not generated ({exc})"], False
    return [f"keywords: {note}" for note in outcome.notes], bool(outcome.events)
