"""Where memlog keeps its files: ``$MEMLOG_HOME`` or ``~/.claude/iflow/memory``."""

from __future__ import annotations

import os
from pathlib import Path

from memlog.errors import HomeError

DEFAULT_HOME = Path("~/.claude/iflow/memory")


def resolve_home(env: dict[str, str] | None = None) -> Path:
    """The memlog home named by ``MEMLOG_HOME``, else the default."""
    environ = os.environ if env is None else env
    value = environ.get("MEMLOG_HOME", "").strip()
    return Path(value).expanduser() if value else DEFAULT_HOME.expanduser()


def resolve_cache(env: dict[str, str] | None = None) -> Path:
    """Where memlog keeps caches that are no projection of the log (the local model's
    runtime weights, digests of checked files): ``MEMLOG_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/memlog``, else ``~/.cache/memlog``.  Never the home: deleting every
    file of the home but ``events/`` and replaying must give the same home."""
    environ = os.environ if env is None else env
    value = environ.get("MEMLOG_CACHE_DIR", "").strip()
    if value:
        return Path(value).expanduser()
    base = environ.get("XDG_CACHE_HOME", "").strip() or "~/.cache"
    return Path(base).expanduser() / "memlog"


def ensure_dir(path: Path) -> Path:
    """Create ``path`` (and parents) with mode 0700; raise HomeError when impossible."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise HomeError(f"cannot create {path}: {exc.strerror or exc}") from None
    return path


#: failures of the hook, one stamped line each (``memlog stats`` counts them)
HOOK_ERROR_LOG = "hook-errors.log"


def hook_errors(home: Path) -> dict[str, object]:
    """How many failures the hook logged, and the last one."""
    try:
        text = (home / HOOK_ERROR_LOG).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {"count": 0, "last": ""}
    stamped = [ln for ln in text.splitlines() if ln[:4].isdigit() and "T" in ln[:20]]
    return {"count": len(stamped), "last": stamped[-1] if stamped else ""}
