"""Between ``events/`` and the repository: segments sealed into blobs, blobs opened.

The repository (local and remote) only ever holds sealed files (``sealed``);
``events/`` only ever holds plain ones.  ``Sealer`` turns one into the other
for this home's key, opening another device's lines only as far as the roster
(``trust``) and that device's signatures vouch for them, and remembers, per
sealed blob, what it opens to (the plain blob's id and size, its line count,
first ``prev`` and last sequence, the chain digests before and after it), so
a sync opens only what it has not seen.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from memlog.sync import opening, sealed, signing, versions
from memlog.sync.repo import Git, SyncError, TreeEntry
from memlog.sync.sealed import FORMAT_FILE, HEAD_NAME, SUFFIX, Head, Key, Unopenable
from memlog.sync.trust import Trust, empty_trust

PLAIN_SUFFIX = ".jsonl"


class Info(NamedTuple):
    """What one sealed segment opens to."""

    plain_id: str
    plain_size: int
    lines: int
    first_prev: int
    last_seq: int
    #: the chain digest before its first line and after its last (hex; "": not known)
    link: str = ""
    tail: str = ""


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
        self, key: Key, git: Git, known: dict[str, list[int | str]], own: str = "",
        trust: Trust | None = None,
    ) -> None:  # fmt: skip
        self.key = key
        self.git = git
        #: sealed blob id → [plain id, plain size, lines, first prev, last seq, link, tail,
        #: the trust it was opened under]
        self.known = known
        #: this home's device: its segments must open whole (another device's may hold
        #: lines this home refused, kept so the remote never loses them: ``merge``)
        self.own = own
        #: the roster as this machine takes it: what another device's lines must pass
        self.trust = trust or empty_trust()
        #: the remote's format file when it is this format's, with this key (kept as it is)
        self.format_bytes: bytes | None = None

    def seal(self, path: str, lines: list[versions.Line]) -> str:
        """Seal ``lines`` (of this device, signed where they must be) as tree path
        ``path``, write the blob, and return its id."""
        oid = self.git.write_blob(self.sealed_lines(path, lines))
        self.remember(path, oid, lines)
        return oid

    def sealed_lines(self, path: str, lines: list[versions.Line]) -> bytes:
        prev = lines[0].prev if lines else 0
        return opening.seal_lines(self.key, path, lines, prev)

    def remember(self, path: str, oid: str, lines: list[versions.Line]) -> None:
        """What the blob ``oid`` at ``path`` opens to, as ``lines`` (under the trust of now)."""
        data = versions.joined_bytes(lines)
        prev, last = (lines[0].prev, lines[-1].seq) if lines else (0, 0)
        link, tail = _digests(lines)
        stamp = self.stamp(device_of(path))
        self.known[oid] = [versions.blob_id(data), len(data), len(lines), prev, last, link, tail,
                           stamp]  # fmt: skip

    def chained(self, oid: str, link: bytes, tail: bytes) -> None:
        """What this device's walk found of the chain digests before and after one of its
        committed blobs (old, unsigned lines carry none of their own)."""
        found = self.known.get(oid)
        if found is not None and len(found) >= 7:
            found[5], found[6] = link.hex(), tail.hex()

    def signed_last(self, path: str, data: bytes) -> bool:
        """Whether the last line of the sealed blob ``data`` is signed."""
        cut = data.rfind(b"\n", 0, len(data) - 1)
        device, segment = device_of(path), path.rsplit("/", 1)[1][: -len(SUFFIX)]
        try:
            return (
                sealed.open_line(self.key, device, segment, data[cut + 1 : -1]).signature
                is not None
            )
        except Unopenable:
            return False

    def extended(
        self, path: str, data: bytes, was: Info, plain: bytes, lines: list[versions.Line]
    ) -> str:
        """Write the sealed blob ``data``: the committed version ``was`` of this device's
        segment with ``lines`` sealed after it; its id (remembered without opening it)."""
        oid = self.git.write_blob(data)
        end = was.plain_size + len(versions.joined_bytes(lines))
        _, tail = _digests(lines)
        self.known[oid] = [versions.blob_id(plain[:end]), end, was.lines + len(lines),
                           was.first_prev, lines[-1].seq, was.link, tail,
                           self.stamp(device_of(path))]  # fmt: skip
        return oid

    def stamp(self, device: str) -> str:
        """What another device's lines were taken under (its head, its eviction): a blob
        remembered under another stamp is opened again."""
        if device == self.own:
            return ""
        found = self.trust.of(device)
        if found is None:
            return "unsigned" if self.trust.roster.legacy is None else "listed"
        gen = found.head.gen if found.head is not None else -1  # heads only ever go up
        return f"{gen}:{found.evicted}:{bool(found.disputed)}"

    def open(self, path: str, data: bytes) -> list[versions.Line]:
        """The lines of a sealed blob of this home's own repository (SyncError when one of
        this device's does not open whole: the local repository was damaged); of another
        device's, the lines it takes (the remote's version kept as it was may hold lines
        refused here, which stay out of ``events/``)."""
        own = not self.own or device_of(path) == self.own
        opened = opening.open_sealed(self.key, path, data, trust=None if own else self.trust)
        if opened.fault and own:
            raise SyncError(f"this home's own sync repository is damaged: {opened.fault}")
        return opened.lines

    def authentic(self, path: str, oid: str, data: bytes | None = None) -> dict[int, str]:
        """The sequence and event id of every line of the sealed blob ``oid`` that opens
        with this home's key and that its device vouches for, taken or not (what a version
        holds of its device)."""
        raw = data if data is not None else self.git.blobs([oid])[oid]
        found = self.trust.of(device_of(path))
        unsure = found is not None and (bool(found.disputed) or found.head is None)
        trust = None if unsure else self.trust  # what this machine cannot judge, it keeps
        return opening.open_sealed(self.key, path, raw, trust=trust).authentic

    def info(self, path: str, oid: str, data: bytes | None = None) -> Info:
        """What the sealed blob ``oid`` at ``path`` opens to."""
        found = self.known.get(oid)
        device = device_of(path)
        if found is None or len(found) < 8 or found[7] != self.stamp(device):
            if data is None:
                data = self.git.blobs([oid])[oid]
            self.remember(path, oid, self.open(path, data))
            found = self.known[oid]
        plain_id, size, lines, prev, last, link, tail = found[:7]
        return Info(str(plain_id), int(size), int(lines), int(prev), int(last), str(link),
                    str(tail))  # fmt: skip

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

    def plain_as_taken(self, path: str, oid: str) -> bytes:
        """The plain lines of a blob of this home's repository as they were taken (its
        device's newer head may have made some of them old since)."""
        opened = opening.open_sealed(self.key, path, self.git.blobs([oid])[oid])
        return versions.joined_bytes(opened.lines)

    def plain(self, path: str, oid: str) -> bytes:
        """The plain segment a sealed blob of this home's repository opens to."""
        lines = self.open(path, self.git.blobs([oid])[oid])
        self.remember(path, oid, lines)
        return versions.joined_bytes(lines)

    # -- heads and the format file -------------------------------------------------------

    def head(self, device: str, oid: str, data: bytes | None = None) -> Head:
        """The head at ``<device>/head`` (Unopenable when it does not open)."""
        raw = data if data is not None else self.git.blobs([oid])[oid]
        return sealed.open_head(self.key, device, raw)

    def finish(self, tree: dict[str, str]) -> None:
        """Put the format file in ``tree`` (nothing when it holds no segment yet): the
        remote's, when it is this format's and names this key, else a new one."""
        if not any(path.endswith(SUFFIX) for path in tree):
            return
        self._put(tree, FORMAT_FILE, self.format_bytes or sealed.format_file(self.key))

    def last_seqs(self, tree: Mapping[str, TreeEntry | str]) -> dict[str, int]:
        """The last sequence of every device's lines in ``tree`` (as taken here), a tree of
        this home's repository."""
        return {device_of(p): i.last_seq for p, i in sorted(self.infos(tree).items())}

    def claimed(self, tree: Mapping[str, TreeEntry], device: str) -> int:
        """The last sequence ``tree``'s segments of ``device`` name, whether their lines
        open or not (unauthenticated: lines refused for another reason were not removed)."""
        oids = [
            e.oid for p, e in tree.items()
            if p.startswith(device + "/") and p.endswith(SUFFIX) and e.kind == "blob"
        ]  # fmt: skip
        data = self.git.blobs(oids) if oids else {}
        return max((sealed.last_seq(blob) for blob in data.values()), default=0)

    def reach(self, tree: Mapping[str, TreeEntry]) -> dict[str, int]:
        """``last_seqs`` of a tree from the remote: this device's segments in it are taken
        as far as they follow each other, never a reason to stop."""
        own = {p: e for p, e in tree.items() if p.endswith(SUFFIX) and device_of(p) == self.own}
        found = self.last_seqs({p: e for p, e in tree.items() if p not in own})
        data = self.git.blobs([e.oid for e in own.values()]) if own else {}
        for path, entry in sorted(own.items()):
            lines = opening.open_sealed(self.key, path, data[entry.oid]).lines
            if lines:
                found[self.own] = max(found.get(self.own, 0), lines[-1].seq)
        return found

    def _put(self, tree: dict[str, str], path: str, data: bytes) -> None:
        """``data`` as ``path`` of ``tree``, written only when the tree has other bytes."""
        if tree.get(path) != versions.blob_id(data):
            tree[path] = self.git.write_blob(data)

    def check_format(self, data: bytes | None) -> str:
        """ "" when a remote's format file says a format this memlog reads and this home's
        key, else why not."""
        found = sealed.read_format(data) if data is not None else None
        if found is None:
            return "no memlog format file"
        if found.format not in sealed.FORMATS:
            return f"a format this memlog does not know ({found.format[:40]!r}): upgrade memlog"
        if found.key_check != self.key.check():
            return "sealed with another key"
        return ""


def _digests(lines: list[versions.Line]) -> tuple[str, str]:
    """The chain digest before the first of ``lines`` and after the last, as far as the
    lines know them (hex; "": not known)."""
    if not lines:
        return "", ""
    link = lines[0].before.hex()
    last = lines[-1]
    if not last.before:
        return link, ""
    gen = last.signature.gen if last.signature is not None else None
    after = signing.chain_next(last.before, gen, last.prev, last.seq, last.data[:-1])
    return link, after.hex()


def _oid(entry: TreeEntry | str) -> str:
    return entry if isinstance(entry, str) else entry.oid


__all__ = [
    "Info", "Sealer", "Unopenable", "Head", "tree_path", "event_path", "head_path", "is_head",
    "HEAD_NAME",
]  # fmt: skip
