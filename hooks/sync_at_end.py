"""At the end of a Claude Code session: start ``memlog sync`` detached, when it may apply.

The SessionEnd hook (``hooks/sessions.py``) calls ``start_sync`` after it has
recorded the session.  Like extraction, the decision that needs the
project's configuration is left to the detached process (``memlog sync
--at-session-end`` syncs only when ``memory_sync_at_session_end`` is on), so
this path reads no configuration: it only looks whether the home was ever
set up for sync, and starts nothing otherwise.
"""

from __future__ import annotations

from memlog.home import Home


def start_sync(home: Home, cwd: str) -> bool:
    """Start ``memlog sync --at-session-end`` detached, for the project at ``cwd``, if
    sync is set up; whether it was started."""
    if not (home.sync_repo / "HEAD").is_file():  # ``sync.repo.set_up``, without subprocess
        return False
    from memlog.spawn import spawn_memlog

    spawn_memlog(["sync", "--at-session-end", "--project-dir", cwd or "."], home)
    return True
