"""The fold: entries as the log says they are.

``apply(state, event)`` is deterministic and does no I/O: every time comes
from events, nothing from a clock, a random source or the network.  For
speed the state is updated in place and returned; ``State.touched`` names
the entries an event changed, so writers persist only those.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from memlog.eventlog.events import (
    Event,
    Labelled,
    Observed,
    Promoted,
    Recalled,
    Redacted,
    Reembedded,
    Retired,
    Superseded,
)
from memlog.vocabulary import CONFIDENCE_RANK, MAX_KEYWORDS


class Vector(msgspec.Struct, frozen=True, array_like=True):
    """One embedding of an entry in a provider+model space (little-endian float32)."""

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
    # lifecycle
    promoted: bool = False
    promotion_reason: str = ""
    status: str = "live"
    status_reason: str = ""
    superseded_by: str = ""
    #: "provider/model" -> vector
    vectors: dict[str, Vector] = msgspec.field(default_factory=dict)

    @property
    def live(self) -> bool:
        return self.status == "live"


class State(msgspec.Struct):
    """Every entry by id, and which of them the last events touched."""

    entries: dict[str, Entry] = msgspec.field(default_factory=dict)
    touched: set[str] = msgspec.field(default_factory=set)


def space_key(provider: str, model: str) -> str:
    return f"{provider}/{model}"


def _union(current: list[str], more: Iterable[str]) -> None:
    for item in more:
        if item and item not in current:
            current.append(item)


def _create(event: Observed) -> Entry:
    entry = Entry(
        id=event.entry_id,
        name=event.name,
        description=event.description,
        category=event.category,
        reasoning=event.reasoning,
        keywords=list(event.keywords[:MAX_KEYWORDS]),
        references=list(event.references),
        observation_count=event.count if event.count is not None else 1,
        confidence=event.confidence,
        created_at=event.ts,
        updated_at=event.ts,
        created_seq=event.seq,
        source=event.source,
        source_project=event.project,
        last_observed=event.last_observed,
    )
    _add_provenance(entry, event)
    return entry


def provenance_label(project: str, feature: str) -> str:
    """``project, Feature #NNN`` as the global store writes its ``Source`` line."""
    if feature.lstrip("#").isdigit():
        feature = f"Feature #{feature.lstrip('#')}"
    elif feature and not feature.lower().startswith("feature"):
        feature = f"Feature {feature}"
    return ", ".join(p for p in (project, feature) if p)


def _add_provenance(entry: Entry, event: Observed | Promoted) -> None:
    _union(entry.projects, [event.project])
    _union(entry.features, [event.feature])
    _union(entry.provenance, [provenance_label(event.project, event.feature)])
    if isinstance(event, Observed):
        _union(entry.sources, [event.source])
        _union(entry.origins, [event.origin])
        _union(entry.details, event.details)


def _observe_again(entry: Entry, event: Observed) -> None:
    if event.count is None:
        entry.observation_count += 1
    else:  # an imported file states an absolute count: reflected, never summed
        entry.observation_count = max(entry.observation_count, event.count)
    entry.updated_at = event.ts
    if CONFIDENCE_RANK[event.confidence] > CONFIDENCE_RANK[entry.confidence]:
        entry.confidence = event.confidence
    if not entry.reasoning:
        entry.reasoning = event.reasoning
    _union(entry.references, event.references)
    _union(entry.keywords, event.keywords)
    del entry.keywords[MAX_KEYWORDS:]
    entry.last_observed = max(entry.last_observed, event.last_observed)
    if event.revive is not False:  # None: written before revival was asked for
        entry.status, entry.status_reason, entry.superseded_by = "live", "", ""
    _add_provenance(entry, event)


def _observed(state: State, event: Observed) -> str:
    entry = state.entries.get(event.entry_id)
    if entry is None:
        state.entries[event.entry_id] = _create(event)
    else:
        _observe_again(entry, event)
    return event.entry_id


def _promoted(entry: Entry, event: Promoted) -> None:
    entry.promoted = event.scope == "universal"
    entry.promotion_reason = event.reason
    _add_provenance(entry, event)


def _recalled(entry: Entry, event: Recalled) -> None:
    entry.recall_count += 1
    entry.last_recalled_at = event.ts


def _reembedded(entry: Entry, event: Reembedded) -> None:
    key = space_key(event.provider, event.model)
    entry.vectors[key] = Vector(event.dimensions, event.vector)


def _labelled(entry: Entry, event: Labelled) -> None:
    entry.keywords = list(dict.fromkeys(event.keywords))[:MAX_KEYWORDS]


def _retired(entry: Entry, event: Retired) -> None:
    entry.status, entry.status_reason = "retired", event.reason


def _superseded(entry: Entry, event: Superseded) -> None:
    entry.status, entry.status_reason, entry.superseded_by = "superseded", event.reason, event.by


def _redacted(entry: Entry) -> None:
    entry.vectors.clear()  # embedded from text that is gone: embedded again after


def _update(entry: Entry, event: Event) -> None:
    match event:
        case Promoted():
            _promoted(entry, event)
        case Recalled():
            _recalled(entry, event)
        case Reembedded():
            _reembedded(entry, event)
        case Labelled():
            _labelled(entry, event)
        case Retired():
            _retired(entry, event)
        case Superseded():
            _superseded(entry, event)
        case Redacted():
            _redacted(entry)


def apply(state: State, event: Event) -> State:
    """Fold one event into ``state``; events about unknown entries change nothing."""
    if isinstance(event, Observed):
        state.touched.add(_observed(state, event))
        return state
    ids = event.ids if isinstance(event, Recalled | Redacted) else (event.entry_ids[0],)
    for entry_id in dict.fromkeys(ids):
        entry = state.entries.get(entry_id)
        if entry is not None:
            _update(entry, event)
            state.touched.add(entry_id)
    return state


def fold(events: Iterable[Event], state: State | None = None) -> State:
    """Replay ``events`` onto ``state`` (a new empty state by default)."""
    current = State() if state is None else state
    for event in events:
        apply(current, event)
    return current
