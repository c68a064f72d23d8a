"""Views after a sync: exactly what a replay of the log would make, byte for byte.

Incremental catch-ups give the same rows as a rebuild, but not the same
file: SQLite's row ids and full-text index pages follow the order rows came
in.  So sync rebuilds the views unless they are the very ones it rebuilt
last time (same position, same embedding space, nothing applied since),
and two homes holding the same events end with identical views.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from memlog.errors import MemlogError, describe
from memlog.projections.freshness import db_path, lag_bytes
from memlog.projections.runner import rebuild
from memlog.projections.sqlite_view import store
from memlog.sync.state import SyncState
from memlog.vocabulary import Space

_SPACE_KEYS = ("embedding_provider", "embedding_model", "embedding_dimensions")


def settle(home: Path, space: Space, state: SyncState) -> str:
    """Rebuild the views unless sync's own last rebuild still stands; say which."""
    if _position(home, space) == state.views_rebuilt_at and lag_bytes(home) == 0:
        return "unchanged"
    try:
        rebuild(home, space)
    except (MemlogError, OSError, sqlite3.Error) as exc:
        return f"not rebuilt ({describe(exc).message}); memlog replay rebuilds them"
    found = _position(home, space)
    state.views_rebuilt_at = found if found is not None else ("", -1)
    return "rebuilt"


def _position(home: Path, space: Space) -> tuple[str, int] | None:
    """The views' position, when they are in ``space`` (else None)."""
    if not db_path(home).exists():
        return None
    try:
        with store.opened(db_path(home), readonly=True) as db:
            found = tuple(store.get_meta(db, key) for key in _SPACE_KEYS)
            position = store.get_position(db).position
    except sqlite3.DatabaseError:
        return None
    if found != (space.provider, space.model, str(space.dimensions)):
        return None
    return (position.segment, position.offset)
