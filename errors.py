"""Every error the memlog library raises, and the one line a user sees for any failure.

The library raises these; the interfaces (the CLI, the MCP server) turn
whatever reached them into one line with ``describe``.  An error nobody
foresaw is a crash: its traceback is kept in ``errors.log`` in the home and
the user sees one line naming that file.
"""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple


class MemlogError(Exception):
    """Base of all memlog errors: a message fit to show a user as one line."""


class InvalidInput(MemlogError):
    """Input that fails validation; nothing was appended."""


class LogWriteError(MemlogError):
    """An append could not be completed; the log was left as it was."""


class LogBusy(LogWriteError):
    """Another process held the log's lock past the wait allowed; nothing was written."""


class LogCorruption(MemlogError):
    """A damaged line was found where a clean log was required."""


class HomeError(MemlogError):
    """The memlog home cannot be created, read or written."""


class LinkRefused(HomeError):
    """A link where memlog reads or writes in its home: refused, never followed (a
    command stops there, reading or writing; a note would go on without the file)."""


class ReadOnlyHome(MemlogError):
    """The home is a snapshot (``memlog replay --to``): it is read, never written."""


class ViewError(MemlogError):
    """A projection could not be built or read."""


class Unfinished(MemlogError):
    """Work that changed something and then stopped: the message says what was done, what
    failed and how to finish (``memlog redact`` exits 3 on it)."""


class EntryNotFound(MemlogError):
    """No entry has the given id."""


class ProviderError(MemlogError):
    """An embedding or keyword provider failed."""


class ProviderUnavailable(ProviderError):
    """A provider cannot be used here (missing key, model or server)."""


class RateLimited(ProviderError):
    """A provider refused for rate or quota; ``retry_after`` in seconds when known."""

    def __init__(self, message: str, retry_after: float | None = None, quota: bool = False):
        super().__init__(message)
        self.retry_after = retry_after
        self.quota = quota


class Described(NamedTuple):
    """A failure as one line, and whether it was the caller's input at fault."""

    message: str
    bad_input: bool = False


def describe(exc: BaseException, log: Path | None = None) -> Described:
    """The one line for ``exc``; a crash's traceback goes to ``log`` (the home's
    ``errors_log``)."""
    if isinstance(exc, InvalidInput):
        return Described(str(exc), bad_input=True)
    if isinstance(exc, MemlogError):
        return Described(str(exc))
    sqlite3 = sys.modules.get("sqlite3")  # only loaded when something used SQLite
    if sqlite3 is not None and isinstance(exc, sqlite3.Error):
        return Described(f"memory.db: {exc}")
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        return Described(f"{where}{exc.strerror or exc}")
    return Described(record_crash(exc, log))


def record_crash(exc: BaseException, path: Path | None) -> str:
    """Keep the traceback in the error log at ``path``; return the line a user sees."""
    line = f"internal error: {type(exc).__name__}: {exc}"
    if path is None:
        return line
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        stamp = datetime.now(UTC).isoformat()
        import traceback  # (only for a crash: the hooks' path stays light)

        text = "".join(traceback.format_exception(exc))
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW  # never through a link
        with open(
            os.open(path, flags, 0o600), "a", encoding="utf-8", errors="backslashreplace"
        ) as f:
            f.write(f"--- {stamp} {' '.join(sys.argv)}\n{text}")
        return f"{line} (details in {path})"
    except OSError:
        return line
