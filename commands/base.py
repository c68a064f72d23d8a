"""The little every command needs before anything heavy is imported."""

from __future__ import annotations

import sys
import traceback
from datetime import UTC, datetime

import click

from memlog.home import resolve_home

ERROR_LOG = "errors.log"


class InputError(click.ClickException):
    """Bad input: one line on stderr, exit 2, nothing appended."""

    exit_code = 2


def record_crash(exc: BaseException) -> str:
    """Keep the traceback in the error log; return the one line a user sees."""
    line = f"internal error: {type(exc).__name__}: {exc}"
    try:
        path = resolve_home() / ERROR_LOG
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        stamp = datetime.now(UTC).isoformat()
        text = "".join(traceback.format_exception(exc))
        with open(path, "a", encoding="utf-8", errors="backslashreplace") as handle:
            handle.write(f"--- {stamp} {' '.join(sys.argv)}\n{text}")
        return f"{line} (details in {path})"
    except OSError:
        return line
