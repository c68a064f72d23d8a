"""What this home has to offer: its segments, checked, signed and sealed, as a commit.

This device's segments are committed up to the end of their last whole
batch (an append in progress, or a torn tail, stays out) and only after the
new lines pass their checksums and the secrets scan; a line that fails
holds back itself and everything after it on this device, and is reported.
Every line from the device's first signed sequence on is signed by this
device's key over the chain of its lines (``signing``); a line signed before
keeps its signature, unless a line before it changed (a redaction here):
then every line from the first change on is signed again, under the next
generation, and the device's head says where that generation starts.
Another device's segment is never committed from here: its lines are its
device's to sign.  Where this home's copy of one took text out of a line (a
redaction made here), that is a request to the device (``Offered.requests``);
any other change is named and not offered.  A segment missing from
``events/`` keeps its committed version, which sync writes back.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

from memlog.eventlog import devices
from memlog.eventlog import segments as seg
from memlog.home import Home
from memlog.sync import opening, signing, versions
from memlog.sync.repo import LOCAL_REF, Git, TreeEntry
from memlog.sync.roster import Head
from memlog.sync.sealed import SUFFIX, Signature
from memlog.sync.sealing import Sealer, event_path, tree_path
from memlog.sync.signing import DeviceKey

#: path → [size, mtime_ns, inode, blob id] of files as last seen whole
StatCache = dict[str, list[int | str]]


class Chain(NamedTuple):
    """What this device's head says of its lines: the last sequence offered and the chain
    digest after it, the generation, where each generation starts, the first signed
    sequence."""

    seq: int
    tip: bytes
    gen: int
    rewrites: tuple[tuple[int, int], ...]
    first: int


class Ask(NamedTuple):
    """A line of another device that this home's copy holds with text taken out."""

    target: str
    seq: int
    event: str
    line: bytes


class Offered(NamedTuple):
    """The commit holding what this home offers, what was held back, what this device's
    head says of its lines, and the lines of other devices this home asks them to redact."""

    commit: str | None
    problems: list[str]
    chain: Chain | None = None
    asks: list[Ask] = []


class Files:
    """The segment files of ``events/``, with blob ids cached by their stat."""

    def __init__(self, home: Home, cache: StatCache) -> None:
        self.home = home
        self.cache = cache

    def paths(self) -> dict[str, Path]:
        found = {}
        for device in devices.device_dirs(self.home):
            for path in seg.list_segments(self.home.device(device)):
                found[f"{device}/{path.name}"] = path
        return found

    def blob_id(self, rel: str) -> str | None:
        """The blob id of the file at ``rel`` as it is now (None when there is none)."""
        path = self.home.segment(rel)
        try:
            info = path.stat()
        except FileNotFoundError:
            return None
        stamp: list[int | str] = [info.st_size, info.st_mtime_ns, info.st_ino]
        cached = self.cache.get(rel)
        if cached is not None and cached[:3] == stamp:
            return str(cached[3])
        oid = versions.blob_id(path.read_bytes())
        self.cache[rel] = [*stamp, oid]
        return oid

    def read(self, rel: str) -> bytes | None:
        try:
            return self.home.segment(rel).read_bytes()
        except FileNotFoundError:
            return None

    def prev_of(self, rel: str) -> int:
        """The last sequence of the device's segment before ``rel`` (0 when none)."""
        device, name = rel.split("/", 1)
        return last_seq([p for p in seg.list_segments(self.home.device(device)) if p.name < name])


def last_seq(paths: list[Path]) -> int:
    """The last sequence of the last of ``paths`` that holds a line (0 when none does)."""
    for path in reversed(paths):
        with open(path, "rb") as handle:
            found = seg.last_seq(handle.fileno(), os.fstat(handle.fileno()).st_size)
        if found is not None:
            return found
    return 0


def offer(
    git: Git, files: Files, own: str, sealer: Sealer, signer: DeviceKey,
    previous: Head | None = None,
) -> Offered:  # fmt: skip
    """Commit this home's segments, signed and sealed, onto the local branch (when anything
    changed), with the format file; ``previous``: this device's last head."""
    head = git.ref(LOCAL_REF)
    committed = git.tree(head)
    tree = {path: entry.oid for path, entry in committed.items()}
    sealer.infos(committed)  # what the committed segments hold, read at once when not known
    problems: list[str] = []
    asks: list[Ask] = []
    mine: list[Version] = []
    here = files.paths()
    gone = [event_path(p) for p in committed if p.startswith(own + "/") and p.endswith(SUFFIX)]
    for rel in sorted({*here, *gone}):  # (one of this device's deleted here: it stands)
        version = Version(files, sealer, rel, committed.get(tree_path(rel)))
        if rel.startswith(own + "/"):
            mine.append(version)
        elif rel in here:
            problems += _foreign_version(version, asks)
    signed = Signer(own, signer, sealer, previous)
    problems += signed.offer(mine, tree)
    sealer.finish(tree)
    if tree == {path: entry.oid for path, entry in committed.items()}:
        return Offered(head, problems, signed.chain(), asks)
    commit = git.commit(git.write_tree(tree), [head] if head else [], f"memlog: events of {own}")
    git.update_ref(LOCAL_REF, commit, head)
    return Offered(commit, problems, signed.chain(), asks)


class Version:
    """One segment of ``events/`` and the version of it committed before (if any)."""

    def __init__(self, files: Files, sealer: Sealer, rel: str, entry: TreeEntry | None) -> None:
        self.files, self.sealer, self.rel, self.entry = files, sealer, rel, entry
        self.path = tree_path(rel)
        self.committed = sealer.info(self.path, entry.oid) if entry is not None else None

    def unchanged(self) -> bool:
        return (
            self.committed is not None and self.files.blob_id(self.rel) == self.committed.plain_id
        )

    def committed_lines(self) -> list[versions.Line]:
        if self.entry is None:
            return []
        return self.sealer.open(self.path, self.sealer.git.blobs([self.entry.oid])[self.entry.oid])


def _own_data(version: Version) -> tuple[bytes | None, str]:
    """This device's segment up to its last whole batch that checks out (read once:
    appends going on meanwhile are left for the next sync); None: what was committed
    stands (less would be offered).  And what held the rest back ("" when nothing)."""
    data = version.files.read(version.rel) or b""
    if version.unchanged():
        return data, ""
    start = previous = 0
    committed = version.committed
    if (
        committed is not None
        and versions.blob_id(data[: committed.plain_size]) == committed.plain_id
    ):
        start = committed.plain_size  # only the lines appended since need checking
        previous = committed.last_seq
    end, problem = versions.good_end(version.rel, data, start, previous)
    if problem:
        problem += "; it and what follows stay on this machine"
    if committed is not None and end < committed.plain_size:
        return None, problem  # never offer less than was offered before
    return data[:end], problem


class Signer:
    """This device's lines, walked in order: the chain of their digests, each line signed
    (or its signature kept), each segment sealed into the tree when it changed."""

    def __init__(self, own: str, key: DeviceKey, sealer: Sealer, previous: Head | None) -> None:
        self.own, self.key, self.sealer = own, key, sealer
        self.previous = previous
        self.digest = signing.chain_start(own)
        self.last = 0
        self.gen = previous.gen if previous is not None else 0
        self.rewrites = tuple(previous.rewrites) if previous is not None else ()
        self.first = previous.first if previous is not None else 0
        #: a line differs from its committed version (or has none): the chain after it too
        self.diverged = False
        #: a line signed before was signed again: this offer's lines are a new generation
        self.rewritten = False

    def chain(self) -> Chain:
        return Chain(self.last, self.digest, self.gen, self.rewrites, self.first)

    def offer(self, mine: list[Version], tree: dict[str, str]) -> list[str]:
        if not self.first:
            self.first = self._first(mine)
        problems: list[str] = []
        for version in mine:
            if problems:
                break  # a segment held back holds back every one after it
            if self._passed(version):
                continue
            data, problem = _own_data(version)
            problems += [problem] if problem else []
            if data is None:
                self._keep(version)
            elif not self._extended(version, data, tree):
                self._seal(version, data, tree)
        return problems

    def _follows(self, version: Version) -> bool:
        """Whether the committed version of ``version`` was signed where the chain stands
        now (nothing before it changed), its digests known."""
        info = version.committed
        return (
            not self.diverged and info is not None and bool(info.tail)
            and info.link == self.digest.hex() and info.first_prev == self.last
        )  # fmt: skip

    def _passed(self, version: Version) -> bool:
        """A segment as it was committed: the chain jumps past it, unread."""
        if not self._follows(version) or not version.unchanged():
            return False
        assert version.committed is not None
        self.digest, self.last = bytes.fromhex(version.committed.tail), version.committed.last_seq
        return True

    def _extended(self, version: Version, data: bytes, tree: dict[str, str]) -> bool:
        """A segment that only grew since it was committed: its sealed lines kept as they
        are, the new ones signed and sealed after them (only they are read)."""
        info = version.committed
        if not self._follows(version) or version.entry is None or info is None:
            return False
        if versions.blob_id(data[: info.plain_size]) != info.plain_id:
            return False
        committed = self.sealer.git.blobs([version.entry.oid])[version.entry.oid]
        self.digest, self.last = bytes.fromhex(info.tail), info.last_seq
        new = [line for line, _ in versions.walk(version.rel, data, info.plain_size, self.last)]
        lines = [self._signed(line, None) for line in new]
        if not lines:
            return True
        after_signed = self.sealer.signed_last(version.path, committed)
        sealed = committed + opening.seal_lines(
            self.sealer.key, version.path, lines, info.last_seq, after_signed
        )
        tree[version.path] = self.sealer.extended(version.path, sealed, info, data, lines)
        return True

    def _first(self, mine: list[Version]) -> int:
        """Where this device's signed lines start: after the last old, unsigned line the
        roster names of it, else after its last unsigned line committed here."""
        legacy = self.sealer.trust.roster.legacy
        if legacy is not None and self.own in legacy:
            return legacy[self.own] + 1
        unsigned = [
            line.seq for v in mine for line in v.committed_lines() if line.signature is None
        ]
        return max(unsigned, default=0) + 1

    def _keep(self, version: Version) -> None:
        """A committed segment that stands as it is: the chain goes on through it."""
        link = self.digest
        for line in version.committed_lines():
            self._advance(line)
        if version.entry is not None:
            self.sealer.chained(version.entry.oid, link, self.digest)

    def _seal(self, version: Version, data: bytes, tree: dict[str, str]) -> None:
        committed = {line.seq: line for line in version.committed_lines()}
        lines = [
            self._signed(line, committed.get(line.seq))
            for line in versions.parse(version.rel, data)
        ]
        if not lines:
            return
        if self._same(version, lines):
            assert version.entry is not None
            self.sealer.chained(version.entry.oid, lines[0].before, self.digest)
            return
        tree[version.path] = self.sealer.seal(version.path, lines)

    def _same(self, version: Version, lines: list[versions.Line]) -> bool:
        """Whether ``lines`` are the committed version, signatures and all."""
        if version.entry is None:
            return False
        sealed = self.sealer.sealed_lines(version.path, lines)
        return versions.blob_id(sealed) == version.entry.oid

    def _signed(self, line: versions.Line, was: versions.Line | None) -> versions.Line:
        """``line`` with its signature (kept when it is the line signed before, in the same
        place of the chain), and the chain moved past it."""
        line = line._replace(prev=self.last, before=self.digest)
        same = was is not None and was.data == line.data and was.prev == line.prev
        self.diverged = self.diverged or not same
        keep = None if self.diverged or was is None else was.signature
        if keep is None and was is not None and was.signature is not None:
            self._new_generation(line.seq)
        if keep is None and line.seq >= self.first:
            keep = self._sign(line)
        signed = line._replace(signature=keep)
        self._advance(signed)
        return signed

    def _new_generation(self, seq: int) -> None:
        """A line signed before is signed again from ``seq``: a rewrite (once per offer)."""
        if self.rewritten:
            return
        self.rewritten = True
        self.gen += 1
        self.rewrites = (*self.rewrites, (self.gen, seq))

    def _sign(self, line: versions.Line) -> Signature:
        after = signing.chain_next(self.digest, self.gen, line.prev, line.seq, line.data[:-1])
        message = signing.line_message(self.own, self.gen, line.prev, line.seq, after)
        return Signature(self.gen, self.key.sign(message))

    def _advance(self, line: versions.Line) -> None:
        gen = line.signature.gen if line.signature is not None else None
        self.digest = signing.chain_next(self.digest, gen, self.last, line.seq, line.data[:-1])
        self.last = line.seq


def _foreign_version(version: Version, asks: list[Ask]) -> list[str]:
    """Another device's segment as this home holds it: where it took text out of lines
    of the committed version (a redaction made here), those lines are asked of their
    device; where it changed otherwise, that is named and not offered."""
    if version.unchanged() or version.files.blob_id(version.rel) is None:
        return []
    data = version.files.read(version.rel) or b""
    try:
        lines = versions.parse(version.rel, data)
    except versions.Refused as exc:
        return [f"{exc}; the synced version is kept"]
    secret = versions.secret_in(lines)
    if secret is not None:
        return [f"{version.rel} seq {secret.seq}: a secret; this copy is not offered"]
    target = version.rel.split("/", 1)[0]
    committed = {line.seq: line for line in version.committed_lines()}
    for line in lines:
        was = committed.get(line.seq)
        if was is None or was.data == line.data:
            continue
        if was.id != line.id or not versions.is_redaction(line.event, was.event):
            return [f"{version.rel} seq {line.seq}: changed here otherwise than by taking text "
                    "out; not offered (another device's lines are its own to sign)"]  # fmt: skip
        asks.append(Ask(target, line.seq, line.id, line.data[:-1]))
    return []
