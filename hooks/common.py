"""What every hook shares, below them all: its input, its error log, its time margin and
the workspace of its folder.

A hook reads its JSON from stdin (``read_payload``: missing, late or invalid
is an empty payload) and never fails where Claude Code would see it: what
goes wrong is appended to ``hook-errors.log`` in the memlog home
(``log_error``), which ``memlog stats`` reports.
"""

from __future__ import annotations

import json
import os
import select
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlog.errors import MemlogError
from memlog.eventlog.snapshot import is_snapshot
from memlog.files import append_private
from memlog.home import Home

if TYPE_CHECKING:
    from memlog.workspace import Workspace

#: time kept back from the budget for printing and leaving
MARGIN = 0.15
STDIN_WAIT = 0.2
#: past this size the error log becomes ``hook-errors.log.1`` (one older generation kept):
#: whatever keeps failing, the two never hold more than twice this
HOOK_LOG_MAX = 256 << 10


def read_payload(stream: Any = None) -> dict[str, Any]:
    """The hook's JSON input; an empty dict when it is missing, late or invalid."""
    stream = sys.stdin if stream is None else stream
    try:
        if stream is None or stream.isatty():
            return {}
        ready, _, _ = select.select([stream], [], [], STDIN_WAIT)
        text = stream.read() if ready else ""
        data = json.loads(text) if text.strip() else {}
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def log_error(home: Home, message: str, exc: BaseException | None = None) -> None:
    """Append to the hook's error log (stderr when the home cannot be written)."""
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    import traceback  # (only when something failed)

    detail = "".join(traceback.format_exception(exc)) if exc is not None else ""
    text = f"{stamp} {message}\n{detail}"
    try:
        if is_snapshot(home):  # a snapshot is read, never written
            raise OSError("a snapshot")
        home.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        _roll(home.hook_errors)
        append_private(home.hook_errors, text.encode("utf-8", "replace"))
    except OSError:
        sys.stderr.write(f"memlog hook: {message}\n")
    except MemlogError as exc:  # a link where the log goes: said, never followed
        sys.stderr.write(f"memlog hook: {exc}; {message}\n")


def _roll(path: Path) -> None:
    try:
        if os.lstat(path).st_size >= HOOK_LOG_MAX:
            os.replace(path, path.with_name(path.name + ".1"))
    except FileNotFoundError:
        pass


def workspace(cwd: str, home: Home) -> Workspace:
    """The workspace of the hook's folder (none when the folder is gone)."""
    from memlog.workspace import Workspace

    folder = Path(cwd)
    return Workspace.open(folder, home=home) if folder.is_dir() else Workspace.at(None, home=home)
