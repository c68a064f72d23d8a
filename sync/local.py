"""What this home has to offer: its segments, checked, as a commit.

This device's segments are committed up to the end of their last whole
batch (an append in progress, or a torn tail, stays out) and only after the
new lines pass their checksums and the secrets scan; a line that fails
holds back itself and everything after it on this device, and is reported.
Another device's segment is committed again only when it changed here (a
redaction rewrote it) and the new version checks out.  A segment missing
from ``events/`` keeps its committed version, which sync writes back.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from memlog.eventlog import devices
from memlog.eventlog import segments as seg
from memlog.eventlog.codec import decode_line
from memlog.sync import versions
from memlog.sync.repo import LOCAL_REF, Git, TreeEntry

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


def offer(git: Git, files: Files, own: str) -> Offered:
    """Commit this home's segments onto the local branch (when anything changed)."""
    head = git.ref(LOCAL_REF)
    committed = git.tree(head)
    tree = {path: entry.oid for path, entry in committed.items()}
    problems: list[str] = []
    holding = False
    for rel in sorted(files.paths()):
        if not rel.startswith(own + "/"):
            problems += _foreign_version(git, files, rel, committed.get(rel), tree)
        elif not holding:
            problem = _own_version(git, files, rel, committed.get(rel), tree)
            problems += problem
            holding = bool(problem)
    if tree == {path: entry.oid for path, entry in committed.items()}:
        return Offered(head, problems)
    commit = git.commit(git.write_tree(tree), [head] if head else [], f"memlog: events of {own}")
    git.update_ref(LOCAL_REF, commit, head)
    return Offered(commit, problems)


def _own_version(
    git: Git, files: Files, rel: str, entry: TreeEntry | None, tree: dict[str, str]
) -> list[str]:
    """Commit one of this device's segments up to its last whole batch that checks out
    (read once: appends going on meanwhile are left for the next sync)."""
    if entry is not None and files.blob_id(rel) == entry.oid:
        return []  # unchanged since it was committed
    data = files.read(rel) or b""
    start = previous = 0
    if entry is not None and versions.blob_id(data[: entry.size]) == entry.oid:
        start = entry.size  # only the lines appended since need checking
        previous = _last_seq(data[:start])
    end, problem = versions.good_end(rel, data, start, previous)
    if problem:
        problem += "; it and what follows stay on this machine"
    if entry is not None and end < entry.size:
        return [problem] if problem else []  # never offer less than was offered before
    if end and versions.blob_id(data[:end]) != tree.get(rel):
        tree[rel] = git.write_blob(data[:end])
    return [problem] if problem else []


def _last_seq(data: bytes) -> int:
    """The sequence of the last line of ``data`` (which was committed, so it is good)."""
    cut = data.rfind(b"\n", 0, len(data) - 1)
    return decode_line(data[cut + 1 :]).seq if data else 0


def _foreign_version(
    git: Git, files: Files, rel: str, entry: TreeEntry | None, tree: dict[str, str]
) -> list[str]:
    """Commit another device's segment when it changed here and checks out."""
    oid = files.blob_id(rel)
    if oid is None or (entry is not None and oid == entry.oid):
        return []
    data = files.read(rel) or b""
    try:
        lines = versions.parse(rel, data)
    except versions.Refused as exc:
        return [f"{exc}; the synced version is kept"]
    secret = versions.secret_in(lines)
    if secret is not None:
        return [f"{rel} seq {secret.seq}: a secret; this copy is not offered"]
    tree[rel] = git.write_blob(data)
    return []
