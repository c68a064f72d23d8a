"""Keeping the test run out of the user's real home.

The run's HOME is a temporary folder (``conftest.py``), so whatever resolves
``~`` (Claude Code's ``~/.claude``, memlog's default home and cache, ``memlog
setup``'s settings) lands there, in this process and in every process it
starts.  What a path written out in full could still reach is watched two
ways, and either fails the run loudly:

* in this process, an audit hook refuses any write (open for writing, mkdir,
  rename, remove, link, SQLite) under the real ``~/.claude``, ``~/.claude.json``
  or ``~/.cache/memlog`` before it happens, and the test that tried fails even
  when the code under test swallowed the error;
* at the end of the run, the real ``~/.claude`` and memlog's default home
  ``~/.claude/iflow/memory`` must not exist if they did not at its start.

Claude Code itself may be writing the real ``~/.claude`` while the suite runs
(a developer running it from a session), so what already exists there is not
compared: only what this process does, and what nobody but the run would make.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

#: the user's real home, read when the run starts (before HOME is moved)
REAL_HOME = Path(os.path.expanduser("~"))
#: what no test may write, in this process
GUARDED = (REAL_HOME / ".claude", REAL_HOME / ".claude.json", REAL_HOME / ".cache" / "memlog")
#: what the run must not create, whatever process would
NOT_CREATED = (REAL_HOME / ".claude", REAL_HOME / ".claude" / "iflow" / "memory")
#: the real caches the tests keep on purpose: the npm CLI, pipx and uv (``claude_code.py``)
TEST_CACHE = REAL_HOME / ".cache" / "memlog-tests"

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
#: audit events that change the file system, and which of their arguments are paths
_CHANGES = {
    "os.mkdir": (0,), "os.rename": (0, 1), "os.remove": (0,), "os.rmdir": (0,),
    "os.symlink": (1,), "os.link": (1,), "os.truncate": (0,), "os.chmod": (0,),
    "os.utime": (0,), "shutil.rmtree": (0,), "sqlite3.connect": (0,),
}  # fmt: skip
_ROOTS = tuple(str(p) for p in GUARDED)
#: every refused write of the run, in order (the code under test may swallow the error)
touched: list[str] = []
_state = {"on": False}


class RealHomeTouched(RuntimeError):
    """A test tried to write into the user's real home."""


def guarded(path: Any) -> bool:
    """Whether ``path`` (a str, bytes or path-like; not a descriptor) is under ``GUARDED``."""
    if isinstance(path, int) or path is None:
        return False
    try:
        text = os.path.abspath(os.fsdecode(path))
    except (TypeError, ValueError):
        return False
    return any(text == root or text.startswith(root + os.sep) for root in _ROOTS)


def opens_to_write(mode: str | None, flags: int) -> bool:
    """Whether an ``open`` audit event's mode or flags write (or make) the file."""
    return bool(flags & _WRITE_FLAGS) or any(c in (mode or "") for c in "wax+")


def _written(event: str, args: tuple[Any, ...]) -> list[Any]:
    """The paths ``event`` writes (none for a read)."""
    if event == "open":
        path, mode, flags = args
        return [path] if opens_to_write(mode, flags) else []
    return [args[i] for i in _CHANGES.get(event, ()) if i < len(args)]


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if not _state["on"] or (event != "open" and event not in _CHANGES):
        return
    for path in _written(event, args):
        if guarded(path):
            touched.append(f"{event} {os.fsdecode(path)}")
            raise RealHomeTouched(f"a test tried to write into the real home: {touched[-1]}")


def watch() -> None:
    """Refuse writes under ``GUARDED`` from now on (the hook is added once per process)."""
    if not _state.get("added"):
        sys.addaudithook(_audit)
        _state["added"] = True
    _state["on"] = True


def unwatch() -> None:
    _state["on"] = False


def watching() -> bool:
    return _state["on"]


def created(before: dict[Path, bool]) -> list[Path]:
    """What of ``NOT_CREATED`` exists now and did not in ``before``."""
    return [p for p in NOT_CREATED if p.exists() and not before[p]]
