"""Waiting for another writer of the log: how long, what to say, when to give up."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from memlog.errors import LogBusy

#: how long a writer waits for another holding the log (``memory_lock_wait_seconds``)
DEFAULT_WAIT = 60.0
_NOTICES: list[Callable[[str], None]] = []


def default_wait() -> float:
    """``MEMLOG_LOCK_WAIT_SECONDS``, else ``DEFAULT_WAIT``."""
    value = os.environ.get("MEMLOG_LOCK_WAIT_SECONDS", "").strip()
    return float(value) if value.isdigit() else DEFAULT_WAIT


def on_lock_wait(notice: Callable[[str], None]) -> None:
    """Have ``notice`` told, once a writer has waited two seconds for the log, who holds it,
    and what else a writer has to say as it writes (``tell``: the command line prints it;
    hooks and servers stay silent)."""
    _NOTICES.append(notice)


def notice(holder: str) -> None:
    tell(f"waiting for the log: {holder} holds its lock")


def tell(message: str) -> None:
    """Say ``message`` to whoever listens (``on_lock_wait``)."""
    for told in _NOTICES:
        told(message)


def busy(events_dir: Path, wait: float) -> Callable[[str], Exception]:
    """The error for a log whose lock ``holder`` kept past ``wait`` seconds."""

    def said(holder: str) -> Exception:
        waited = f"for {wait:g} s" if wait else "now"
        return LogBusy(
            f"the log {events_dir} is locked by {holder} {waited}: nothing was written "
            "(memory_lock_wait_seconds sets how long to wait)"
        )

    return said
