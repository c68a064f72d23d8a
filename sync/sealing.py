"""Between ``events/`` and the repository: segments sealed into blobs, blobs opened.

The repository (local and remote) only ever holds sealed files (``sealed``);
``events/`` only ever holds plain ones.  ``Sealer`` turns one into the other
for this home's key, and remembers, per sealed blob, what it opens to (the
plain blob's id and size, its line count, first ``prev`` and last sequence),
so a sync opens only what it has not seen.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from memlog.sync import sealed, versions
from memlog.sync.repo import Git, SyncError, TreeEntry
from memlog.sync.sealed import FORMAT_FILE, HEAD_NAME, SUFFIX, Head, Key, Unopenable

PLAIN_SUFFIX = ".jsonl"


class Info(NamedTuple):
    """What one sealed segment opens to."""

    plain_id: str
    plain_size: int
    lines: int
    first_prev: int
    last_seq: int


def tree_path(rel: str) -> str:
    """``<device>/<seq>.jsonl`` in ``events/`` → ``<device>/<seq>.sealed`` in the tree."""
    return rel[: -len(PLAIN_SUFFIX)] + SUFFIX


def event_path(path: str) -> str:
    return path[: -len(SUFFIX)] + PLAIN_SUFFIX


def head_path(device: str) -> str:
    return f"{device}/{HEAD_NAME}"


def is_head(path: str) -> bool:
    parts = path.split("/")
    return len(parts) == 2 and parts[1] == HEAD_NAME


def device_of(path: str) -> str:
    return path.split("/", 1)[0]


class Sealer:
    """This home's key at work on one repository."""

    def __init__(
        self, key: Key, git: Git, known: dict[str, list[int | str]], own: str = ""
    ) -> None:
        self.key = key
        self.git = git
        #: sealed blob id → [plain id, plain size, lines, first prev, last seq]
        self.known = known
        #: this home's device: its segments must open whole (another device's may hold
        #: lines this home refused, kept so the remote never loses them: ``merge``)
        self.own = own

    def seal(self, path: str, data: bytes, prev: int) -> str:
        """Seal the plain segment ``data`` as tree path ``path`` (its first line after seq
        ``prev``), write the blob, and return its id."""
        lines = versions.parse(path, data) if data else []
        sealed_bytes = versions.seal_lines(self.key, path, lines, prev)
        oid = self.git.write_blob(sealed_bytes)
        self._remember(oid, data, lines, prev)
        return oid

    def sealed_lines(self, path: str, lines: list[versions.Line]) -> bytes:
        prev = lines[0].prev if lines else 0
        return versions.seal_lines(self.key, path, lines, prev)

    def remember(self, oid: str, lines: list[versions.Line]) -> None:
        self._remember(oid, versions.joined_bytes(lines), lines, lines[0].prev if lines else 0)

    def _remember(self, oid: str, data: bytes, lines: list[versions.Line], prev: int) -> None:
        last = lines[-1].seq if lines else 0
        self.known[oid] = [versions.blob_id(data), len(data), len(lines), prev, last]

    def open(self, path: str, data: bytes) -> list[versions.Line]:
        """The lines of a sealed blob of this home's own repository (SyncError when one of
        this device's does not open whole: the local repository was damaged); of another
        device's, the lines it takes (the remote's version kept as it was may hold lines
        refused here, which stay out of ``events/``)."""
        opened = versions.open_sealed(self.key, path, data)
        if opened.fault and (not self.own or device_of(path) == self.own):
            raise SyncError(f"this home's own sync repository is damaged: {opened.fault}")
        return opened.lines

    def authentic(self, path: str, oid: str, data: bytes | None = None) -> dict[int, str]:
        """The sequence and event id of every line of the sealed blob ``oid`` that opens
        with this home's key, taken or not (what a version holds of its device)."""
        raw = data if data is not None else self.git.blobs([oid])[oid]
        return versions.open_sealed(self.key, path, raw).authentic

    def info(self, path: str, oid: str, data: bytes | None = None) -> Info:
        """What the sealed blob ``oid`` at ``path`` opens to."""
        found = self.known.get(oid)
        if found is None:
            if data is None:
                data = self.git.blobs([oid])[oid]
            self.remember(oid, self.open(path, data))
            found = self.known[oid]
        plain_id, size, lines, prev, last = found
        return Info(str(plain_id), int(size), int(lines), int(prev), int(last))

    def infos(self, tree: Mapping[str, TreeEntry | str]) -> dict[str, Info]:
        """``info`` of every segment of ``tree`` (the blobs not known yet read at once)."""
        oids = {path: _oid(entry) for path, entry in tree.items() if path.endswith(SUFFIX)}
        missing = [oid for oid in oids.values() if oid not in self.known]
        data = self.git.blobs(missing) if missing else {}
        return {path: self.info(path, oid, data.get(oid)) for path, oid in oids.items()}

    def count_lines(self, tree: Mapping[str, TreeEntry]) -> int:
        """How many lines the segments of ``tree`` hold (those of an untrusted tree are
        counted, not opened)."""
        unknown = [e.oid for p, e in tree.items() if p.endswith(SUFFIX) and e.oid not in self.known]
        data = self.git.blobs(unknown) if unknown else {}
        return sum(
            int(self.known[e.oid][2]) if e.oid in self.known else data[e.oid].count(b"\n")
            for p, e in tree.items() if p.endswith(SUFFIX)
        )  # fmt: skip

    def plain(self, path: str, oid: str) -> bytes:
        """The plain segment a sealed blob of this home's repository opens to."""
        lines = self.open(path, self.git.blobs([oid])[oid])
        self.remember(oid, lines)
        return versions.joined_bytes(lines)

    # -- heads and the format file -------------------------------------------------------

    def head(self, device: str, oid: str, data: bytes | None = None) -> Head:
        """The head at ``<device>/head`` (Unopenable when it does not open)."""
        raw = data if data is not None else self.git.blobs([oid])[oid]
        return sealed.open_head(self.key, device, raw)

    def finish(self, tree: dict[str, str], own: str) -> None:
        """Put the format file and this device's head (what ``tree`` holds) in ``tree``
        (nothing when it holds no segment yet)."""
        last = {device_of(p): i.last_seq for p, i in sorted(self.infos(tree).items())}
        if not last:
            return
        self._put(tree, FORMAT_FILE, sealed.format_file(self.key))
        if own in last:
            seen = {device: seq for device, seq in last.items() if device != own}
            head = Head(device=own, seq=last[own], seen=seen)
            self._put(tree, head_path(own), sealed.seal_head(self.key, head))

    def _put(self, tree: dict[str, str], path: str, data: bytes) -> None:
        """``data`` as ``path`` of ``tree``, written only when the tree has other bytes."""
        if tree.get(path) != versions.blob_id(data):
            tree[path] = self.git.write_blob(data)

    def check_format(self, data: bytes | None) -> str:
        """ "" when a remote's format file says this home's format and key, else why not."""
        found = sealed.read_format(data) if data is not None else None
        if found is None:
            return "no memlog format file"
        if found.format != sealed.FORMAT:
            return f"a format this memlog does not know ({found.format[:40]!r}): upgrade memlog"
        if found.key_check != self.key.check():
            return "sealed with another key"
        return ""


def _oid(entry: TreeEntry | str) -> str:
    return entry if isinstance(entry, str) else entry.oid


__all__ = ["Info", "Sealer", "Unopenable", "tree_path", "event_path", "head_path", "is_head"]
