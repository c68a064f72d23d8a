"""Events in words, for people: what the Log and an entry's timeline say of each event.

No Python representation reaches the page.  What the model calls behind an event cost
is a phrase (calls, tokens, dollars, the model), left out when no call was made; an
audit's operations are counted in its line and listed under it; a vector is the space
it belongs to (provider and model) and its size; any other record is its non-empty
fields.  Nothing is cut: long text wraps on the page.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import msgspec

from memlog.eventlog.events import (
    Event,
    MemoryEvolved,
    Observed,
    Operation,
    Recalled,
    Reembedded,
    SessionProgress,
    Usage,
)
from memlog.vocabulary import counted

#: the envelope every event has (the table's other columns show what of it matters)
ENVELOPE = ("seq", "id", "ts", "v", "writer", "batch_end", "redacted")
#: operations in the order an audit lists them
OPERATIONS = ("add", "update", "remove", "keep")


def cost(usage: Usage) -> str:
    """``1 call, 1,200 tokens in, 300 out, $0.0021 (claude-haiku-4-5)``; "" for none."""
    if not usage.calls:
        return ""
    who = usage.model or usage.provider
    return (
        f"{counted(usage.calls, 'call')}, {usage.tokens_in:,} tokens in, {usage.tokens_out:,} out, "
        f"${usage.cost_micros / 1_000_000:.4f}" + (f" ({who})" if who else "")
    )


def operations_by_kind(operations: tuple[Operation, ...]) -> list[tuple[str, int]]:
    """How many operations of each kind, in the order add, update, remove, keep."""
    kinds: Counter[str] = Counter(op.op for op in operations)
    return [(kind, kinds[kind]) for kind in OPERATIONS if kinds[kind]]


def operation(op: Operation, names: Mapping[str, str] | None = None) -> str:
    """One operation of an audit: what it did to which entry (by name when known), why."""
    names = names or {}
    entry = names.get(op.entry_id) or op.entry_id[:8]
    what = f"{op.op} {entry}"
    if op.by:
        what += f" → {names.get(op.by) or op.by[:8]}"
    if op.section:
        what += f" ({op.section})"
    if op.text:
        what += f": {op.text}"
    return what + (f" — {op.reason}" if op.reason else "")


def summary(event: Event) -> str:
    """One line about an event: what happened, in its own words."""
    match event:
        case Observed():
            where = ", ".join(p for p in (event.project, event.branch, event.feature) if p)
            return f"{event.category} from {event.source}" + (f" ({where})" if where else "")
        case Recalled():
            where = f" in {event.project}" if event.project else ""
            at = f" at {event.trigger}" if event.trigger else ""
            return f"recalled {len(event.ids)} entries{where}{at}"
        case Reembedded():
            return (
                f"a vector in {event.provider}/{event.model}, {event.dimensions} dimensions "
                f"(stored as {event.encoding})"
            )
        case MemoryEvolved():
            return _audit(event)
        case SessionProgress():
            said = [f"session {event.session_id[:8]} {event.status}", event.reason]
            said += [f"{event.turns} turns read" if event.turns else "", cost(event.usage)]
            return "; ".join(part for part in said if part)
        case _:
            return "; ".join(f"{k}: {v}" for k, v in fields(event).items() if k != "entry_id")


def details(event: Event, names: Mapping[str, str] | None = None) -> list[str]:
    """The lines under an event's summary: an audit's operations, one each."""
    if isinstance(event, MemoryEvolved):
        return [operation(op, names) for op in event.operations]
    return []


def _audit(event: MemoryEvolved) -> str:
    kinds = (
        ", ".join(f"{n} {kind}" for kind, n in operations_by_kind(event.operations)) or "no change"
    )
    said = [f"{event.branch or '(no branch)'} in {event.project or '(no project)'}: {event.mode}"]
    said += [kinds, f"session {event.session_id[:8]}" if event.session_id else ""]
    said += [event.note, cost(event.usage)]
    return "; ".join(part for part in said if part)


def fields(event: Event) -> dict[str, str]:
    """An event's own fields with a value, each in words."""
    found = msgspec.structs.asdict(event)
    return {
        name: _words(value)
        for name, value in found.items()
        if name not in ENVELOPE and value not in ("", (), None) and _words(value)
    }


def _words(value: Any) -> str:
    if isinstance(value, Usage):
        return cost(value)
    if isinstance(value, msgspec.Struct):
        inner = {k: _words(v) for k, v in msgspec.structs.asdict(value).items()}
        return ", ".join(f"{k} {v}" for k, v in inner.items() if v)
    if isinstance(value, list | tuple):
        return ", ".join(_words(v) for v in value)
    if isinstance(value, bytes):
        return f"{len(value):,} bytes"
    return "" if value is None else str(value)
