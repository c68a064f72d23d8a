"""The envelope every event carries (``EventBase``), and the types every event's fields
share: an entry's id, non-empty text, who wrote it, what redaction removed.  ``events``
holds the events themselves and re-exports these."""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta

from memlog import digests

Text = Annotated[str, Meta(min_length=1)]
EntryId = Annotated[str, Meta(pattern="^[0-9a-f]{16}$")]


def content_hash(description: str) -> str:
    """The entry id: sha256 of the whitespace-folded, lowercased description."""
    normalised = " ".join(description.lower().strip().split())
    return digests.sha256(normalised.encode("utf-8")).hexdigest()[:16]


class Writer(msgspec.Struct, frozen=True, omit_defaults=True):
    """Who appended an event."""

    tool: str
    command: str = ""
    host: str = ""
    pid: int = 0


class Finding(msgspec.Struct, frozen=True):
    """Secrets of one class removed from one payload field (``count`` of them)."""

    field: str
    kind: str
    count: int = 1


class EventBase(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    """The envelope every event carries; the log fills it in under its lock.

    A log line leaves out the fields at their default (``codec.encode_line``), so a
    default never changes: a new schema version is written as ``v`` explicitly.
    """

    seq: int = 0
    id: str = ""
    ts: str = ""
    v: int = 1
    writer: Writer | None = None
    #: payload fields in which secrets were replaced by ``[REDACTED]``
    redacted: tuple[str, ...] = ()
    #: the sequence of the last event of the batch this one was appended with
    #: (0 when appended alone): readers take a batch whole or not at all
    batch_end: int = 0
    #: what was removed from which field, by class (``redacted`` names the fields only)
    redactions: tuple[Finding, ...] = ()

    @property
    def entry_ids(self) -> tuple[str, ...]:
        """The ids of the entries this event is about."""
        return ()
