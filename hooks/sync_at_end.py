"""At the end of a Claude Code session: start ``memlog sync`` detached, when it may apply.

The SessionEnd hook (``hooks/sessions.py``) calls ``start_sync`` after it has
recorded the session.  Like extraction, the decision that needs the
project's configuration is left to the detached process (``memlog sync
--at-session-end`` syncs only when ``memory_sync_at_session_end`` is on), so
this path reads no configuration: it only looks whether the home was ever
set up for sync, and starts nothing otherwise.
"""

from __future__ import annotations

from pathlib import Path

from memlog.home import Home

#: what ``memlog sync --init`` leaves in the home (``sync/repo.py``)
SYNC_REPOSITORY = Path("sync.git") / "HEAD"  # ``sync.repo.set_up``, without loading subprocess


def start_sync(home: Home, cwd: str) -> bool:
    """Start ``memlog sync --at-session-end`` detached, for the project at ``cwd``, if
    sync is set up; whether it was started."""
    if not (home / SYNC_REPOSITORY).is_file():
        return False
    from memlog.spawn import spawn_memlog

    spawn_memlog(["sync", "--at-session-end", "--project-dir", cwd or "."], home)
    return True
