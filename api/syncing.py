"""One memory across machines: sync the log through a git remote, and report on it."""

from __future__ import annotations

from memlog.sync import engine, setup
from memlog.sync.repo import set_up
from memlog.sync.state import Outcome
from memlog.sync.status import Status, status
from memlog.workspace import Workspace


def sync(
    ws: Workspace, remote: str | None = None, init: bool = False, key: str | None = None
) -> Outcome:
    """Offer this home's events, take the remote's, push the union, fold what came into the views
    (``key``: the sync key to join a remote with, else ``MEMLOG_SYNC_KEY``)."""
    return engine.sync(ws.home, ws.space, remote, init, key)


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
