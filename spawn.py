"""Starting memlog work in a detached process that nothing waits for.

Used where the caller has no time to spare (the hook): the child runs in a
session of its own with stdin, stdout and stderr on ``/dev/null``, so it
outlives the caller and never writes into its output.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path


def spawn_memlog(args: Sequence[str], home: Path, env: Mapping[str, str] | None = None) -> int:
    """Start ``python -m memlog ARGS`` detached, for ``home``; return its pid."""
    null = [
        (os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY, 0)
        for fd in (0, 1, 2)
    ]
    environ = {**(os.environ if env is None else env), "MEMLOG_HOME": str(home)}
    return os.posix_spawn(
        sys.executable,
        [sys.executable, "-m", "memlog", *args],
        environ,
        file_actions=null,
        setsid=True,
    )
