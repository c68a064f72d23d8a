"""Contradictions resolved when a lesson is recorded: a new lesson supersedes the held
lessons nearest it by vector that it contradicts (``projections.stance`` reads what
each lesson tells), with one ``memory.evolved`` naming both and why."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

from memlog.errors import MemlogError
from memlog.eventlog.events import EventBase, MemoryEvolved, Operation, Superseded
from memlog.projections.fold import Entry
from memlog.projections.sqlite_view import queries
from memlog.projections.stance import contradicts, of, reason
from memlog.vocabulary import CATEGORIES
from memlog.workspace import Workspace

# -- at observe time ----------------------------------------------------------------------

#: how close by vector a held lesson must be to a new one for the check to judge them (the
#: lessons written against real entries that contradict them lie at 0.62-0.98 with the
#: local model; the two false alarms of the text alone among every pair of a real bank's
#: 265 entries, at 0.54 and 0.67)
NEAREST_COSINE = 0.7
#: held lessons looked at for each new one, nearest first
NEAREST = 5
#: who may supersede a held lesson by contradicting it (an import or Claude Code's own
#: memory is recorded as it is)
RESOLVED_SOURCES = frozenset({"manual", "retro", "session-capture", "extraction"})


def resolve(ws: Workspace, new_ids: Iterable[str]) -> list[str]:
    """For each new lesson of ``new_ids``, supersede the held lessons near it by vector that
    it contradicts (``entry.superseded``, the newer wins) with one ``memory.evolved`` audit
    naming both and why; notes of what could not be done.  Two lessons both in one branch
    memory are resolved there; a branch's lesson and a lesson outside any branch are left
    to the block, which never carries both."""
    wanted = set(new_ids)
    if not wanted:
        return []
    try:
        events = _resolutions(ws, wanted)
        if events:
            ws.log("observe").append(events)
            return ws.refresh()
    except (MemlogError, sqlite3.Error, OSError) as exc:
        return [f"contradictions not checked ({exc})"]
    return []


def _resolutions(ws: Workspace, wanted: set[str]) -> list[EventBase]:
    import numpy as np

    from memlog.eventlog.vectors import floats
    from memlog.projections.sqlite_view.reading import Snapshot

    space = ws.space
    events: list[EventBase] = []
    new = [e for e in queries.entries(ws.home, sorted(wanted))  # with their packed vectors
           if e.live and e.source in RESOLVED_SOURCES and space.key in e.vectors]  # fmt: skip
    if not new:
        return []
    with Snapshot(ws.home) as view:
        found = view.candidates(CATEGORIES, datetime.now(UTC))
        for entry in new:
            query = floats(entry.vectors[space.key].data).astype(np.float32)
            scores, _ = view.cosines(space, query, found)
            order = [int(i) for i in np.argsort(-scores)[: NEAREST + 1]]
            near = [(found.ids[i], float(scores[i])) for i in order
                    if scores[i] >= NEAREST_COSINE and found.ids[i] != entry.id]  # fmt: skip
            held = {e.id: e for e in view.entries([i for i, _ in near])}
            events += _superseding(entry, [(held[i], c) for i, c in near if i in held])
    return events


def _superseding(new: Entry, near: Sequence[tuple[Entry, float]]) -> list[EventBase]:
    mine = of(new)
    events: list[EventBase] = []
    operations = []
    for old, cosine in near:
        if not old.live or old.id == new.id or not contradicts(of(old), mine, cosine=None):
            continue
        branch = _shared_branch(old, new)
        if branch is None:
            continue
        why = reason(old, new)
        events.append(Superseded(entry_id=old.id, by=new.id, reason=why, branch=branch))
        operations.append(Operation(op="update", entry_id=old.id, by=new.id, text=new.description,
                                    reason=f"{why} (cosine {cosine:.2f})"))  # fmt: skip
    if operations:
        events.append(_audit(new, operations))
    return events


def _audit(new: Entry, operations: Sequence[Operation]) -> MemoryEvolved:
    """The ``memory.evolved`` naming every lesson ``new`` replaced, and why."""
    key = new.branches[0] if new.branches else f"{new.source_project}/"
    project, _, branch = key.partition("/")
    return MemoryEvolved(
        project=project, branch=branch, mode="contradiction", operations=tuple(operations),
        note="a new lesson said the opposite of held ones",
    )  # fmt: skip


def _shared_branch(old: Entry, new: Entry) -> str | None:
    """Where ``new`` supersedes ``old``: everywhere ("") when neither is a branch's lesson,
    the branch memory they share when both are, nowhere (None) otherwise."""
    if not old.branches and not new.branches:
        return ""
    shared = [b for b in new.branches if b in old.branches]
    return shared[0] if shared else None
