"""CLAUDE.md's branch memory block follows the branch checked out.

Claude Code reads CLAUDE.md as it is on disk when a session starts, before any hook
runs, and a checkout leaves a file git does not track (and changes to one it does)
where it was: a block written on a feature branch would reach every session on main.
So ``memlog claude-md --write`` also installs a git ``post-checkout`` hook, in the
folder git runs the repository's hooks from (its worktrees share it), which runs
``memlog claude-md --checked-out`` after each branch checkout: the block is written
anew for the branch now checked out, taken out when that branch has no memory, and a
CLAUDE.md that then holds nothing else is removed.

A post-checkout hook of the user's own, or hooks kept elsewhere (``core.hooksPath``:
a project's tracked hooks folder, or one shared by every repository), is never
changed: writing is refused with the line to add to it, unless it already runs it.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path

from memlog.errors import InvalidInput
from memlog.files import atomic_write
from memlog.git import hooks_folder
from memlog.untrusted import Refused, read_text

HOOK = "post-checkout"
#: the most of a post-checkout hook read (a script of someone's; memlog's is a few lines)
MAX_HOOK_BYTES = 1 << 20
#: what the hook runs, after ``memlog``
COMMAND = "claude-md --checked-out"
#: the line that says a hook is memlog's own (memlog rewrites only those)
MARK = "# memlog: keep CLAUDE.md's branch memory block to the branch checked out"


def command(env: Mapping[str, str] = os.environ) -> str:
    """The shell line that runs ``memlog claude-md --checked-out`` with this memlog (the
    interpreter it runs in) and this home (``MEMLOG_HOME``, when set)."""
    home = env.get("MEMLOG_HOME", "").strip()
    pinned = f"MEMLOG_HOME={shlex.quote(home)} " if home else ""
    return f"{pinned}{shlex.quote(sys.executable)} -m memlog {COMMAND}"


def script(env: Mapping[str, str] = os.environ) -> str:
    return (
        f"#!/bin/sh\n{MARK}\n"
        "# (written by `memlog claude-md --write`; delete this file to stop it)\n"
        '[ "$3" = 1 ] || exit 0  # a branch checkout, not a file\'s\n'
        f"{command(env)} >/dev/null 2>&1 || true\n"
    )


def follow(root: Path, env: Mapping[str, str] = os.environ) -> str:
    """Make the branch memory block of ``root``'s CLAUDE.md follow checkouts; what was
    done, in words ("" when nothing needed doing).  Raises ``InvalidInput`` when it
    cannot be done without changing hooks that are not memlog's."""
    folder = hooks_folder(root)
    if folder is None:
        return ""  # no repository (a branch given by name): no checkout to follow
    path = folder / HOOK
    try:
        current: str | None = read_text(path, MAX_HOOK_BYTES)  # a FIFO never blocks it
    except FileNotFoundError:
        current = None
    except (Refused, OSError) as exc:
        raise _refused(path, f"cannot be read ({exc})", env) from None
    if current is not None and MARK not in current:
        if COMMAND in current:
            return ""  # a hook of the user's own that runs it: theirs to keep
        raise _refused(path, "is a post-checkout hook of your own", env)
    if current is None and ".git" not in folder.parts:
        raise _refused(path, "is where core.hooksPath keeps this repository's hooks", env)
    wanted = script(env)
    if current == wanted:
        return ""
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write(path, wanted.encode("utf-8"))
    path.chmod(0o755)
    verb = "installed" if current is None else "updated"
    return f"{path}: post-checkout hook {verb}: the block follows the branch checked out"


def _refused(path: Path, why: str, env: Mapping[str, str]) -> InvalidInput:
    return InvalidInput(
        f"CLAUDE.md not written: {path} {why}, so the block would stay after a checkout and "
        f"this branch's lessons would reach other branches; add this line to that hook and "
        f'run again: [ "$3" = 1 ] && {command(env)} || true'
    )
