"""At the end of a Claude Code session: start ``memlog sync`` detached, when configured.

``memory_sync_at_session_end: true`` in the project's configuration (or
``MEMLOG_SYNC_AT_SESSION_END=true``) and a home set up with ``memlog sync
--init`` are both needed.  The hook itself only starts the process and
returns: it never waits on the network and never fails the session; what
goes wrong is logged to the hook error log.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memlog.home import resolve_home
from memlog.hooks.session_start import log_error, read_payload


def after_session(payload: dict[str, Any], home: Path) -> bool:
    """Start the sync if configured; whether it was started."""
    from memlog.api.syncing import sync_after_session
    from memlog.workspace import Workspace

    cwd = payload.get("cwd")
    where = Path(cwd) if isinstance(cwd, str) and cwd else None
    return sync_after_session(Workspace.open(where, home=home))


def main() -> None:
    home = resolve_home()
    try:
        after_session(read_payload(), home)
    except Exception as exc:  # noqa: BLE001 - a hook never breaks the session
        log_error(home, f"session-end sync not started: {exc}", exc)
