"""Reviewing the lessons the scan held: list them, show one with why and whence, accept or
reject it (each an event), and scan the entries stored before the scan existed.

An entry is held when the text of one of its observations tried to steer the agent
rather than teach it (``eventlog.steering``); it is injected nowhere until its user
accepts it here.  Accepting lets in the text held so far (the same text held again
changes nothing); rejecting keeps the entry out for good, unless it is accepted later.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, NamedTuple

from memlog.errors import InvalidInput
from memlog.eventlog import devices
from memlog.eventlog.events import Event, Held, Observed, Reviewed
from memlog.eventlog.steering import Hit, scan
from memlog.projections.fold import Entry
from memlog.projections.sqlite_view import listing, queries
from memlog.projections.sqlite_view.listing import Filters
from memlog.workspace import Workspace

__all__ = ["Origin", "Review", "accept", "held", "reject", "review", "scan_stored"]

Verdict = Literal["accepted", "rejected"]


def entry_fields(entry: Entry) -> list[tuple[str, str]]:
    """An entry's text, field by field, as the scan of lessons reads an observation's."""
    return [
        ("name", entry.name),
        ("description", entry.description),
        ("reasoning", entry.reasoning),
        ("keywords", ", ".join(entry.keywords)),
        ("references", "\n".join(entry.references)),
        ("details", "\n".join(entry.details)),
        ("layout", "\n".join(entry.layout)),
        ("project", ", ".join(entry.projects)),
        ("feature", ", ".join(entry.features)),
        ("branch", ", ".join(entry.branches)),
    ]


class Origin(NamedTuple):
    """One way an entry came in: an observation's time, door, origin and device."""

    ts: str
    door: str
    origin: str
    #: ``this machine``, or the device whose folder holds the line
    device: str


class Review(NamedTuple):
    """An entry under review: why it is held (the scan of its text now, and every hold
    recorded), where it came from, and what was decided."""

    entry: Entry
    hits: list[Hit]
    holds: list[Held]
    reviews: list[Reviewed]
    origins: list[Origin]


def held(ws: Workspace, rejected: bool = False, limit: int = 200) -> tuple[list[Entry], int]:
    """The entries held for review (with ``rejected``, the rejected ones too), most
    recently updated first, and how many there are in all."""
    ws.catch_up()
    if not ws.home.db.exists():
        return [], 0
    found, total = [], 0
    for status in ("held", "rejected") if rejected else ("held",):
        listed = listing.list_entries(ws.home, Filters(status=status), limit)
        found += listed.entries
        total += listed.total
    return found, total


def review(ws: Workspace, prefix: str) -> Review:
    """The entry ``prefix`` names, with why it is (or was) held and where it came from."""
    from memlog.api.reading import history

    ws.catch_up()
    entry = queries.find_entry(ws.home, prefix)
    events = history(ws, entry.id, entry.description)
    own = devices.known_device_id(ws.home)
    return Review(
        entry, scan(entry_fields(entry)), [e for e in events if isinstance(e, Held)],
        [e for e in events if isinstance(e, Reviewed)], _origins(events, entry, own),
    )  # fmt: skip


def _origins(events: Sequence[Event], entry: Entry, own: str) -> list[Origin]:
    others = [d for d in entry.devices if d and d != own]
    where = "this machine" if not others else f"devices {', '.join(entry.devices)}"
    return [
        Origin(e.ts, e.door or "(unnamed)", e.origin, where)
        for e in events
        if isinstance(e, Observed)
    ]


def accept(ws: Workspace, prefix: str, reason: str = "") -> tuple[Entry, list[str]]:
    """Let the held (or rejected) entry ``prefix`` be injected: an ``entry.reviewed`` event."""
    return _decide(ws, prefix, "accepted", reason, ("held", "rejected"))


def reject(ws: Workspace, prefix: str, reason: str = "") -> tuple[Entry, list[str]]:
    """Keep the held entry ``prefix`` out for good: an ``entry.reviewed`` event."""
    return _decide(ws, prefix, "rejected", reason, ("held",))


def _decide(
    ws: Workspace, prefix: str, verdict: Verdict, reason: str, allowed: tuple[str, ...]
) -> tuple[Entry, list[str]]:
    ws.catch_up()
    entry = queries.find_entry(ws.home, prefix)
    if entry.status not in allowed and not (verdict == "accepted" and entry.holds):
        raise InvalidInput(
            f"entry {entry.id} is {entry.status}, not held for review (memlog review lists "
            "those that are)"
        )
    ws.log("review").append([Reviewed(entry_id=entry.id, verdict=verdict, reason=reason.strip())])
    notes = ws.refresh()
    return queries.find_entry(ws.home, entry.id), notes


def scan_stored(ws: Workspace, dry_run: bool = False) -> tuple[list[Held], list[str]]:
    """Scan every live entry (stored before the scan existed, or let in without it) and
    hold those it finds steering text in: ``entry.held`` events, door ``review``.  Text
    already accepted is not held again (the fold ignores it)."""
    ws.catch_up()
    if not ws.home.db.exists():
        return [], []
    from memlog.eventlog.screening import digest_hits

    found = []
    for entry in queries.all_live(ws.home):
        hits = scan(entry_fields(entry))
        if hits:
            digest = digest_hits(hits)
            if digest not in entry.accepted:
                found.append(
                    Held(
                        entry_id=entry.id,
                        rules=tuple(h.rule for h in hits),
                        fields=tuple(dict.fromkeys(h.field for h in hits)),
                        digest=digest,
                        door="review",
                    )  # fmt: skip
                )
    if dry_run or not found:
        return found, []
    stored = ws.log("review").append(found)
    return stored, ws.refresh()
