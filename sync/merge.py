"""Joining the remote's segments with this home's: a three-way merge, file by file.

For every segment the remote changed since the last version both sides
shared, the remote's version is checked whole (``versions.parse``) and
joined with this home's line by line (``versions.join``).  A version that
fails either is refused: reported, kept verbatim in the quarantine file,
never applied; this home's version stands and is what the next push
carries.  A device's segments must also stay in sequence order together,
or the remote's changes to that device are refused as a whole.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from memlog.sync import versions
from memlog.sync.repo import Git, TreeEntry


class Refusal(NamedTuple):
    path: str
    blob: str
    reason: str


class Merged(NamedTuple):
    """The joined tree, the bytes of every file that differs from this home's commit,
    and what the remote offered that was refused."""

    tree: dict[str, str]
    changed: dict[str, bytes]
    refused: list[Refusal]


def merge(git: Git, own: str, ours: str | None, theirs: str, refused: Iterable[str]) -> Merged:
    """Join commit ``theirs`` into ``ours``; blobs in ``refused`` are refused without a look."""
    base = git.merge_base(ours, theirs) if ours else None
    mine, other, common = git.tree(ours), git.tree(theirs), git.tree(base)
    todo = sorted(
        path for path, entry in other.items()
        if entry.oid != _oid(mine, path) and entry.oid != _oid(common, path)
    )  # fmt: skip
    wanted = [
        e.oid for t in (mine, other, common) for p, e in t.items() if p in todo and e.kind == "blob"
    ]
    blobs = git.blobs(wanted)
    tree = {path: entry.oid for path, entry in mine.items()}
    joined: dict[str, list[versions.Line]] = {}
    refusals: list[Refusal] = []
    known = set(refused)
    for path in todo:
        oid = other[path].oid
        if oid in known:
            continue
        try:
            lines = _joined(path, own, blobs, mine.get(path), other[path], common.get(path))
        except versions.Refused as exc:
            refusals.append(Refusal(path, oid, str(exc)))
            continue
        if lines is not None:
            joined[path] = lines
    return _settle(git, tree, joined, refusals, other)


def _settle(
    git: Git,
    tree: dict[str, str],
    joined: dict[str, list[versions.Line]],
    refusals: list[Refusal],
    other: dict[str, TreeEntry],
) -> Merged:
    """The merged tree; the remote's changes to a device are refused whole if they overlap."""
    while fault := _keep_in_order(git, tree, joined):
        device = fault.split("/", 1)[0]
        for path in [p for p in joined if p.startswith(device + "/")]:
            refusals.append(Refusal(path, other[path].oid, f"{fault}; {device} kept as it was"))
            del joined[path]
    changed = {path: versions.joined_bytes(lines) for path, lines in joined.items()}
    for path, data in changed.items():
        tree[path] = versions.blob_id(data)
    return Merged(tree, changed, refusals)


def _oid(tree: dict[str, TreeEntry], path: str) -> str | None:
    entry = tree.get(path)
    return entry.oid if entry is not None else None


def _joined(
    path: str,
    own: str,
    blobs: dict[str, bytes],
    ours: TreeEntry | None,
    theirs: TreeEntry,
    base: TreeEntry | None,
) -> list[versions.Line] | None:
    """This file's lines as the join makes them; None when that is this home's version."""
    if not _is_segment(path) or theirs.kind != "blob" or theirs.mode not in ("100644", "100755"):
        raise versions.Refused(f"{path}: not a segment of a device")
    other = versions.parse(path, blobs[theirs.oid])
    mine = versions.parse(path, blobs[ours.oid]) if ours is not None else []
    common = _lines_or_none(path, blobs, base)
    joined = versions.join(path, common, mine, other, own=path.startswith(own + "/"))
    data = versions.joined_bytes(joined)
    return None if ours is not None and versions.blob_id(data) == ours.oid else joined


def _lines_or_none(
    path: str, blobs: dict[str, bytes], entry: TreeEntry | None
) -> list[versions.Line]:
    if entry is None:
        return []
    try:
        return versions.parse(path, blobs[entry.oid])
    except versions.Refused:
        return []  # a damaged common version only means: no side is known to have changed


def _is_segment(path: str) -> bool:
    from memlog.eventlog.devices import DEVICE_RE

    parts = path.split("/")
    name = parts[-1]
    return (
        len(parts) == 2 and bool(DEVICE_RE.match(parts[0])) and name.endswith(".jsonl")
        and name[:-6].isdigit() and len(name) == 26
    )  # fmt: skip


def _keep_in_order(git: Git, tree: dict[str, str], joined: dict[str, list[versions.Line]]) -> str:
    """A fault when a device's segments, some of them ``joined``, would overlap (else "")."""
    for device in sorted({path.split("/", 1)[0] for path in joined}):
        names = sorted(p for p in set(tree) | set(joined) if p.startswith(device + "/"))
        for index, path in enumerate(names):
            if path not in joined:
                continue
            lines = joined[path]
            before = names[index - 1] if index else None
            after = names[index + 1] if index + 1 < len(names) else None
            if lines and after is not None and lines[-1].seq >= _named(after):
                return f"{path} runs into {after}"
            if (
                lines
                and before is not None
                and _last_seq(git, tree, joined, before) >= lines[0].seq
            ):
                return f"{path} starts inside {before}"
    return ""


def _named(path: str) -> int:
    return int(path.rsplit("/", 1)[-1].split(".", 1)[0])


def _last_seq(
    git: Git, tree: dict[str, str], joined: dict[str, list[versions.Line]], path: str
) -> int:
    lines = joined.get(path)
    if lines is None:
        data = git.blobs([tree[path]])[tree[path]]
        lines = versions.parse(path, data)
    return lines[-1].seq if lines else _named(path) - 1
