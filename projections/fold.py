"""The fold: entries as the log says they are.

``apply(state, event)`` is deterministic and does no I/O: every time comes
from events, nothing from a clock, a random source or the network.  For
speed the state is updated in place and returned; ``State.touched`` names
the entries an event changed, so writers persist only those.
"""

from __future__ import annotations

from collections.abc import Iterable

from memlog.eventlog.events import (
    Event,
    Held,
    Influenced,
    Labelled,
    MaintenanceRan,
    MemoryEvolved,
    Observed,
    Promoted,
    Proposed,
    Recalled,
    Redacted,
    Reembedded,
    Retired,
    Reviewed,
    SessionPending,
    SessionProgress,
    Superseded,
    Usage,
)
from memlog.projections import use
from memlog.projections.holds import hold, review, settle
from memlog.projections.model import Entry as Entry
from memlog.projections.model import Session as Session
from memlog.projections.model import Spend as Spend
from memlog.projections.model import State as State
from memlog.projections.model import Vector as Vector
from memlog.vocabulary import CONFIDENCE_RANK, MAX_KEYWORDS


def space_key(provider: str, model: str) -> str:
    return f"{provider}/{model}"


def _union(current: list[str], more: Iterable[str]) -> None:
    for item in more:
        if item and item not in current:
            current.append(item)


def _create(event: Observed, entry_id: str, device: str = "") -> Entry:
    entry = Entry(
        id=entry_id,
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
        section=event.section,
    )
    _add_provenance(entry, event, device)
    return entry


def provenance_label(project: str, feature: str) -> str:
    """``project, Feature #NNN`` as the global store writes its ``Source`` line."""
    if feature.lstrip("#").isdigit():
        feature = f"Feature #{feature.lstrip('#')}"
    elif feature and not feature.lower().startswith("feature"):
        feature = f"Feature {feature}"
    return ", ".join(p for p in (project, feature) if p)


def _add_provenance(entry: Entry, event: Observed | Promoted, device: str = "") -> None:
    _union(entry.projects, [event.project])
    _union(entry.features, [event.feature])
    _union(entry.provenance, [provenance_label(event.project, event.feature)])
    if isinstance(event, Observed):
        _union(entry.sources, [event.source])
        _union(entry.origins, [event.origin])
        _union(entry.details, event.details)
        _union(entry.doors, [event.door])
        _union(entry.devices, [device])
        entry.layout = list(event.layout) or entry.layout  # as the store file last read had it


def _observe_again(entry: Entry, event: Observed, device: str = "") -> None:
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
    if event.revive is not False and entry.status != "rejected":  # None: written before
        entry.status, entry.status_reason, entry.superseded_by = "live", "", ""
        settle(entry)
    _add_provenance(entry, event, device)


def _observed(state: State, event: Observed, device: str = "") -> str:
    entry = state.entries.get(entry_id := event.entry_id)  # (a hash of the description)
    if entry is None:
        entry = state.entries[entry_id] = _create(event, entry_id, device)
        state.created.append(entry_id)
    else:
        if not entry.live and event.revive is not False:  # back in every branch memory
            for key in entry.branches:
                _stamp(entry, key, event.ts)
        _observe_again(entry, event, device)
    if event.section:
        entry.section = entry.section or event.section
        key = branch_key(event.project, event.branch)
        if key not in entry.branches:
            entry.branches.append(key)
            _stamp(entry, key, event.ts)
    return entry_id


def _stamp(entry: Entry, key: str, ts: str) -> None:
    kept = [s for s in entry.branch_stamps if s.split("\t", 1)[0] != key]
    entry.branch_stamps = sorted([*kept, f"{key}\t{ts}"])


def _promoted(entry: Entry, event: Promoted) -> None:
    entry.promoted = event.scope == "universal"
    entry.promotion_reason = event.reason
    _add_provenance(entry, event)


def _recalled(entry: Entry, event: Recalled) -> None:
    entry.recall_count += 1
    entry.last_recalled_at = event.ts


def _reembedded(entry: Entry, event: Reembedded) -> None:
    entry.vectors[space_key(event.provider, event.model)] = Vector(event.dimensions, event.q8)


def _labelled(entry: Entry, event: Labelled) -> None:
    entry.keywords = list(dict.fromkeys(event.keywords))[:MAX_KEYWORDS]


def _leaves_branch(entry: Entry, branch: str, ts: str) -> bool:
    """Take ``entry`` out of the branch memory ``branch`` (of every one when empty);
    True when that takes it out of retrieval too."""
    if not branch:
        for key in entry.branches if entry.live else ():
            _stamp(entry, key, ts)
        return True
    if branch not in entry.branches:
        return False
    entry.branches.remove(branch)
    _stamp(entry, branch, ts)
    return not entry.branches


def _retired(entry: Entry, event: Retired) -> None:
    if _leaves_branch(entry, event.branch, event.ts):
        entry.status, entry.status_reason = "retired", event.reason
        entry.proposal = ""


def _superseded(entry: Entry, event: Superseded) -> None:
    if _leaves_branch(entry, event.branch, event.ts):
        entry.status, entry.status_reason = "superseded", event.reason
        entry.superseded_by = event.by
        entry.proposal = ""


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
        case Redacted():  # embedded from text that is gone: embedded again after
            entry.vectors.clear()
        case Influenced():
            use.judge(entry, event)
        case Proposed():
            use.propose(entry, event)
        case Held():
            hold(entry, event)
        case Reviewed():
            review(entry, event)


def apply(state: State, event: Event, device: str = "") -> State:
    """Fold one event into ``state``; events about unknown entries change nothing.
    ``device``: the device folder the event's line is in ("" for a log kept flat)."""
    if isinstance(event, Observed):
        state.touched.add(_observed(state, event, device))
        return state
    if isinstance(event, SessionPending | SessionProgress | MemoryEvolved | MaintenanceRan):
        _ledger(state, event)
        return state
    if isinstance(event, Recalled | Influenced) and event.session_id:  # received, judged
        use.follow(_session(state, event.session_id, event.ts), event)
    ids = event.ids if isinstance(event, Recalled | Redacted) else (event.entry_ids[0],)
    for entry_id in dict.fromkeys(ids):
        entry = state.entries.get(entry_id)
        if entry is not None:
            _update(entry, event)
            state.touched.add(entry_id)
    return state


# -- sessions, spend and maintenance -------------------------------------------------------


def branch_key(project: str, branch: str) -> str:
    """The key of a branch memory: ``project/branch`` (a project name holds no ``/``)."""
    return f"{project}/{branch}"


def _session(state: State, session_id: str, ts: str) -> Session:
    session = state.sessions.get(session_id)
    if session is None:
        session = state.sessions[session_id] = Session(id=session_id, first_seen=ts)
    session.updated_at = ts
    state.touched_ledger.add(f"session:{session_id}")
    return session


def _pending(state: State, event: SessionPending) -> None:
    session = _session(state, event.session_id, event.ts)
    for field in ("transcript", "cwd", "project", "branch"):
        if getattr(event, field):
            setattr(session, field, getattr(event, field))
    session.trigger, session.reason = event.trigger, event.reason
    session.size = max(session.size, event.size)
    if event.trigger == "SessionStart":
        session.status = "pending" if session.status == "pending" else "open"
    elif event.size > session.offset or not session.done:
        session.status = "pending"
    elif session.status == "open":  # ended with nothing new since the last run
        session.status = session.done


def _progress(state: State, event: SessionProgress) -> None:
    session = _session(state, event.session_id, event.ts)
    session.offset = max(session.offset, event.offset)
    session.status, session.reason = event.status, event.reason
    session.attempts = session.attempts + 1 if event.status == "pending" else 0
    if event.status != "pending":
        session.done = event.status
    session.turns += event.turns
    _spent(state, event.ts, event.usage, session)


def _spent(state: State, ts: str, usage: Usage, session: Session | None) -> None:
    if not usage.calls:
        return
    day = ts[:10]
    spend = state.spend.setdefault(day, Spend(day=day))
    state.touched_ledger.add(f"spend:{day}")
    spend.add(usage)
    if session is not None:
        session.add(usage)


def _ledger(
    state: State, event: SessionPending | SessionProgress | MemoryEvolved | MaintenanceRan
) -> None:
    match event:
        case SessionPending():
            _pending(state, event)
        case SessionProgress():
            _progress(state, event)
        case MemoryEvolved():
            known = state.sessions.get(event.session_id) if event.session_id else None
            if known is not None:
                state.touched_ledger.add(f"session:{known.id}")
            _spent(state, event.ts, event.usage, known)
        case MaintenanceRan():
            state.maintenance[event.task] = event.ts
            state.touched_ledger.add(f"maintenance:{event.task}")


def fold(events: Iterable[Event], state: State | None = None) -> State:
    """Replay ``events`` onto ``state`` (a new empty state by default)."""
    current = State() if state is None else state
    for event in events:
        apply(current, event)
    return current
