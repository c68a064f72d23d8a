"""What the fold makes: entries, sessions of Claude Code, the spend of model calls by day,
and the state that holds them (``fold`` folds events into it; the views persist it)."""

from __future__ import annotations

import msgspec

from memlog.eventlog.events import Usage


class Vector(msgspec.Struct, frozen=True, array_like=True):
    """One embedding of an entry in a provider+model space, ``q8`` (``eventlog.vectors``)."""

    dimensions: int
    data: bytes


class Entry(msgspec.Struct, kw_only=True):
    """An entry as the log has made it (the 16 columns plus provenance)."""

    id: str
    name: str
    description: str
    category: str
    reasoning: str = ""
    keywords: list[str] = msgspec.field(default_factory=list)
    references: list[str] = msgspec.field(default_factory=list)
    observation_count: int = 1
    confidence: str = "medium"
    recall_count: int = 0
    last_recalled_at: str | None = None
    created_at: str
    updated_at: str
    #: sequence number of the event that created the entry (orders files)
    created_seq: int = 0
    source: str
    source_project: str = ""
    # provenance
    projects: list[str] = msgspec.field(default_factory=list)
    features: list[str] = msgspec.field(default_factory=list)
    sources: list[str] = msgspec.field(default_factory=list)
    origins: list[str] = msgspec.field(default_factory=list)
    #: "project, Feature #NNN" for each distinct place the entry was seen
    provenance: list[str] = msgspec.field(default_factory=list)
    #: further metadata lines of imported entries (``Cost: …``, ``Instead: …``)
    details: list[str] = msgspec.field(default_factory=list)
    last_observed: str = ""
    #: header and metadata lines as a global store file had them (empty: memlog's format)
    layout: list[str] = msgspec.field(default_factory=list)
    # lifecycle
    promoted: bool = False
    promotion_reason: str = ""
    status: str = "live"
    status_reason: str = ""
    superseded_by: str = ""
    #: "provider/model" -> vector
    vectors: dict[str, Vector] = msgspec.field(default_factory=dict)
    #: the branch memory section of an extracted entry
    section: str = ""
    #: the branch memories (``project/branch``) holding the entry
    branches: list[str] = msgspec.field(default_factory=list)
    #: ``key<TAB>time`` for every branch memory the entry ever joined: when it last
    #: joined, left or came back to it (what that memory's ``Last updated`` comes from)
    branch_stamps: list[str] = msgspec.field(default_factory=list)
    #: its use (``use``): session -> ``verdict/source``, sessions judged, applied, contradicted
    verdicts: dict[str, str] = msgspec.field(default_factory=dict)
    judged_count: int = 0
    applied_count: int = 0
    contradicted_count: int = 0
    #: a proposal awaiting a person (``kind: reason``), the kinds a person declined
    proposal: str = ""
    declined: list[str] = msgspec.field(default_factory=list)
    # where it came from (doors, device folders) and its review (``holds``: the fields)
    doors: list[str] = msgspec.field(default_factory=list)
    devices: list[str] = msgspec.field(default_factory=list)
    held: list[str] = msgspec.field(default_factory=list)
    holds: list[str] = msgspec.field(default_factory=list)
    accepted: list[str] = msgspec.field(default_factory=list)
    review: str = ""

    @property
    def live(self) -> bool:
        return self.status == "live"


class Tally(msgspec.Struct, kw_only=True):
    """What model calls cost in all, as a session's and a day's spend count it: the sums of
    the ``Usage`` of their events.  Its fields come after those of the record built on it
    (the key first: the ledger's tables are keyed by their first column)."""

    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    #: estimated cost in millionths of a US dollar
    cost_micros: int = 0

    def add(self, usage: Usage) -> None:
        """Count in the model calls of one event."""
        self.calls += usage.calls
        self.tokens_in += usage.tokens_in
        self.tokens_out += usage.tokens_out
        self.cost_micros += usage.cost_micros


class Session(Tally):
    """A Claude Code session as the log knows it: where its transcript is, how far read."""

    id: str
    project: str = ""
    branch: str = ""
    cwd: str = ""
    transcript: str = ""
    #: open (started, not ended), pending, extracted, skipped, error
    status: str = "open"
    #: the outcome of the last extraction run ("" before the first)
    done: str = ""
    trigger: str = ""
    reason: str = ""
    #: transcript bytes when last reported, and bytes read so far
    size: int = 0
    offset: int = 0
    #: extraction attempts that failed for a passing reason since the last success
    attempts: int = 0
    turns: int = 0
    first_seen: str = ""
    updated_at: str = ""
    #: ``entry_id trigger time`` of each lesson received; those judged; how many are not
    received: list[str] = msgspec.field(default_factory=list)
    judged: list[str] = msgspec.field(default_factory=list)
    unjudged: int = 0


class Spend(Tally):
    """Model calls of one UTC day, for the daily budget."""

    day: str


class State(msgspec.Struct):
    """Every entry by id, and which of them the last events touched; sessions, spend by
    day and the last run of each maintenance task, and which of those changed."""

    entries: dict[str, Entry] = msgspec.field(default_factory=dict)
    touched: set[str] = msgspec.field(default_factory=set)
    sessions: dict[str, Session] = msgspec.field(default_factory=dict)
    spend: dict[str, Spend] = msgspec.field(default_factory=dict)
    maintenance: dict[str, str] = msgspec.field(default_factory=dict)
    touched_ledger: set[str] = msgspec.field(default_factory=set)
    #: the entries the events created, in that order (each one's ``slot`` in the views)
    created: list[str] = msgspec.field(default_factory=list)
