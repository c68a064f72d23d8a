"""What this home has to offer: its segments, checked and sealed, as a commit.

This device's segments are committed up to the end of their last whole
batch (an append in progress, or a torn tail, stays out) and only after the
new lines pass their checksums and the secrets scan; a line that fails
holds back itself and everything after it on this device, and is reported.
Another device's segment is committed again only when it changed here (a
redaction rewrote it), the new version checks out, and it holds every line
of the version committed before (a copy cut short here is never offered).  A segment missing
from ``events/`` keeps its committed version, which sync writes back.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

from memlog.eventlog import devices
from memlog.eventlog import segments as seg
from memlog.sync import versions
from memlog.sync.repo import LOCAL_REF, Git, TreeEntry
from memlog.sync.sealing import Sealer, tree_path

#: path → [size, mtime_ns, inode, blob id] of files as last seen whole
StatCache = dict[str, list[int | str]]


class Offered(NamedTuple):
    """The commit holding what this home offers, and what was held back."""

    commit: str | None
    problems: list[str]


class Files:
    """The segment files of ``events/``, with blob ids cached by their stat."""

    def __init__(self, events_dir: Path, cache: StatCache) -> None:
        self.events_dir = events_dir
        self.cache = cache

    def paths(self) -> dict[str, Path]:
        found = {}
        for device in devices.device_dirs(self.events_dir):
            for path in seg.list_segments(self.events_dir / device):
                found[f"{device}/{path.name}"] = path
        return found

    def blob_id(self, rel: str) -> str | None:
        """The blob id of the file at ``rel`` as it is now (None when there is none)."""
        path = self.events_dir / rel
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
            return (self.events_dir / rel).read_bytes()
        except FileNotFoundError:
            return None

    def prev_of(self, rel: str) -> int:
        """The last sequence of the device's segment before ``rel`` (0 when none)."""
        device, name = rel.split("/", 1)
        return last_seq([p for p in seg.list_segments(self.events_dir / device) if p.name < name])


def last_seq(paths: list[Path]) -> int:
    """The last sequence of the last of ``paths`` that holds a line (0 when none does)."""
    for path in reversed(paths):
        with open(path, "rb") as handle:
            found = seg.last_seq(handle.fileno(), os.fstat(handle.fileno()).st_size)
        if found is not None:
            return found
    return 0


def offer(git: Git, files: Files, own: str, sealer: Sealer) -> Offered:
    """Commit this home's segments, sealed, onto the local branch (when anything changed),
    with the format file and this device's head."""
    head = git.ref(LOCAL_REF)
    committed = git.tree(head)
    tree = {path: entry.oid for path, entry in committed.items()}
    sealer.infos(committed)  # what the committed segments hold, read at once when not known
    problems: list[str] = []
    holding = False
    for rel in sorted(files.paths()):
        version = Version(files, sealer, rel, committed.get(tree_path(rel)))
        if not rel.startswith(own + "/"):
            problems += _foreign_version(version, tree)
        elif not holding:
            problem = _own_version(version, tree)
            problems += problem
            holding = bool(problem)
    sealer.finish(tree, own)
    if tree == {path: entry.oid for path, entry in committed.items()}:
        return Offered(head, problems)
    commit = git.commit(git.write_tree(tree), [head] if head else [], f"memlog: events of {own}")
    git.update_ref(LOCAL_REF, commit, head)
    return Offered(commit, problems)


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

    def commit(self, data: bytes, tree: dict[str, str]) -> None:
        """Seal ``data`` into ``tree`` unless it is what was committed; chained to the
        segment before as the committed version was (a segment before it missing here,
        deleted or not yet written back, changes nothing of the chain)."""
        if self.committed is None or versions.blob_id(data) != self.committed.plain_id:
            known = self.committed is not None and self.committed.lines
            prev = self.committed.first_prev if self.committed is not None and known else None
            prev = self.files.prev_of(self.rel) if prev is None else prev
            tree[self.path] = self.sealer.seal(self.path, data, prev)


def _own_version(version: Version, tree: dict[str, str]) -> list[str]:
    """Commit one of this device's segments up to its last whole batch that checks out
    (read once: appends going on meanwhile are left for the next sync)."""
    if version.unchanged():
        return []
    data = version.files.read(version.rel) or b""
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
        return [problem] if problem else []  # never offer less than was offered before
    if end:
        version.commit(data[:end], tree)
    return [problem] if problem else []


def _foreign_version(version: Version, tree: dict[str, str]) -> list[str]:
    """Commit another device's segment when it changed here and checks out."""
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
    if version.entry is not None:
        held = version.sealer.authentic(version.path, version.entry.oid)
        if not versions.covers(versions.ids_of(lines), held):
            return []  # it holds less of that device than the version offered: never offered
    version.commit(data, tree)
    return []
