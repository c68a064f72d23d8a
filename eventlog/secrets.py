"""Replace secrets in event payloads before they reach the log, and say what went.

``redact_event`` runs every text field of a payload (strings, and the
strings of tuples) through ``redaction.redact`` and records on the event
which field lost what class of secret (``redactions``; ``redacted`` keeps
naming the fields, as before).  ``describe`` turns that record into the
one line a command or the MCP server shows its caller.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

import msgspec

from memlog.eventlog.events import EventBase, Finding, Observed
from memlog.eventlog.redaction import REDACTED, redact

E = TypeVar("E", bound=EventBase)
__all__ = [
    "REDACTED", "describe", "redact_batch", "redact_event", "redact_text", "text_fields",
]  # fmt: skip

#: fields of the envelope, of vectors and of ids: never scanned
_SKIP = frozenset(
    {
        "type", "seq", "id", "ts", "v", "writer", "redacted", "redactions", "batch_end",
        "vector", "entry_id", "by", "ids", "stable_id", "removed",
    }
)  # fmt: skip


def redact_text(text: str) -> str:
    """``text`` with every recognised secret replaced by ``[REDACTED]``."""
    return redact(text).text


def text_fields(event: EventBase) -> Iterable[tuple[str, Any]]:
    """The payload fields that hold text (a string or a tuple of strings), with values."""
    for field in event.__struct_fields__:
        if field in _SKIP:
            continue
        value = getattr(event, field)
        if isinstance(value, str) or (isinstance(value, tuple) and value and _all_str(value)):
            yield field, value


def _all_str(values: tuple[Any, ...]) -> bool:
    return all(isinstance(v, str) for v in values)


def _clean(value: Any, kinds: Counter[str]) -> Any:
    if isinstance(value, str):
        cleaned = redact(value)
        kinds.update(cleaned.found)
        return cleaned.text
    return tuple(_clean(item, kinds) for item in value)


#: between the texts of an event scanned at once: no rule's match runs across it
_APART = "\n\x00\n"


def redact_event(event: E) -> E:
    """Return ``event`` with secrets replaced and what was replaced recorded.

    Its texts are scanned at once first (one pass, not one per field and keyword:
    most events hold no secret); only when that finds something are they cleaned one
    by one."""
    fields = list(text_fields(event))
    texts = [v for _, value in fields for v in ((value,) if isinstance(value, str) else value)]
    if not redact(_APART.join(texts)).found:
        return event
    changes: dict[str, Any] = {}
    findings: list[Finding] = []
    for field, value in fields:
        kinds: Counter[str] = Counter()
        cleaned = _clean(value, kinds)
        if cleaned != value:
            changes[field] = cleaned
            findings += [Finding(field, kind, n) for kind, n in sorted(kinds.items())]
    if not changes:
        return event
    return msgspec.structs.replace(
        event,
        redacted=tuple(sorted({*event.redacted, *changes})),
        redactions=(*event.redactions, *findings),
        **changes,
    )


def redact_batch(events: Sequence[E]) -> list[E]:
    """``redact_event`` on each event of a batch; an entry whose description changed has a
    new id, and the batch's other events about it (a promotion, a label) follow it."""
    cleaned = [redact_event(e) for e in events]
    moved = {
        old.entry_id: new.entry_id
        for old, new in zip(events, cleaned, strict=True)
        if isinstance(old, Observed) and isinstance(new, Observed)
        and old.entry_id != new.entry_id
    }  # fmt: skip
    return [_follow(e, moved) for e in cleaned] if moved else cleaned


def _follow(event: E, moved: dict[str, str]) -> E:
    changes: dict[str, Any] = {}
    for field in ("entry_id", "by"):
        value = getattr(event, field, None)
        if isinstance(value, str) and value in moved:
            changes[field] = moved[value]
    ids = getattr(event, "ids", None)
    if isinstance(ids, tuple) and any(i in moved for i in ids):
        changes["ids"] = tuple(moved.get(i, i) for i in ids)
    return msgspec.structs.replace(event, **changes) if changes else event


def describe(findings: Iterable[Finding]) -> str:
    """``description: stripe-key; reasoning: password ×2`` — what was removed, not what it was."""
    by_field: dict[str, list[str]] = {}
    for found in findings:
        label = found.kind if found.count == 1 else f"{found.kind} ×{found.count}"
        by_field.setdefault(found.field, []).append(label)
    return "; ".join(f"{field}: {', '.join(kinds)}" for field, kinds in by_field.items())
