"""Packed files beside ``memory.db``: named by their content, appended in place, swept.

A packed file holds fixed-size rows that readers map into memory (the vector
matrix; any other per-row data can use the same mechanism).  A row of
``memory.db`` points at it: the file name and how many rows it covers.  Four
rules keep every reader consistent without taking a lock to read:

1. **Written before it is named.**  A file (or the rows appended to it) is
   written and fsynced *before* the transaction that points at it commits, so
   a reader that follows the pointer of its own snapshot finds its rows there.
2. **Named by content.**  A new file is called ``<sha256 of its bytes>`` plus
   the kind's suffix, so the same rows always make the same file: two rebuilds
   of one log leave byte-identical homes, and a rebuild that finds its file
   already there (same name, same size) reuses it.
3. **Committed rows never change.**  A catch-up that only adds rows appends
   them after the last row of the file, writing those rows and nothing else,
   and only when the file ends exactly where the committed pointer says (else
   a crash left rows nobody committed, and a new file is written instead).
   The name stays that of the rows the file was created with.
4. **Swept once nothing points at it.**  Writers hold ``.packed.lock`` shared
   from before they write a file until the transaction naming it has
   committed (``preparing``); ``sweep`` takes it exclusively and removes every
   file of a kind that the committed view does not name, so a file on its way
   to being named is never removed.  Unlinking a file a reader has mapped is
   safe on POSIX; a reader that finds its file gone reads the rows of
   ``memory.db`` instead.  Disk use stays that of the live rows.

A new kind needs a suffix, a ``kind``-specific way to name the files its
committed rows point at, and these four calls.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from memlog.files import atomic_write, fsync_dir, open_private, private_dir, write_all
from memlog.projections.sqlite_view import packsums

LOCK_NAME = ".packed.lock"
_TMP_SUFFIX = ".tmp"


def content_name(data: bytes, suffix: str) -> str:
    """The name of a packed file holding ``data``: its sha256 and the kind's suffix."""
    import hashlib  # (OpenSSL: fast for large files; only writers load it)

    return hashlib.sha256(data).hexdigest() + suffix


@contextlib.contextmanager
def preparing(folder: Path) -> Iterator[None]:
    """Hold off sweeps of ``folder`` while files are written and the view names them."""
    with _lock(folder, fcntl.LOCK_SH):
        yield


def write(folder: Path, data: bytes, suffix: str) -> str:
    """Write ``data`` as a new content-named file (reusing an identical one); its name.

    Call inside ``preparing``, before the transaction that names the file.
    """
    name = content_name(data, suffix)
    path = folder / name
    try:
        if path.stat().st_size == len(data) and packsums.full(path) is None:
            if not packsums.sidecar(path).exists():  # written by an earlier version
                packsums.record(path)
            return name  # the same name and size, checked block by block: the same bytes
    except FileNotFoundError:
        pass
    atomic_write(path, data, folder.parent)
    packsums.record(path)
    return name


def append(folder: Path, name: str, size: int, data: bytes) -> bool:
    """Append ``data`` to the file ``name`` if it is exactly ``size`` bytes long now.

    False (nothing written) when the file is missing or another length: the
    caller writes a new file instead.  Call inside ``preparing``.
    """
    try:
        fd = open_private(folder / name, os.O_WRONLY)
    except FileNotFoundError:
        return False
    try:
        if os.fstat(fd).st_size != size:
            return False
        try:
            os.lseek(fd, size, os.SEEK_SET)
            write_all(fd, data)
            os.fsync(fd)
            packsums.record(folder / name, changed_from=size)
        except OSError:
            _truncate_quietly(fd, size)
            raise
        return True
    finally:
        os.close(fd)


def sweep(
    folder: Path,
    suffix: str | tuple[str, ...],
    referenced: Callable[[], set[str]],
    wait: bool = False,
) -> list[str]:
    """Remove the files of ``folder`` ending in ``suffix`` that ``referenced()`` does not name.

    ``referenced`` reads the names the committed view points at; it is called
    once the lock is held, so no file on its way to being named is removed.
    Without ``wait`` a sweep that would wait for a writer is skipped (the next
    one does it).  Returns the names removed.
    """
    names = _names(folder)
    files = [n for n in names if n.endswith(suffix)]
    if len(files) <= 1 and not any(_is_tmp(n) for n in names):
        return []  # the one file left is the one named (a view always names its file)
    flags = fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB)
    try:
        with _lock(folder, flags):
            return _remove_unreferenced(folder, suffix, referenced())
    except BlockingIOError:
        return []


def _remove_unreferenced(folder: Path, suffix: str | tuple[str, ...], keep: set[str]) -> list[str]:
    removed = []
    names = _names(folder)
    for name in names:
        if name.endswith(suffix) and name not in keep:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(folder / name)
            packsums.remove(folder / name)
            removed.append(name)
        elif name.endswith(packsums.SUFFIX) and name[: -len(packsums.SUFFIX)] not in names:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(folder / name)  # the sums of a file gone
        elif _is_tmp(name):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(folder / name)  # left by a writer killed mid-write
    if removed:
        fsync_dir(folder)
    return removed


@contextlib.contextmanager
def _lock(folder: Path, flags: int) -> Iterator[None]:
    private_dir(folder, folder.parent)
    fd = open_private(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, flags)
        yield
    finally:
        os.close(fd)


def _is_tmp(name: str) -> bool:
    return name.startswith(".") and name.endswith(_TMP_SUFFIX)


def _names(folder: Path) -> list[str]:
    try:
        return sorted(os.listdir(folder))
    except FileNotFoundError:
        return []


def _truncate_quietly(fd: int, size: int) -> None:
    with contextlib.suppress(OSError):  # rows past ``size`` are named by nothing: harmless
        os.ftruncate(fd, size)
