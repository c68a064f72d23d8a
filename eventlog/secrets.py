"""Replace obvious secrets in event payloads before they reach the log."""

from __future__ import annotations

import re
from typing import Any, TypeVar

import msgspec

from memlog.eventlog.events import EventBase

REDACTED = "[REDACTED]"
E = TypeVar("E", bound=EventBase)

_PATTERNS = [
    re.compile(
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----"
        r".*?-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----",
        re.DOTALL,
    ),
    re.compile(r"\bsk-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_\-]{20,}"),
    re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b"),
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{30,}\b"),
    re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b"),
    re.compile(r"(?i)(?<=\bbearer )[A-Za-z0-9._~+/\-]{16,}=*"),
]
#: fields of the envelope and of vectors: never scanned
_SKIP = frozenset(
    {"type", "seq", "id", "ts", "v", "writer", "redacted", "vector", "entry_id", "by"}
)


def redact_text(text: str) -> str:
    """``text`` with every recognised secret replaced by ``[REDACTED]``."""
    for pattern in _PATTERNS:
        text = pattern.sub(REDACTED, text)
    return text


def _redact_value(value: Any) -> Any:
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, tuple):
        return tuple(_redact_value(item) for item in value)
    return value


def redact_event(event: E) -> E:
    """Return ``event`` with secrets replaced and the redacted fields recorded."""
    changes: dict[str, Any] = {}
    for field in event.__struct_fields__:
        if field in _SKIP:
            continue
        value = getattr(event, field)
        cleaned = _redact_value(value)
        if cleaned != value:
            changes[field] = cleaned
    if not changes:
        return event
    return msgspec.structs.replace(event, redacted=tuple(sorted(changes)), **changes)
