"""Checksums of the packed files, kept beside each one: damage found, never ranked on.

A packed file (``index/*.vec``, ``.lex``, ``.lxd``, ``.nbr``, ``.rnk``) is a
projection of the log like ``memory.db``, but SQLite checks its own pages and
nothing checked these: flipped bytes changed scores, made ranking fail, or
left a start with nothing to inject.  Each file now has a sidecar,
``<file>.sums``, that wraps it without touching its layout: the size it was
written to and a CRC-32 of every 64 KiB block of it, written (and synced) by
the writer after the file's bytes and before the transaction that names the
file, so a reader that follows a committed pointer finds sums that cover it.

* ``record`` after a write, a patch or an append: the sums of the blocks it
  wrote (the others are kept).
* ``quick`` when a reader opens a file: its size, and for a whole file
  (``.lex``, ``.lxd``) the first and last block of what the sums cover,
  ~0.1 ms whatever the file's size, so a start never hashes a whole file;
  the sidecar is read before the file, so a file grown by an append
  meanwhile still checks out.  A slot file (``.rnk``, ``.vec``, ``.nbr``) is
  patched in place by catch-ups, its bytes before its sums: a start checks
  only its structure (its size here, its header in ``index_files.slots``,
  ``note``), never its blocks, so a patch under way is never taken for
  damage and a start never waits on one for long.  A size that fails is
  checked again once no patch is under way (``patching``), with the sums
  read again.
* ``full`` for ``memlog verify``: every block, under the view's write lock
  and ``.packed.lock``, where no patch runs.

Files written before the sums were kept have no sidecar: they pass ``quick``
(nothing is known against them) and ``full`` names them (``memlog replay``
writes them again, with sums).  Any damage found is also noted (``noticed``)
for the hook's error log.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import struct
import time
import zlib
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from pathlib import Path

from memlog.files import atomic_write, open_private, private_dir
from memlog.home import Home
from memlog.locking import locked
from memlog.projections.sqlite_view import damage

SUFFIX = ".sums"
BLOCK = 1 << 16
#: held exclusively while records are patched in place (``patching``)
PATCH_LOCK = ".patch.lock"
#: how long a reader that found a block failing waits for a patch to finish
PATCH_WAIT_S = 1.0
#: the slot files, patched in place: ``quick`` checks their structure only
PATCHED = (".rnk", ".vec", ".nbr")
_MAGIC = b"MLSUMS01"
_HEAD = struct.Struct("<8sIQ")  # magic, block size, the size the sums cover
_noticed: list[str] = []
_REFUSED: ContextVar[bool] = ContextVar("memlog_packed_refused", default=False)


def sidecar(path: Path) -> Path:
    return path.with_name(path.name + SUFFIX)


def record(
    path: Path, changed_from: int = 0, changed: Iterable[tuple[int, int]] | None = None
) -> None:
    """Sum ``path`` as it is now: again from byte ``changed_from`` on, or, given the byte
    ranges ``changed`` (start, end) a patch wrote, only their blocks and those past the
    size the sidecar covered (the other blocks are kept from its sidecar when that covers
    them); write the sidecar, synced."""
    kept = _read(path)
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        count = (size + BLOCK - 1) // BLOCK
        redo = _blocks_to_sum(kept, size, count, changed_from, changed)
        sums = list(kept[1][:count]) if kept is not None else []
        sums += [0] * (count - len(sums))
        for block in redo:
            sums[block] = zlib.crc32(os.pread(handle.fileno(), BLOCK, block * BLOCK))
    body = _HEAD.pack(_MAGIC, BLOCK, size) + struct.pack(f"<{len(sums)}I", *sums)
    atomic_write(sidecar(path), body, path.parent.parent)


def _blocks_to_sum(
    kept: tuple[int, tuple[int, ...]] | None,
    size: int,
    count: int,
    changed_from: int,
    changed: Iterable[tuple[int, int]] | None,
) -> Iterable[int]:
    """The blocks whose sums must be made again."""
    if kept is None or (changed is None and changed_from <= 0):
        return range(count)
    covered = min(kept[0], size)  # a block past it, or holding its end, changed in length
    first = (covered // BLOCK) if changed is not None else min(changed_from, covered) // BLOCK
    redo = set(range(first, count))
    for start, end in changed or ():
        redo.update(range(start // BLOCK, min((max(end, start + 1) - 1) // BLOCK + 1, count)))
    return sorted(redo)


@contextlib.contextmanager
def refused() -> Iterator[None]:
    """Inside, every packed file is refused (``quick``): readers use the rows instead.
    For a ranking that failed on a packed file whose damage ``quick`` could not see."""
    token = _REFUSED.set(True)
    try:
        yield
    finally:
        _REFUSED.reset(token)


def quick(home: Home, path: Path) -> str | None:
    """Why ``path`` cannot be read as it was written (None when it can, or nothing is known
    against it): its size, and for a whole file the first and last block its sums cover."""
    if _REFUSED.get():
        return "refused: ranking from the rows"
    reason = _quick(path)
    if reason is None:
        return None
    with _no_patch(path.parent) as waited:  # its bytes may be ahead of its sums
        if waited:
            reason = _quick(path)
    return note(home, path, reason) if reason is not None else None


def _quick(path: Path) -> str | None:
    kept = _read(path)  # before the file: an append after it only adds bytes past its size
    if kept is None:
        return None if not sidecar(path).exists() else "unreadable sums"
    size, sums = kept
    try:
        with open(path, "rb") as handle:
            if os.fstat(handle.fileno()).st_size < size:
                return f"shorter than the {size} bytes it was written with"
            if path.suffix in PATCHED:
                return None  # its records change under a catch-up: ``full`` checks them
            blocks = sorted({0, len(sums) - 1}) if sums else []
            return _check(handle.fileno(), size, sums, blocks)
    except FileNotFoundError:
        return None  # swept: the reader goes without it


@contextlib.contextmanager
def patching(folder: Path) -> Iterator[None]:
    """Held by a writer from the first byte of a patch to its sums (``quick``)."""
    with locked(private_dir(folder, folder.parent) / PATCH_LOCK):
        yield


@contextlib.contextmanager
def _no_patch(folder: Path) -> Iterator[bool]:
    """No patch under way in ``folder`` inside (True), or none could be waited for within
    ``PATCH_WAIT_S`` (False: what was found stands)."""
    try:
        fd = open_private(folder / PATCH_LOCK, os.O_RDONLY)
    except OSError:  # never patched (or not readable): nothing to wait for
        yield False
        return
    try:
        yield _shared(fd, time.monotonic() + PATCH_WAIT_S)
    finally:
        os.close(fd)


def _shared(fd: int, deadline: float) -> bool:
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.005)


def full(path: Path) -> str | None:
    """Why ``path`` is not the file its sums were made of, checking every block (None when
    it is).  A file without sums is checked against its name when that is its content's
    sha256 (a whole file written by an earlier version), else taken as it is."""
    kept = _read(path)
    if kept is None:
        return _against_name(path) if not sidecar(path).exists() else "unreadable sums"
    size, sums = kept
    try:
        with open(path, "rb") as handle:
            if os.fstat(handle.fileno()).st_size < size:
                return f"shorter than the {size} bytes it was written with"
            return _check(handle.fileno(), size, sums, range(len(sums)))
    except FileNotFoundError:
        return "missing"


def _against_name(path: Path) -> str | None:
    stem = path.name.split(".", 1)[0]
    if len(stem) != 64 or not all(c in "0123456789abcdef" for c in stem):
        return None  # not named by its content: nothing to check it against
    import hashlib  # (only for verify, on a file of an earlier version)

    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return "missing"
    return None if digest == stem else "its bytes no longer hash to its name"


def noticed() -> list[str]:
    """The damage ``quick`` found in this process since it was last asked (then forgotten)."""
    found, _noticed[:] = list(_noticed), []
    return found


def remove(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        sidecar(path).unlink()


def _check(fd: int, size: int, sums: tuple[int, ...], blocks: Iterable[int]) -> str | None:
    for block in blocks:
        length = min(BLOCK, size - block * BLOCK)
        if zlib.crc32(os.pread(fd, length, block * BLOCK)) != sums[block]:
            return f"block {block + 1} of {len(sums)} fails its checksum"
    return None


def note(home: Home, path: Path, reason: str) -> str:
    """Note damage a reader found in ``path`` (``noticed``), and in the home, for the next
    catch-up to rebuild the views (``damage``); the reason."""
    said = f"{path.parent.name}/{path.name}: {reason}"
    _noticed.append(said)
    if not _REFUSED.get():
        damage.mark(home, said)
    return reason


def _read(path: Path) -> tuple[int, tuple[int, ...]] | None:
    """The size and block sums kept for ``path`` (None when there are none, or unreadable)."""
    try:
        data = sidecar(path).read_bytes()
    except OSError:
        return None
    if len(data) < _HEAD.size:
        return None
    magic, block, size = _HEAD.unpack_from(data)
    count = (len(data) - _HEAD.size) // 4
    if magic != _MAGIC or block != BLOCK or count != (size + BLOCK - 1) // BLOCK:
        return None
    return size, struct.unpack_from(f"<{count}I", data, _HEAD.size)
