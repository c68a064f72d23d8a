"""Packed files beside ``memory.db``: one row per entry, patched in place, swept.

Every live entry is ranked on every start, and reading what ranking needs
row by row out of SQLite costs more than the rest of the ranking; so the
projection keeps it packed in files readers map into memory.  Each entry has
a **slot**, its place in the order the log created the entries (``slot`` in
``entries``), and a slot file holds one fixed-size record per slot, in slot
order, after a 32-byte header:

    magic   8 bytes, the kind and its format version
    record  uint32: bytes per record
    flags   uint32: 0 (reserved)
    extra   uint64: what the kind needs to read its records (e.g. dimensions)
    spare   uint64: 0 (reserved, e.g. for the size of checksummed blocks)

So a catch-up writes what its events changed and nothing else: the records
of the entries they touched, rewritten where they are, and the records of
new entries, appended.  A rebuild writes the same bytes from zero: the file
is a function of the log, and the record of an entry depends on that entry
(and, for the neighbour lists, on the vectors), never on how the file was
brought there.  The rules that keep readers consistent without a lock:

1. **Written before it is named.**  A file and its changes are written and
   fsynced *before* the transaction that records them commits (``packed_sets``
   holds the file and how many records it covers); readers read only the
   records their snapshot covers.
2. **Named by generation.**  A file is called by the ordinal of the log event
   it was first written for (``000000030000.rnk``), so two rebuilds of the
   same log make the same names and bytes; a rebuild that finds its name taken
   replaces the file atomically (a reader keeps the file it mapped).
3. **Patched under the view's write lock.**  Records change only inside the
   catch-up's write transaction, by whole aligned records; a record past the
   committed count that a crash left behind is cut before anything is written.
   A reader may see a record of a transaction that is about to commit (or that
   a crash cut short: the next catch-up writes it again, from the same
   events); readers treat what records hold as hints (a neighbour past their
   count is no neighbour).
4. **Undone when not committed.**  Before a patch overwrites records the committed
   view covers, it writes their old bytes to ``.undo`` (``Undo``), synced; the
   transaction removes it once it committed.  A writer killed in between leaves
   records the committed view does not hold (a later catch-up would take them for
   what the view held: a vector it has, a neighbour list it made): the next
   writer, holding the view's write lock, finds the undo journal of a transaction
   that never committed (the view's position is still the one it started from)
   and puts the old bytes back before it reads a record.
5. **Checked.**  Beside each file, ``<file>.sums`` (``packsums``) holds a CRC-32
   of each 64 KiB block, recorded after every write and patch (a patch sums
   again only the blocks it wrote), so a reader sees damage before it ranks.
6. **Swept once nothing points at it.**  Writers hold ``.packed.lock`` shared
   from before they write a file until the transaction naming it has
   committed (``preparing``); ``sweep`` takes it exclusively and removes every
   file of a kind that the committed view does not name.  Unlinking a file a
   reader has mapped is safe on POSIX; a reader that finds its file gone ranks
   without what it holds.

Whole files (the lexical index's base and delta, see ``lexicon``) follow the
same rules, written once and never patched.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import struct
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from pathlib import Path

import msgspec

from memlog.files import atomic_write, fsync_dir, open_private, private_dir, write_all
from memlog.projections.sqlite_view import packsums

LOCK_NAME = ".packed.lock"
#: the old bytes of the records the write transaction under way patched (``Undo``)
UNDO_NAME = ".undo"
_TMP_SUFFIX = ".tmp"
#: magic, record size, flags, extra, spare
HEADER = struct.Struct("<8sIIQQ")


def generation_name(ordinal: int, suffix: str) -> str:
    """The name of a file first written for the log event ``ordinal``."""
    return f"{ordinal:012d}{suffix}"


def header(magic: bytes, record: int, extra: int = 0) -> bytes:
    return HEADER.pack(magic, record, 0, extra, 0)


@contextlib.contextmanager
def preparing(folder: Path) -> Iterator[None]:
    """Hold off sweeps of ``folder`` while files are written and the view names them."""
    with _lock(folder, fcntl.LOCK_SH):
        yield


def write(folder: Path, name: str, data: bytes) -> str:
    """Write ``data`` as the whole file ``name`` (atomically; an older file of that
    name is replaced, a reader keeps the one it mapped); its name.

    Call inside ``preparing``, before the transaction that names the file.
    """
    with packsums.patching(folder):  # a file of that name replaced: its sums follow
        atomic_write(folder / name, data, folder.parent)
        packsums.record(folder / name)
    return name


def patch(
    folder: Path,
    name: str,
    record: int,
    committed: int,
    records: Iterable[tuple[int, bytes]],
) -> bool:
    """Write ``records`` (slot, bytes of one record) into the slot file ``name``, whose
    first ``committed`` records the committed view covers; slots past them must follow
    on from ``committed`` without a gap.  False (nothing written) when the file is
    missing or shorter than the committed records: the caller writes it anew.

    Call inside ``preparing`` and inside the transaction that records the new count.
    """
    try:
        fd = open_private(folder / name, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        end = HEADER.size + committed * record
        if os.fstat(fd).st_size < end:
            return False
        records = sorted(records)
        keep_undo(folder / name, fd, end, record, records)
        with packsums.patching(folder):  # its bytes are ahead of its sums meanwhile
            written = _patch(fd, end, record, records)
            packsums.record(folder / name, changed=written)
        return True
    finally:
        os.close(fd)


def _patch(
    fd: int, end: int, record: int, records: Iterable[tuple[int, bytes]]
) -> list[tuple[int, int]]:
    """Cut what a crash left past ``end``, write ``records``, sync; the byte ranges written
    (on failure, the file is cut back to ``end``)."""
    os.ftruncate(fd, end)  # records a crash left past the committed ones
    written = []
    try:
        for offset, data in _runs(records, record):
            at = HEADER.size + offset * record
            _write_at(fd, data, at)
            written.append((at, at + len(data)))
        os.fsync(fd)
    except OSError:
        _truncate_quietly(fd, end)
        raise
    return written


def _runs(records: Iterable[tuple[int, bytes]], record: int) -> Iterator[tuple[int, bytes]]:
    """Consecutive slots joined into one write each (slot of the first, bytes)."""
    start, parts = -1, list[bytes]()
    for slot, data in sorted(records):
        if len(data) != record:
            raise ValueError(f"a record of {len(data)} bytes in a file of {record}-byte records")
        if parts and slot == start + len(parts):
            parts.append(data)
            continue
        if parts:
            yield start, b"".join(parts)
        start, parts = slot, [data]
    if parts:
        yield start, b"".join(parts)


# -- undoing what a transaction that never committed patched -------------------------


class Saved(msgspec.Struct, frozen=True, array_like=True):
    """Bytes a patch is about to overwrite: the file (its name and inode), the size the
    committed view covers (what a patch appends past it is cut), where, and the bytes."""

    file: str
    inode: int
    size: int
    at: int
    old: bytes


class UndoHead(msgspec.Struct, frozen=True):
    """Whose undo journal this is: the view's position when its transaction began."""

    token: str


_HEAD_ENCODER = msgspec.json.Encoder()
_SAVED = msgspec.json.Decoder(Saved)
_UNDO: ContextVar[Path | None] = ContextVar("memlog_packed_undo", default=None)


@contextlib.contextmanager
def undoable(folder: Path, token: str, named: set[str]) -> Iterator[None]:
    """The patches made inside are undone unless the view's write transaction they belong
    to commits (call inside it, with ``token``: the view's position as it began, and
    ``named``: the files the committed view names).  An undo journal left by a writer
    killed before its commit is applied first; the caller removes the new one with
    ``committed`` once its transaction has committed."""
    path = folder / UNDO_NAME
    recover(folder, token, named)
    private_dir(folder, folder.parent)
    fd = open_private(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        write_all(fd, _HEAD_ENCODER.encode(UndoHead(token)) + b"\n")
    finally:
        os.close(fd)
    marker = _UNDO.set(path)
    try:
        yield
    except BaseException:
        with contextlib.suppress(OSError, ValueError, msgspec.DecodeError):
            recover(folder, token, named)  # rolled back: the old bytes go back at once
        raise
    finally:
        _UNDO.reset(marker)


def committed(folder: Path) -> None:
    """The transaction committed: its patches stand, its undo journal goes."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(folder / UNDO_NAME)


def keep_undo(path: Path, fd: int, end: int, record: int, records: list[tuple[int, bytes]]) -> None:
    """Save, synced, the committed bytes the records about to be written over hold (when a
    transaction's undo journal is open: ``undoable``)."""
    journal = _UNDO.get()
    if journal is None or journal.parent != path.parent:
        return
    inode = os.fstat(fd).st_ino
    saved = [Saved(path.name, inode, end, end, b"")]
    for slot, data in _runs(records, record):
        at = HEADER.size + slot * record
        length = min(len(data), end - at)
        if length > 0:
            saved.append(Saved(path.name, inode, end, at, os.pread(fd, length, at)))
    out = open_private(journal, os.O_WRONLY | os.O_APPEND)
    try:
        write_all(out, b"".join(_HEAD_ENCODER.encode(s) + b"\n" for s in saved))
        os.fsync(out)
    finally:
        os.close(out)


def recover(folder: Path, token: str, named: set[str]) -> list[str]:
    """Put back the bytes an undo journal saved when its transaction never committed (the
    view still stands at ``token``) into the files the view still names (``named``; the
    same inode); the journal of one that committed is only removed.  The files restored."""
    path = folder / UNDO_NAME
    try:
        lines = path.read_bytes().split(b"\n")
    except FileNotFoundError:
        return []
    restored: list[str] = []
    try:
        head = msgspec.json.decode(lines[0], type=UndoHead)
    except (msgspec.DecodeError, UnicodeDecodeError):
        head = None
    if head is not None and head.token == token:
        saved = []
        for line in lines[1:]:
            with contextlib.suppress(msgspec.DecodeError, UnicodeDecodeError):
                saved.append(_SAVED.decode(line))  # a torn last one was never written over
        restored = _put_back(folder, saved, named)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    return restored


def _put_back(folder: Path, saved: list[Saved], named: set[str]) -> list[str]:
    by_file: dict[str, list[Saved]] = {}
    for item in saved:
        by_file.setdefault(item.file, []).append(item)
    done = []
    for name, items in sorted(by_file.items()):
        if name not in named:
            continue
        try:
            fd = open_private(folder / name, os.O_RDWR)
        except FileNotFoundError:
            continue
        try:
            if os.fstat(fd).st_ino != items[0].inode:
                continue  # written anew since: not the file these bytes came from
            with packsums.patching(folder):
                os.ftruncate(fd, min(item.size for item in items))
                for item in reversed(items):
                    _write_at(fd, item.old, item.at)
                os.fsync(fd)
                ranges = [(item.at, item.at + len(item.old)) for item in items if item.old]
                packsums.record(folder / name, changed=ranges)
        finally:
            os.close(fd)
        done.append(name)
    return done


def _write_at(fd: int, data: bytes, offset: int) -> None:
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, offset)
        view, offset = view[written:], offset + written


def sweep(
    folder: Path,
    suffix: str | tuple[str, ...],
    referenced: Callable[[], set[str]],
    wait: bool = False,
    spare: tuple[str, ...] = (),
) -> list[str]:
    """Remove the files of ``folder`` ending in ``suffix`` that ``referenced()`` does not name
    (but the newest unnamed one of each kind in ``spare``: a reader that read the pointer
    just before a catch-up named a newer file still finds it).

    ``referenced`` reads the names the committed view points at; it is called
    once the lock is held, so no file on its way to being named is removed.
    Without ``wait`` a sweep that would wait for a writer is skipped (the next
    one does it).  Returns the names removed.
    """
    names = _names(folder)
    suffixes = (suffix,) if isinstance(suffix, str) else suffix
    files = [n for n in names if n.endswith(suffixes)]
    if len(files) <= len(suffixes) and not any(_is_tmp(n) for n in names):
        if len({n.rsplit(".", 1)[-1] for n in files}) == len(files):
            return []  # one file of each kind: the one named (a view always names its files)
    flags = fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB)
    try:
        with _lock(folder, flags):
            keep = referenced()
            for kind in spare:
                unnamed = [n for n in _names(folder) if n.endswith(kind) and n not in keep]
                keep |= set(unnamed[-1:])  # names sort by generation: the newest
            return _remove_unreferenced(folder, suffixes, keep)
    except BlockingIOError:
        return []


def _remove_unreferenced(folder: Path, suffix: tuple[str, ...], keep: set[str]) -> list[str]:
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
    with contextlib.suppress(OSError):  # records past ``size`` are named by nothing
        os.ftruncate(fd, size)
