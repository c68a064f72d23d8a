"""Maintenance proposes, a person decides: retiring lessons that do not earn their place.

Two kinds of proposal, each an ``entry.proposed`` event with its reason:

* ``unused``: a live lesson judged in at least ``memory_retire_unused_after``
  sessions (``entry.influenced``) and applied in none of them;
* ``stale``: a live lesson of the project maintenance runs for whose cited
  files are all gone from its working tree (``memlog stale``).

Nothing is retired until a person confirms (``confirm``: an ``entry.retired``
carrying the proposal as its reason); ``dismiss`` withdraws a proposal, and
one of that kind is not made again for that lesson.  The weekly maintenance
proposes; ``memlog maintenance --proposals`` lists what awaits a decision.
"""

from __future__ import annotations

from collections.abc import Sequence

from memlog.capture.pipeline import capture
from memlog.errors import InvalidInput
from memlog.eventlog.events import Proposed, Retired
from memlog.projections.fold import Entry
from memlog.projections.sqlite_view import queries
from memlog.retrieval import stale
from memlog.workspace import Workspace


def unused(entries: Sequence[Entry], after: int) -> list[Proposed]:
    """Proposals for live lessons judged in ``after`` sessions or more, never applied."""
    return [
        Proposed(entry_id=e.id, kind="unused",
                 reason=f"given and judged in {e.judged_count} sessions, applied in none")
        for e in entries
        if e.live and not e.proposal and "unused" not in e.declined and e.applied_count == 0
        and e.judged_count >= after
    ]  # fmt: skip


def gone(ws: Workspace, entries: Sequence[Entry]) -> list[Proposed]:
    """Proposals for the live lessons of ``ws``'s project whose cited files are all gone."""
    mine = [e for e in entries if e.live and not e.proposal and "stale" not in e.declined]
    checked = stale.of_project(ws, mine)
    return [
        Proposed(entry_id=i, kind="stale", reason=f"{c.mark()} from {ws.project}")
        for i, c in checked.items()
        if c.stale
    ]


def propose(ws: Workspace) -> tuple[list[Proposed], list[str]]:
    """Append the proposals due now; the proposals and notes."""
    ws.catch_up()
    entries = queries.entries(ws.home, vectors=False)
    made = unused(entries, ws.config.memory_retire_unused_after) + gone(ws, entries)
    if not made:
        return [], []
    done = capture(ws, made, "maintenance")
    return made, done.notes


def awaiting(ws: Workspace) -> list[Entry]:
    """The live lessons with a proposal awaiting a decision, by name."""
    ws.catch_up()
    found = [e for e in queries.entries(ws.home, vectors=False) if e.live and e.proposal]
    return sorted(found, key=lambda e: (e.name.lower(), e.id))


def _proposed(ws: Workspace, prefix: str) -> Entry:
    entry = queries.find_entry(ws.home, prefix)
    if not entry.live or not entry.proposal:
        raise InvalidInput(f"entry {entry.id} has no proposal awaiting a decision")
    return entry


def confirm(ws: Workspace, prefixes: Sequence[str]) -> tuple[list[Entry], list[str]]:
    """Retire the lessons of ``prefixes`` as proposed (their proposal is the reason)."""
    ws.catch_up()
    entries = [_proposed(ws, p) for p in prefixes]
    events = [Retired(entry_id=e.id, reason=f"proposed and confirmed: {e.proposal}")
              for e in entries]  # fmt: skip
    return entries, capture(ws, events, "maintenance").notes


def dismiss(ws: Workspace, prefixes: Sequence[str]) -> tuple[list[Entry], list[str]]:
    """Withdraw the proposals of ``prefixes`` (that kind is not proposed again for them)."""
    ws.catch_up()
    entries = [_proposed(ws, p) for p in prefixes]
    events = [Proposed(entry_id=e.id, kind=e.proposal.split(":", 1)[0], dismissed=True,  # type: ignore[arg-type]
                       reason="a person kept it") for e in entries]  # fmt: skip
    return entries, capture(ws, events, "maintenance").notes
