"""Starting memlog work in a detached process that nothing waits for.

Used where the caller has no time to spare (the hook): the child runs in a
session of its own with stdout and stderr on ``/dev/null``, so it outlives
the caller and never writes into its output.  Its stdin is ``/dev/null`` too,
or a pipe holding the bytes the caller hands it (at most ``MAX_STDIN``, what
a pipe holds without the caller waiting for the child to read).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

#: the most bytes handed to a child on stdin (a Linux pipe holds 64 KiB unread)
MAX_STDIN = 60_000
#: set, with ``OPENBLAS_NUM_THREADS=1``, by a process that pinned BLAS to one thread
#: before loading numpy (the hook); children get neither
BLAS_PINNED = "MEMLOG_BLAS_PINNED"


def child_environ(env: Mapping[str, str], home: os.PathLike[str]) -> dict[str, str]:
    """A child's environment: ``env`` for ``home``, without the caller's own BLAS pin."""
    environ = {**env, "MEMLOG_HOME": os.fspath(home)}
    if environ.pop(BLAS_PINNED, None) == "1":
        environ.pop("OPENBLAS_NUM_THREADS", None)
    return environ


def spawn_memlog(
    args: Sequence[str],
    home: os.PathLike[str],
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    project: str | Path | None = None,
) -> int:
    """Start ``python -m memlog ARGS`` detached, for ``home`` and (when given) the project
    folder ``project``, whose configuration it then reads; return its pid.  The child
    gets the caller's environment: it opens the workspace the caller works in."""
    if stdin is not None and len(stdin) > MAX_STDIN:
        raise ValueError(f"{len(stdin)} bytes for a child's stdin; at most {MAX_STDIN}")
    actions: list[tuple[int, ...] | tuple[int, int, str, int, int]] = [
        (os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_WRONLY, 0) for fd in (1, 2)
    ]
    read_end = write_end = -1
    if stdin is None:
        actions.append((os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0))
    else:
        read_end, write_end = os.pipe()  # both close on exec; the child's 0 is a copy
        actions.append((os.POSIX_SPAWN_DUP2, read_end, 0))
    environ = child_environ(os.environ if env is None else env, home)
    try:
        pid = os.posix_spawn(
            sys.executable,
            [sys.executable, "-m", "memlog", *_in(project), *args],
            environ,
            file_actions=actions,
            setsid=True,
        )
        if stdin is not None:
            os.write(write_end, stdin)  # fits the pipe: never waits for the child
    finally:
        for fd in (read_end, write_end):
            if fd >= 0:
                os.close(fd)
    return pid


def _in(project: str | Path | None) -> list[str]:
    """The option that starts a child in ``project`` (``memlog --project-dir DIR ...``)."""
    return ["--project-dir", str(project)] if project else []
