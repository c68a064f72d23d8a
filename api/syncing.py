"""One memory across machines: sync the log through a git remote, and report on it."""

from __future__ import annotations

from memlog.api import redacting
from memlog.errors import InvalidInput
from memlog.eventlog.codec import BadLine, decode_line
from memlog.eventlog.events import Event
from memlog.eventlog.expunge import MIN_MATCH, NothingFound, replace_lines
from memlog.sync import engine, setup, versions
from memlog.sync.job import NO_ASKS, Asks
from memlog.sync.repo import set_up
from memlog.sync.state import Asking, Outcome, load_state
from memlog.sync.status import Status, status
from memlog.workspace import Workspace


def sync(
    ws: Workspace, remote: str | None = None, init: bool = False, key: str | None = None,
    asks: Asks = NO_ASKS,
) -> Outcome:  # fmt: skip
    """Offer this home's events, take the remote's, push the union, fold what came into the views
    (``key``: the sync key to join a remote with, else ``MEMLOG_SYNC_KEY``).  Redactions other
    devices asked of this one's lines that its owner confirmed (or that the team applies without
    asking) are made here and sent by a second exchange."""
    done = engine.sync(ws.home, ws.space, remote, init, key, asks)
    return _after_asked(ws, done)


def rotate(ws: Workspace, asks: Asks = NO_ASKS) -> Outcome:
    """Sync, then seal the remote with a new team key (``memlog sync --rotate-key``)."""
    return _after_asked(ws, engine.rotate(ws.home, ws.space, asks))


def _after_asked(ws: Workspace, done: Outcome) -> Outcome:
    wanted = [a for a in done.asked if a.applied_without_asking]
    if not wanted:
        return done
    notes = apply_asked(ws, wanted)
    again = engine.sync(ws.home, ws.space)
    again.notes = [*done.notes, *notes, *again.notes]
    again.refused = [*done.refused, *again.refused]
    again.held = [*done.held, *(h for h in again.held if h not in done.held)]
    again.received += done.received
    again.sent += done.sent
    again.key_made = again.key_made or done.key_made
    return again


def apply_asked(ws: Workspace, asked: list[Asking]) -> list[str]:
    """Take out of this device's lines the text other devices asked to (each line replaced
    by the one asked for, when it only takes text out of it); what was done, in lines."""
    wanted: dict[str, Event] = {}
    for item in asked:
        try:
            wanted[item.event] = decode_line(item.line.encode())
        except BadLine:
            continue
    current = {r.event.id: r.event for r in ws.log("sync").read() if r.event.id in wanted}
    removed = (
        t for i, e in wanted.items() if i in current for t in versions.removed_texts(e, current[i])
    )
    texts = tuple(dict.fromkeys(t for t in removed if len(t.strip()) >= MIN_MATCH))
    by = ", ".join(sorted({a.by for a in asked}))
    reason = f"asked by device {by}"
    try:
        done = replace_lines(ws.log("sync"), wanted, reason, texts, versions.is_redaction)
    except NothingFound:
        return []
    redacting.after_replaced(ws, done)
    seqs = ", ".join(str(r.seq) for r in done.event.removed)
    return [f"took text out of {done.events} events of this device (seq {seqs}) as device {by} "
            "asked; they are signed again and sent"]  # fmt: skip


def asked(ws: Workspace) -> list[Asking]:
    """The redactions other devices asked of this device's lines when it last synced, that
    wait for its owner (``memlog sync --confirm``)."""
    if not set_up(ws.home):
        raise InvalidInput("sync is not set up here: memlog sync --init REMOTE")
    last = load_state(ws.home).last
    return [a for a in (last.asked if last is not None else []) if not a.applied_without_asking]


def sync_key(ws: Workspace) -> str:
    """This home's sync key, on one line."""
    return setup.print_key(ws.home)


def sync_status(ws: Workspace) -> Status:
    return status(ws.home)


def sync_at_session_end(ws: Workspace) -> Outcome | None:
    """Sync when the project asks for it at session end (and the home is set up for it)."""
    if not ws.config.memory_sync_at_session_end or not set_up(ws.home):
        return None
    return sync(ws)


__all__ = ["Asks"]
