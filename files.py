"""Writing files so that a crash leaves either the old bytes or the new ones, and no link
leads a write out of the home.

Every file memlog writes is opened without following a link (``O_NOFOLLOW``):
a link found where memlog writes is refused in one line naming it
(``refuse_link``), never followed.  ``no_links`` checks the folders between
the home and a file the same way.  Temporary files get unpredictable names,
made with ``O_EXCL`` (``temp_name``), and carry the writer's pid so the next
start can sweep those a killed writer left (``sweep_temps``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import time
from pathlib import Path
from typing import BinaryIO

from memlog.errors import HomeError, LinkRefused

#: what every open for writing adds: never through a link, never inherited
NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC
_TEMP_SUFFIX = ".tmp"
#: a temporary file whose writer's pid is still alive is swept once it is this old anyway
TEMP_STALE_SECONDS = 24 * 3600


def refuse_link(path: Path | str) -> HomeError:
    """The error for a link found where memlog writes (raise it).  The advice differs for
    the log (``events/``, its folders and files), the one thing memlog cannot make again:
    a link there may lead to the user's own log, moved elsewhere."""
    in_log = "events" in Path(path).parts[-3:]
    advice = (
        "if it leads to this log's own file, move that file back in its place: memlog "
        "cannot make the log again; else remove it"
        if in_log
        else "remove it, and memlog makes the file again"
    )
    return LinkRefused(
        f"{path} is a symbolic link; memlog follows no link inside its home ({advice})"
    )


def is_link(path: Path | str) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(path).st_mode)
    except OSError:
        return False


def no_links(path: Path, within: os.PathLike[str]) -> Path:
    """``path``, once neither it nor any folder between ``within`` (the home) and it is a
    link (what does not exist yet is made by memlog); ``within`` itself may be one."""
    root = Path(within)
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        parts = (path.name,)
        root = path.parent
    current = root
    for part in parts:
        current = current / part
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            break
        if stat.S_ISLNK(mode):
            raise refuse_link(current)
    return path


def private_dir(path: Path, root: os.PathLike[str]) -> Path:
    """``path`` made (mode 0700, parents too) under ``root``, with no link on the way."""
    no_links(path, root)
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return no_links(path, root)


def open_private(path: Path | str, flags: int, mode: int = 0o600) -> int:
    """``os.open`` that never follows a link at ``path`` (refused: ``refuse_link``)."""
    try:
        return os.open(path, flags | NOFOLLOW, mode)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK, errno.EEXIST) and is_link(path):
            raise refuse_link(path) from None
        raise


def read_only(path: Path | str) -> BinaryIO:
    """``path`` opened for reading, never through a link (refused: ``refuse_link``): what
    memlog reads in its home it also writes, and a link there would lead a read out of it
    (the log of another home, a file a writer would never have followed)."""
    return os.fdopen(open_private(path, os.O_RDONLY), "rb")


def append_private(path: Path | str, data: bytes, sync: bool = False) -> None:
    """Append ``data`` to ``path`` (created 0600), never through a link."""
    fd = open_private(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        write_all(fd, data)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def temp_name(path: Path) -> Path:
    """An unpredictable name beside ``path`` for a file about to replace it: the writer's
    pid, so a sweep knows when it is gone, and random bytes, so no one can guess it."""
    return path.with_name(f".{path.name}.{os.getpid()}-{os.urandom(6).hex()}{_TEMP_SUFFIX}")


def temp_pid(name: str) -> int | None:
    """The pid of the writer of a temporary file named by ``temp_name`` (None: not one)."""
    if not (name.startswith(".") and name.endswith(_TEMP_SUFFIX)):
        return None
    stem = name[: -len(_TEMP_SUFFIX)].rsplit(".", 1)[-1]
    pid, _, rest = stem.partition("-")
    return int(pid) if pid.isdigit() and (not rest or rest.isalnum()) else None


def sweep_temps(folder: Path, now: float | None = None) -> list[Path]:
    """Remove the temporary files a killed writer left in ``folder``; those removed."""
    removed = []
    moment = time.time() if now is None else now
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    for entry in entries:
        pid = temp_pid(entry.name)
        if pid is None or not entry.is_file(follow_symlinks=False) and not entry.is_symlink():
            continue
        with contextlib.suppress(OSError):
            old = moment - entry.stat(follow_symlinks=False).st_mtime > TEMP_STALE_SECONDS
            if old or not alive(pid):
                os.unlink(entry.path)
                removed.append(Path(entry.path))
    return removed


#: below this many free bytes, a disk is taken for full (an I/O error there: no room)
NEARLY_FULL = 1 << 20


def nearly_full(folder: Path) -> bool:
    """Whether the file system of ``folder`` has (almost) no room left."""
    try:
        found = os.statvfs(folder)
    except OSError:
        return False
    return found.f_bavail * found.f_frsize < NEARLY_FULL


def alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (one of another user counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data``; a write that makes no progress is ENOSPC."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        view = view[written:]


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_synced(path: Path, data: bytes, exclusive: bool = False) -> None:
    """Write ``data`` to ``path`` (created 0600, or truncated; ``exclusive``: made new) and
    fsync it; never through a link."""
    create = os.O_EXCL if exclusive else os.O_TRUNC
    fd = open_private(path, os.O_WRONLY | os.O_CREAT | create)
    try:
        write_all(fd, data)
        os.fsync(fd)
    except OSError as exc:
        if exc.filename is None:  # name the file in the one line a user sees
            raise OSError(exc.errno, exc.strerror, str(path)) from None
        raise
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes, root: os.PathLike[str] | None = None) -> None:
    """Write ``data`` to a private temporary file, fsync it, rename it over ``path``
    and fsync the directory (mode 0600, parents created 0700).

    ``root``: the home ``path`` is in; then neither ``path`` nor a folder between
    them may be a link (refused, never replaced or followed).
    """
    if root is not None:
        private_dir(path.parent, root)
        if is_link(path):
            raise refuse_link(path)
    else:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = temp_name(path)
    try:
        write_synced(tmp, data, exclusive=True)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)
