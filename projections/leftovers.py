"""What a killed process leaves in the home, swept by the next one; disk failures named.

A writer killed mid-write leaves its temporary file (``.<name>.<pid>-<random>
.tmp``, see ``files.temp_name``), and a rebuild killed or failed leaves its
aside database (``.memory.db.rebuild-<pid>-…``), the size of the view: on a
nearly full disk that alone keeps every later command failing.  ``sweep``
removes those of processes that are gone (or older than a day), in every
folder memlog writes.  ``failure`` turns a write that ran out of room (or met
the process's file size limit, or a disk error) into one line naming the
cause and the file, and saying that nothing was lost: the log holds every
event, and the views are rebuilt from it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
from pathlib import Path

from memlog.errors import ViewError
from memlog.files import alive, nearly_full, open_private, sweep_temps
from memlog.home import Home
from memlog.projections.sqlite_view import store
from memlog.projections.sqlite_view.damage import is_corrupt

#: SQLite's primary result codes for a full disk and an I/O error
_SQLITE_FULL, _SQLITE_IOERR = 13, 10
_AFTER_DISK = (
    "nothing was lost: the log holds every event (run the command again once the disk has room)"
)


def sweep(home: Home) -> list[Path]:
    """Remove the temporary files and aside databases of processes that are gone."""
    removed = [p for folder in _folders(home) for p in sweep_temps(folder)]
    return removed + remove_stale_asides(home)


def remove_stale_asides(folder: Home) -> list[Path]:
    """Aside databases (and their ``-wal``, ``-shm``) of rebuilds whose process is gone."""
    removed = []
    prefix = folder.db_aside("").name
    for path in folder.found(folder.db_aside("*")):
        pid = path.name.removeprefix(prefix).split("-", 1)[0]
        if pid.isdigit() and not alive(int(pid)):
            with contextlib.suppress(OSError):  # gone already, or a home only read
                path.unlink()
                removed.append(path)
    return removed


def _folders(home: Home) -> list[Path]:
    """Every folder memlog writes files in (the markdown view's: every real folder under
    its projects, never through a link)."""
    markdown = [Path(folder) for folder, _, _ in os.walk(home.projects)]
    return home.folders() + markdown


def failure(exc: BaseException, path: Path) -> ViewError | None:
    """One line for a write of ``path`` that met a full disk, the process's file size limit
    or a disk error, naming the cause (None for any other failure)."""
    if isinstance(exc, sqlite3.Error):
        code = (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF
        full = code == _SQLITE_FULL or "database or disk is full" in str(exc)
        io = code == _SQLITE_IOERR or "disk I/O error" in str(exc)
        if full or (io and nearly_full(path.parent)):
            return ViewError(f"no space left on device while writing {path.name}; {_AFTER_DISK}")
        if io and size_limit() is not None:  # SQLite says I/O error for EFBIG too
            return _too_large(path.name)
        if io:
            return ViewError(f"disk I/O error while writing {path.name} ({exc}); {_AFTER_DISK}")
        return None
    if isinstance(exc, OSError) and exc.errno == errno.EFBIG:
        return _too_large(Path(exc.filename).name if exc.filename else path.name)
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EIO):
        where = Path(exc.filename).name if exc.filename else path.name
        cause = "no space left on device" if exc.errno != errno.EIO else "disk I/O error"
        return ViewError(f"{cause} while writing {where}; {_AFTER_DISK}")
    return None


def size_limit() -> int | None:
    """The largest file this process may write (``ulimit -f``), None when unlimited."""
    import resource  # (only when a write failed)

    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    return None if soft == resource.RLIM_INFINITY else int(soft)


def _too_large(name: str) -> ViewError:
    limit = size_limit()
    said = f": {limit} bytes" if limit is not None else ""
    return ViewError(
        f"the file size limit (ulimit -f{said}) stopped the write of {name}; nothing was "
        "lost: the log holds every event (run the command again without that limit)"
    )


def new_aside(folder: Home) -> Path:
    """A new, empty file for a database built aside: an unpredictable name (with the pid,
    for ``remove_stale_asides``), made here, so SQLite never opens a file planted there."""
    aside = folder.db_aside(f"{os.getpid()}-{os.urandom(6).hex()}")
    os.close(open_private(aside, os.O_WRONLY | os.O_CREAT | os.O_EXCL))
    return aside


def switch_in(aside: Path, live_path: Path) -> None:
    """Copy the aside database into the live one (readers keep their snapshot); a live one
    SQLite calls malformed, which no reader can be using, is replaced by it."""
    try:
        _backup_into(aside, live_path)
    except sqlite3.DatabaseError as exc:
        if not is_corrupt(exc):
            said = failure(exc, live_path)
            raise said or ViewError(f"cannot replace {live_path}: {exc}") from None
        remove_db_files(live_path)
        os.replace(aside, live_path)


def _backup_into(aside: Path, live_path: Path) -> None:
    source = sqlite3.connect(aside)
    try:
        with store.opened(live_path) as live:
            source.backup(live)
    finally:
        source.close()


def remove_db_files(path: Path) -> None:
    """A database and the files SQLite keeps beside it."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{path}{suffix}")
