"""The fold of the ledger: Claude Code sessions, the spend of model calls by day, and the last
run of each maintenance task, as the log says they are (pure, like the entries' fold in
``fold``, which hands these events here).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from memlog.eventlog.events import (
    MaintenanceRan,
    MemoryEvolved,
    SessionPending,
    SessionProgress,
    Usage,
)

if TYPE_CHECKING:
    from memlog.projections.fold import State


class Session(msgspec.Struct, kw_only=True):
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
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_micros: int = 0
    first_seen: str = ""
    updated_at: str = ""


class Spend(msgspec.Struct, kw_only=True):
    """Model calls of one UTC day, for the daily budget."""

    day: str
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_micros: int = 0


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
    for total in (spend, session) if session is not None else (spend,):
        total.calls += usage.calls
        total.tokens_in += usage.tokens_in
        total.tokens_out += usage.tokens_out
        total.cost_micros += usage.cost_micros


def ledger(
    state: State, event: SessionPending | SessionProgress | MemoryEvolved | MaintenanceRan
) -> None:
    """Fold a session's, an extraction's or a maintenance task's event into ``state``."""
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
