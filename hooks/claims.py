"""One injection per session start, however many registrations run the hook.

Claude Code runs every SessionStart hook it knows, at the same time: with
the memlog plugin and ``memlog setup``'s entries both present, memlog would
inject its block twice and record two recalls of each entry.  So each run
first claims its start, ``(session id, source, prompt id)``, by creating a
file under ``.hook-claims/`` with ``O_EXCL``: exactly one run wins, and the
others inject nothing.  A claim older than ``CLAIM_SECONDS`` is stale and
taken over, so resuming the same session later injects again; claims older
than a day are swept away.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from memlog import digests
from memlog.errors import MemlogError
from memlog.files import private_dir
from memlog.home import Home
from memlog.hooks.common import log_error

#: a second run within this time of the first is a duplicate registration
CLAIM_SECONDS = 60.0
SWEEP_SECONDS = 86400.0


def claim_key(payload: dict[str, Any]) -> str | None:
    """The name of a start's claim (None when the payload names no session)."""
    session = str(payload.get("session_id") or "")
    if not session:
        return None
    parts = (session, str(payload.get("source") or "startup"), str(payload.get("prompt_id") or ""))
    return digests.sha256("\0".join(parts).encode("utf-8", "replace")).hexdigest()[:32]


def claim(home: Home, payload: dict[str, Any], now: float | None = None) -> bool:
    """Whether this run is the one that injects for its session start."""
    key = claim_key(payload)
    if key is None:
        return True
    folder = home.hook_claims
    try:
        private_dir(folder, home)
        return _claim(folder / key, now)
    except FileExistsError:
        raise
    except OSError:  # a home that cannot be written: nothing can be recorded twice either
        return True
    except MemlogError as exc:  # a link where the claims go: said, never followed
        log_error(home, f"SessionStart: {exc}")
        return True


def _claim(path: Path, now: float | None) -> bool:
    for _ in range(2):
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except FileExistsError:
            if _fresh(path, now):
                return False
            _take_over(path)
            continue
        _sweep(path.parent, now)
        return True
    return False


def _fresh(path: Path, now: float | None) -> bool:
    try:
        made = path.stat().st_mtime
    except FileNotFoundError:
        return False
    return (now if now is not None else time.time()) - made < CLAIM_SECONDS


def _take_over(path: Path) -> None:
    """Move a stale claim aside; of two runs doing so at once, one finds it gone."""
    aside = path.with_name(f"{path.name}.{os.getpid()}.stale")
    try:
        os.rename(path, aside)
        os.unlink(aside)
    except FileNotFoundError:
        pass


def _sweep(folder: Path, now: float | None) -> None:
    limit = (now if now is not None else time.time()) - SWEEP_SECONDS
    for entry in os.scandir(folder):
        try:
            if entry.stat().st_mtime < limit:
                os.unlink(entry.path)
        except OSError:
            continue
