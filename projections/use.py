"""What sessions do with the lessons they are given, as the fold keeps it.

An entry keeps, per session judged, what that session did with it
(``verdicts``: ``verdict/source``) and the counts ranking and maintenance read;
a session keeps what it received (every ``entry.recalled`` naming it) and which
of those were judged.  For one session and one lesson, a judgment replaces
another when its source ranks higher (the agent's word over the extraction's
over the local estimate), or comes from the same source and says more (applied
over contradicted over not used: a later part of a resumed session may use what
an earlier part did not).  Pure, like the rest of the fold.
"""

from __future__ import annotations

from memlog.eventlog.events import Influenced, Proposed, Recalled
from memlog.projections.model import Entry, Session

SOURCE_RANK = {"local": 0, "extraction": 1, "agent": 2}
VERDICT_RANK = {"not used": 0, "contradicted": 1, "applied": 2}


def outranks(event: Influenced, held: str) -> bool:
    """Whether ``event`` replaces the judgment ``held`` (``verdict/source``) of its session."""
    verdict, _, source = held.partition("/")
    new, old = SOURCE_RANK[event.source], SOURCE_RANK.get(source, -1)
    if new != old:
        return new > old
    return VERDICT_RANK[event.verdict] >= VERDICT_RANK.get(verdict, -1)


def judge(entry: Entry, event: Influenced) -> None:
    """An entry judged in a session: its verdict there, and the counts."""
    held = entry.verdicts.get(event.session_id)
    if held is not None and not outranks(event, held):
        return
    entry.verdicts[event.session_id] = f"{event.verdict}/{event.source}"
    verdicts = [v.split("/", 1)[0] for v in entry.verdicts.values()]
    entry.judged_count = len(verdicts)
    entry.applied_count = verdicts.count("applied")
    entry.contradicted_count = verdicts.count("contradicted")


def propose(entry: Entry, event: Proposed) -> None:
    """A proposal made (to a live entry, of a kind not declined) or declined."""
    if event.dismissed:
        entry.proposal = ""
        if event.kind not in entry.declined:
            entry.declined.append(event.kind)
    elif entry.live and event.kind not in entry.declined:
        entry.proposal = f"{event.kind}: {event.reason}"


def follow(session: Session, event: Recalled | Influenced) -> None:
    """What a session received (each lesson once, at its first recall: a compaction's or
    a clear's block gives again what it already had) and which of it was judged."""
    if isinstance(event, Recalled):
        held = {line.split(" ", 1)[0] for line in session.received}
        trigger = event.trigger or "startup"
        session.received += [f"{i} {trigger} {event.ts}" for i in event.ids if i not in held]
    elif event.entry_id not in session.judged:
        session.judged.append(event.entry_id)
    judged = set(session.judged)
    session.unjudged = sum(1 for line in session.received if line.split(" ", 1)[0] not in judged)
