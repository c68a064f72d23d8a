"""Every door's scan of lessons: each observation appended is named by the door it came
through and, when the scan of lessons (``steering``) finds text in it that steers the agent,
followed in its batch by an ``entry.held`` event.

The log's append calls ``screened`` for every batch holding an observation, so no door
(``memlog observe`` and ``promote``, the MCP server, ``memlog import``, extraction, Claude
Code's auto memory, an adopted iflow store) can store a lesson unscanned; sync scans
what another device sends with ``held_event`` (door ``sync``), as it arrives.  An entry
held stays out of every injection until its user accepts it (``memlog review``).

A judgment of a lesson (``entry.influenced``) quotes a session's transcript as its
evidence: data like a lesson, from a door (the MCP ``record_influence``, extraction) an
attacker's text can reach.  Its invisible characters are dropped, and evidence the scan
holds is withheld (``EVIDENCE_WITHHELD``, naming the rules); the verdict stands.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

import msgspec

from memlog import digests
from memlog.eventlog.events import EventBase, Held, Influenced, Observed
from memlog.eventlog.steering import Hit, observed_fields, scan, visible

E = TypeVar("E", bound=EventBase)

#: the door of each command that appends observations (the command itself otherwise)
DOORS = {
    "observe": "observe",
    "promote": "promote",
    "serve-mcp": "mcp",
    "import": "import",
    "import --claude-memory": "auto-memory",
    "memorize": "extraction",
    "maintenance": "extraction",
    "adopt": "adopt",
}


#: what replaces evidence the scan holds (the rules follow)
EVIDENCE_WITHHELD = "withheld: the scan of lessons held it"


def door_of(command: str) -> str:
    """The door an observation appended by ``command`` came through."""
    return DOORS.get(command, command.split(" ", 1)[0])


def digest_hits(hits: Sequence[Hit]) -> str:
    """What names the text held: each rule with the text it matched (whatever field it is
    in, and whatever else the entry says), so the same text held again, in an observation
    or in the entry, is known as accepted, and new text is not."""
    named = sorted({(h.rule, h.matched) for h in hits})
    return digests.sha256(msgspec.json.encode(named)).hexdigest()[:16]


def held_event(event: Observed, door: str) -> Held | None:
    """The ``entry.held`` event for ``event`` when the scan holds it (None when it passes)."""
    fields = observed_fields(event)
    hits = scan(fields)
    if not hits:
        return None
    return Held(
        entry_id=event.entry_id, rules=tuple(h.rule for h in hits),
        fields=tuple(dict.fromkeys(h.field for h in hits)), digest=digest_hits(hits),
        door=door,
    )  # fmt: skip


def screened(events: Sequence[E], command: str) -> tuple[list[E], set[int]]:
    """``events`` with each observation's door named (when it names none) and each one the
    scan holds followed by its ``entry.held`` event; the places of the events added."""
    found: list[Any] = []
    added: set[int] = set()
    for event in events:
        if isinstance(event, Influenced):
            found.append(screened_evidence(event))
            continue
        if not isinstance(event, Observed):
            found.append(event)
            continue
        observed: Observed = event
        if not observed.door:
            observed = msgspec.structs.replace(observed, door=door_of(command))
        found.append(observed)
        held = held_event(observed, observed.door)
        if held is not None:
            added.add(len(found))
            found.append(held)
    return found, added


def screened_evidence(event: Influenced) -> Influenced:
    """``event`` with its evidence visible (invisible characters dropped), or withheld when
    the scan holds what is left."""
    if not event.evidence:
        return event
    shown = " ".join(visible(event.evidence).split())
    hits = scan([("evidence", shown)])
    if hits:
        shown = f"{EVIDENCE_WITHHELD} ({', '.join(h.rule for h in hits)})"
    return event if shown == event.evidence else msgspec.structs.replace(event, evidence=shown)


def received_holds(received: Sequence[bytes]) -> tuple[list[Held], int]:
    """The ``entry.held`` events (door ``sync``) for the observations in another device's new
    lines (``received``: whole lines) that the scan holds, less those that device held itself
    with the same text; and the latest stamp among the lines (0 for none)."""
    from memlog.eventlog.clock import micros
    from memlog.eventlog.codec import BadLine, decode_line

    events = []
    for chunk in received:
        for line in chunk.splitlines(keepends=True):
            try:
                events.append(decode_line(line))
            except BadLine:
                continue  # damage is the reader's to report
    theirs = {(e.entry_id, e.digest) for e in events if isinstance(e, Held)}
    held = [
        found
        for e in events
        if isinstance(e, Observed)
        and (found := held_event(e, "sync")) is not None
        and (found.entry_id, found.digest) not in theirs
    ]
    newest = max((micros(e.ts) for e in events), default=0)
    return list({h.entry_id + h.digest: h for h in held}.values()), newest
