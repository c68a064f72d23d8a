"""Whether a project's auto memory changed since memlog last read it: cheap, for the hook.

The session start's hook asks after its output whether the auto memory folder of
its project changed (a digest of its memory files' names, sizes and change
times against the one kept in ``.claude-memory.json`` in the home); only then
is its recorder asked to read it (``claude_memory.at_start``).  Nothing here
loads more than the standard library.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from memlog import claude_files, digests
from memlog.home import Home

#: what the recorder remembers of the folders it read last (a digest of their files'
#: names, sizes and times): an unchanged folder is not read again


def project_folder(cwd: str, env: Mapping[str, str] | None = None) -> tuple[Path, str]:
    """The auto memory folder of the project at ``cwd`` and the project's name (its
    repository's, shared by its worktrees)."""
    return claude_files.memory_folder(cwd, env), Path(claude_files.project_key(cwd)).name


def fingerprint(folder: Path) -> str:
    """A digest of the names, sizes and change times of ``folder``'s memory files."""
    parts = []
    for path in claude_files.memory_files(folder):
        try:
            info = os.stat(path, follow_symlinks=False)
        except OSError:
            continue
        parts.append(f"{path}\t{info.st_size}\t{info.st_mtime_ns}")
    return digests.sha256("\n".join(parts).encode("utf-8", "replace")).hexdigest()


def changed(home: Home, folder: Path) -> str | None:
    """The folder's fingerprint when it differs from the one last recorded (None: the
    same, nothing to read)."""
    now = fingerprint(folder)
    try:
        seen = json.loads(home.native_seen.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        seen = {}
    before = seen.get(str(folder)) if isinstance(seen, dict) else None
    empty = digests.sha256(b"").hexdigest()
    return None if now == before or (before is None and now == empty) else now


def remember(home: Home, folder: Path, print_: str) -> None:
    """Keep ``folder``'s fingerprint as read."""
    from memlog.files import atomic_write

    try:
        seen = json.loads(home.native_seen.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        seen = {}
    seen = {**(seen if isinstance(seen, dict) else {}), str(folder): print_}
    atomic_write(home.native_seen, json.dumps(seen, sort_keys=True).encode())
