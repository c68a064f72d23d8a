"""Every event memlog records, as tagged msgspec Structs.

One line of the log is one event: the envelope fields of ``EventBase``
(sequence, unique id, time, schema version, writer, redactions, batch) followed by
the payload fields of its type, then a checksum that ``codec`` appends.
Schemas evolve only by adding fields with defaults; a breaking change gets a
new tag or an upcaster in ``codec``.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from memlog.eventlog.envelope import EntryId as EntryId
from memlog.eventlog.envelope import EventBase as EventBase
from memlog.eventlog.envelope import Finding as Finding
from memlog.eventlog.envelope import Text as Text
from memlog.eventlog.envelope import Writer as Writer
from memlog.eventlog.envelope import content_hash as content_hash
from memlog.eventlog.vectors import to_q8
from memlog.vocabulary import (
    Category,
    Confidence,
    InfluenceSource,
    Scope,
    Section,
    SessionStatus,
    Source,
    Verdict,
)


class Observed(EventBase, frozen=True, kw_only=True, tag="entry.observed"):
    """An entry was observed: the first creates it, later ones add to it."""

    name: Text
    description: Text
    category: Category
    reasoning: str = ""
    confidence: Confidence = "medium"
    keywords: tuple[str, ...] = ()
    references: tuple[str, ...] = ()
    source: Source = "manual"
    project: str = ""
    feature: str = ""
    #: an absolute observation count stated by an imported file (never summed)
    count: int | None = None
    #: the ``Last observed`` value stated by an imported file
    last_observed: str = ""
    #: the file an imported entry came from
    origin: str = ""
    #: further ``Key: value`` metadata lines of an imported entry, verbatim
    details: tuple[str, ...] = ()
    #: an entry of a global store file as it was written there: its header (after
    #: ``### ``), then every line from its first metadata item on, verbatim, so the
    #: store's files are written back as they were
    layout: tuple[str, ...] = ()
    #: the branch memory section of an extracted entry
    section: Section | Literal[""] = ""
    #: the git branch the entry was extracted on (with ``project``: its branch memory)
    branch: str = ""
    #: the entry id when the description no longer hashes to it (``memlog redact``
    #: rewrote the description); empty: the content hash of the description
    stable_id: Annotated[str, Meta(pattern="^(?:[0-9a-f]{16})?$")] = ""
    #: whether observing a retired or superseded entry brings it back; None (lines
    #: written before the choice existed) brings it back, as those versions did
    revive: bool | None = None
    #: the way in (``observe``, ``mcp``, ``import``, ``extraction``, ``auto-memory`` …; ""
    #: before doors were named): with ``origin`` and the line's device, where it came from
    door: str = ""

    @property
    def entry_id(self) -> str:
        return self.stable_id or content_hash(self.description)

    @property
    def entry_ids(self) -> tuple[str, ...]:
        return (self.entry_id,)


class Promoted(EventBase, frozen=True, kw_only=True, tag="entry.promoted"):
    """An entry was judged universal (or kept to its project) by a retrospective."""

    entry_id: EntryId
    scope: Scope = "universal"
    reason: str = ""
    project: str = ""
    feature: str = ""

    @property
    def entry_ids(self) -> tuple[str, ...]:
        return (self.entry_id,)


class Recalled(EventBase, frozen=True, kw_only=True, tag="entry.recalled"):
    """Entries were injected into a context; never changes ``updated_at``.  What was ranked
    stays on the machine: the event keeps a digest of it (``devices.local_digest``)."""

    ids: tuple[EntryId, ...]
    session_id: str = ""
    project: str = ""
    query: str = ""  # the text ranked: only in lines written before it was kept local
    mode: str = ""
    #: what the entries were injected at: a session start's source (``startup``,
    #: ``resume``, ``clear``, ``compact``) or ``prompt``; empty: a start, or written before
    trigger: str = ""
    #: the text ranked, digested with this home's own key ("" before, or with no text)
    digest: str = ""
    #: each entry's final score, in the order of ``ids`` (empty: written before)
    scores: tuple[float, ...] = ()

    @property
    def entry_ids(self) -> tuple[str, ...]:
        return self.ids


class Reembedded(EventBase, frozen=True, kw_only=True, tag="entry.reembedded"):
    """A vector for an entry, in one provider+model space, as ``encoding`` says
    (``eventlog.vectors``: ``q8`` since it exists, ``f32`` before)."""

    entry_id: EntryId
    provider: Text
    model: Text
    dimensions: Annotated[int, Meta(gt=0)]
    vector: bytes
    #: how ``vector`` is written; lines without it are little-endian float32
    encoding: Literal["f32", "q8"] = "f32"

    @property
    def q8(self) -> bytes:
        """The vector as ``q8`` (an ``f32`` one quantised: ``vectors.to_q8``)."""
        return to_q8(self.vector, self.encoding, self.dimensions)

    def __post_init__(self) -> None:
        width = 4 * self.dimensions if self.encoding == "f32" else 4 + self.dimensions
        if len(self.vector) != width:
            raise ValueError(
                f"a {self.encoding} vector of {self.dimensions} dimensions has {width} bytes, "
                f"not {len(self.vector)}"
            )

    @property
    def entry_ids(self) -> tuple[str, ...]:
        return (self.entry_id,)


class Labelled(EventBase, frozen=True, kw_only=True, tag="entry.labelled"):
    """Keyword labels for an entry (they replace earlier labels)."""

    entry_id: EntryId
    keywords: tuple[str, ...]
    provider: str = ""

    @property
    def entry_ids(self) -> tuple[str, ...]:
        return (self.entry_id,)


class Retired(EventBase, frozen=True, kw_only=True, tag="entry.retired"):
    """An entry leaves retrieval and the markdown view; its history stays."""

    entry_id: EntryId
    reason: str = ""
    #: the branch memory (``project/branch``) the entry leaves; empty: it leaves everything
    branch: str = ""

    @property
    def entry_ids(self) -> tuple[str, ...]:
        return (self.entry_id,)


class Superseded(EventBase, frozen=True, kw_only=True, tag="entry.superseded"):
    """An entry is replaced by another."""

    entry_id: EntryId
    by: EntryId
    reason: str = ""
    #: the branch memory (``project/branch``) in which it is replaced; empty: everywhere
    branch: str = ""

    @property
    def entry_ids(self) -> tuple[str, ...]:
        return (self.entry_id, self.by)


class Held(EventBase, frozen=True, kw_only=True, tag="entry.held"):
    """The scan found text in an observation that tries to steer the agent (``rules``, in
    ``fields``): the entry is injected nowhere until its user accepts it.  ``digest`` names
    the text held: once accepted, the same text held again is not."""

    entry_id: EntryId
    rules: tuple[str, ...]
    fields: tuple[str, ...] = ()
    digest: str = ""
    #: the door the text came through (``sync`` for another device's line)
    door: str = ""

    @property
    def entry_ids(self) -> tuple[str, ...]:
        return (self.entry_id,)


class Influenced(EventBase, frozen=True, kw_only=True, tag="entry.influenced"):
    """What one session did with a lesson it received, a quote of the evidence, and who
    judged: its ``extraction`` request, a ``local`` estimate, or the ``agent`` itself."""

    entry_id: EntryId
    session_id: Text
    verdict: Verdict
    evidence: str = ""
    source: InfluenceSource = "extraction"

    @property
    def entry_ids(self) -> tuple[str, ...]:
        return (self.entry_id,)


class Reviewed(EventBase, frozen=True, kw_only=True, tag="entry.reviewed"):
    """The user judged a held entry: ``accepted`` lets it be injected (the text held so far),
    ``rejected`` keeps it out for good (until accepted)."""

    entry_id: EntryId
    verdict: Literal["accepted", "rejected"]
    reason: str = ""

    @property
    def entry_ids(self) -> tuple[str, ...]:
        return (self.entry_id,)


class Proposed(EventBase, frozen=True, kw_only=True, tag="entry.proposed"):
    """A proposal to retire an entry (``unused``: given often, never applied; ``stale``: its
    cited files gone), until a person confirms (``entry.retired``) or ``dismissed`` it."""

    entry_id: EntryId
    kind: Literal["unused", "stale"]
    reason: str = ""
    dismissed: bool = False

    @property
    def entry_ids(self) -> tuple[str, ...]:
        return (self.entry_id,)


class Removal(msgspec.Struct, frozen=True):
    """Text a redaction removed from one field of one earlier event."""

    seq: int
    field: str
    count: int
    kind: str = "match"


class Redacted(EventBase, frozen=True, kw_only=True, tag="entry.redacted"):
    """Secrets were removed from earlier events (rewritten in place) and from every view.

    The removed text itself is recorded nowhere: ``removed`` says where it was.
    """

    ids: tuple[EntryId, ...]
    reason: Text
    #: ``match``: text given by the user; ``detected``: found by the redaction rules
    kind: str = "match"
    removed: tuple[Removal, ...] = ()

    @property
    def entry_ids(self) -> tuple[str, ...]:
        return self.ids


# -- sessions of Claude Code, extraction and maintenance ----------------------------------


class Usage(msgspec.Struct, frozen=True, kw_only=True):
    """What the model calls behind an event cost: calls, tokens, estimated dollars."""

    provider: str = ""
    model: str = ""
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    #: estimated cost in millionths of a US dollar (exact sums, no float drift)
    cost_micros: int = 0


class SessionPending(EventBase, frozen=True, kw_only=True, tag="session.pending"):
    """A Claude Code session has a transcript to read: it started, ended or compacts."""

    session_id: Text
    transcript: str = ""
    cwd: str = ""
    project: str = ""
    branch: str = ""
    #: SessionStart, SessionEnd, PreCompact, manual or sweep
    trigger: str = ""
    #: the hook's own word: SessionEnd ``reason``, PreCompact ``trigger``, SessionStart ``source``
    reason: str = ""
    #: the transcript's size in bytes when this was recorded
    size: int = 0


class SessionProgress(EventBase, frozen=True, kw_only=True, tag="session.progress"):
    """Extraction read a session's transcript up to ``offset`` (bytes), with this outcome."""

    session_id: Text
    status: SessionStatus
    #: the next transcript byte to read: never read twice
    offset: int = 0
    reason: str = ""
    turns: int = 0
    usage: Usage = Usage()


class Operation(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One operation on a branch memory, as validated and applied."""

    op: Literal["add", "update", "remove", "keep"]
    #: the entry concerned: the new one for ``add``, the existing one otherwise
    entry_id: str = ""
    #: ``update``: the entry that replaces it
    by: str = ""
    section: str = ""
    text: str = ""
    reason: str = ""
    confidence: float | None = None


class MemoryEvolved(EventBase, frozen=True, kw_only=True, tag="memory.evolved"):
    """The audit of one change to a branch memory: every operation and what it cost."""

    project: str
    branch: str
    #: created (no memory yet), evolved, fallback (evolution rejected), consolidated, cleared
    mode: str
    session_id: str = ""
    operations: tuple[Operation, ...] = ()
    note: str = ""
    usage: Usage = Usage()

    @property
    def entry_ids(self) -> tuple[str, ...]:
        """The entries its operations name (the audit joins their history)."""
        named = (i for op in self.operations for i in (op.entry_id, op.by) if i)
        return tuple(dict.fromkeys(named))


class MaintenanceRan(EventBase, frozen=True, kw_only=True, tag="maintenance.ran"):
    """A periodic maintenance task ran (``weekly`` consolidation, ``monthly`` reindex)."""

    task: Literal["weekly", "monthly"]
    branches: tuple[str, ...] = ()
    entries: int = 0
    note: str = ""


Event = (
    Observed
    | Promoted
    | Recalled
    | Reembedded
    | Labelled
    | Retired
    | Superseded
    | SessionPending
    | SessionProgress
    | MemoryEvolved
    | MaintenanceRan
    | Redacted
    | Held
    | Reviewed
    | Influenced
    | Proposed
)
EVENT_TYPES: tuple[type[EventBase], ...] = (
    Observed,
    Promoted,
    Recalled,
    Reembedded,
    Labelled,
    Retired,
    Superseded,
    SessionPending,
    SessionProgress,
    MemoryEvolved,
    MaintenanceRan,
    Redacted,
    Held,
    Reviewed,
    Influenced,
    Proposed,
)
TYPE_NAMES: tuple[str, ...] = tuple(str(t.__struct_config__.tag) for t in EVENT_TYPES)
