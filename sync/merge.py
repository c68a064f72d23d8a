"""Joining the remote's segments with this home's: a three-way merge, file by file.

For every sealed segment the remote changed since the last version both
sides shared, the remote's version is opened line by line
(``opening.open_sealed``) and joined with this home's by sequence number
(``versions.join``).  A line that fails is refused (reported, kept in the
quarantine file, never applied) with the lines after it; the lines before
it are taken.  A version that diverges from this home's is refused whole:
this home's version stands and is what the next push carries.  A device's
segments must also follow each other (each first line names the last line
of the segment before as ``prev``), or the remote's changes to that device
are refused as a whole.

The remote's lines are opened under the roster (``trust.Trust``): a line
of a device that signs is taken only as far as its device's signature
vouches for it, and a device's segments must follow each other in its chain
as well (each first signed line carries the digest of the lines before it),
its old, unsigned lines included.  A line of another device changes only to
the version its device signed last, and only by text taken out.

Heads keep the remote honest about what it dropped: a device's head says how
far it offered its own lines and had received every other device's, so a
remote holding less of a device than some head vouches for (lines removed
from its end, a segment or a whole device deleted, the branch forced back),
is named.  The second format keeps heads in the roster (``check_heads``); the
first format's heads (``<device>/head``) are still read: a head older than
one this home saw before (a remote rolled back) is refused and named, and
this home only keeps a head the joined tree lives up to.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from memlog.sync import opening, sealing, signing, versions
from memlog.sync.repo import Git, TreeEntry
from memlog.sync.sealed import FORMAT_FILE, SUFFIX, Head, Unopenable, sealed_seq
from memlog.sync.sealing import Sealer, device_of, head_path, is_head


class Refusal(NamedTuple):
    path: str
    blob: str
    reason: str
    #: the bytes to keep in the quarantine file (the refused line; empty: the whole blob)
    data: bytes = b""
    #: whether the blob stays refused (False: a line from the future, looked at again)
    lasting: bool = True


class Merged(NamedTuple):
    """The joined tree, the plain bytes of every segment that differs from this home's
    commit (by tree path), and what the remote offered that was refused."""

    tree: dict[str, str]
    changed: dict[str, bytes]
    refused: list[Refusal]


class Join(NamedTuple):
    """What ``merge`` works on: the three trees, their blobs, and the key at work."""

    git: Git
    sealer: Sealer
    own: str
    mine: dict[str, TreeEntry]
    other: dict[str, TreeEntry]
    common: dict[str, TreeEntry]
    blobs: dict[str, bytes]
    now: int | None
    #: paths whose joined version is the remote's, whole: its blob is the joined one
    whole: dict[str, str]


def merge(
    git: Git,
    sealer: Sealer,
    own: str,
    ours: str | None,
    theirs: str,
    refused: Iterable[str],
    heads: dict[str, int],
    now: int | None = None,
) -> Merged:
    """Join commit ``theirs`` into ``ours``; blobs in ``refused`` are refused without a
    look; ``heads``: the highest head seen of each device (raised here)."""
    base = git.merge_base(ours, theirs) if ours else None
    mine, other, common = git.tree(ours), git.tree(theirs), git.tree(base)
    todo = sorted(
        path for path, entry in other.items()
        if path != FORMAT_FILE and entry.oid != _oid(mine, path)
        and entry.oid != _oid(common, path)
    )  # fmt: skip
    wanted = [
        e.oid for t in (mine, other, common) for p, e in t.items() if p in todo and e.kind == "blob"
    ]
    job = Join(git, sealer, own, mine, other, common, git.blobs(wanted), now, {})
    tree = {path: entry.oid for path, entry in mine.items()}
    joined: dict[str, list[versions.Line]] = {}
    refusals: list[Refusal] = []
    known = set(refused)
    for path in todo:
        oid = other[path].oid
        if oid in known or is_head(path):
            continue
        try:
            lines, fault = _joined(job, path)
        except versions.Refused as exc:
            refusals.append(Refusal(path, oid, str(exc)))
            continue
        if fault is not None:
            refusals.append(fault)
        if lines is not None:
            joined[path] = lines
    _keep_chained(job, tree, joined, refusals)
    changed = _settle(job, tree, joined)
    _keep_theirs(job, tree, joined)
    refusals += _heads(job, tree, [p for p in todo if is_head(p)], known, heads)
    return Merged(tree, changed, refusals)


def is_device_file(path: str, entry: TreeEntry) -> bool:
    """Whether ``path`` of a tree is one of a device's files: a segment or its head."""
    plain_file = entry.kind == "blob" and entry.mode in ("100644", "100755")
    return plain_file and (is_head(path) or _is_segment(path))


def held_by(sealer: Sealer, path: str, oid: str, data: bytes | None = None) -> dict[int, str]:
    """What the device file ``oid`` at ``path`` holds that opens with this home's key: a
    segment's lines (sequence: event id); a head, its own sequence; nothing that a
    forger could have made."""
    if not is_head(path):
        return sealer.authentic(path, oid, data)
    try:
        return {sealer.head(device_of(path), oid, data).seq: "head"}
    except Unopenable:
        return {}


def _keep_theirs(job: Join, tree: dict[str, str], joined: dict[str, list[versions.Line]]) -> None:
    """The remote's version of another device's file stays in ``tree`` unless the joined one
    holds every line of it that opens (the same event under each sequence): the remote
    never loses a line of another device through this home, whatever was refused here
    (those lines stay out of ``events/``, and on the remote)."""
    for path, entry in job.other.items():
        if device_of(path) == job.own or not is_device_file(path, entry):
            continue
        if tree.get(path) == entry.oid or (is_head(path) and path in tree):
            continue  # (a head: ``_heads`` keeps the newer good one)
        theirs = held_by(job.sealer, path, entry.oid, job.blobs.get(entry.oid))
        ours = joined.get(path)
        if ours is None and path in tree and not is_head(path):
            ours = job.sealer.open(path, job.git.blobs([tree[path]])[tree[path]])
        if not versions.covers(versions.ids_of(ours or []), theirs):
            tree[path] = entry.oid


def _oid(tree: dict[str, TreeEntry], path: str) -> str | None:
    entry = tree.get(path)
    return entry.oid if entry is not None else None


def _joined(job: Join, path: str) -> tuple[list[versions.Line] | None, Refusal | None]:
    """This file's lines as the join makes them (None when that is this home's version),
    and the refusal of the remote's first bad line, if it has one."""
    theirs, ours, base = job.other[path], job.mine.get(path), job.common.get(path)
    if not _is_segment(path) or theirs.kind != "blob" or theirs.mode not in ("100644", "100755"):
        raise versions.Refused(f"{path}: not a segment of a device")
    trust = job.sealer.trust
    opened = opening.open_sealed(job.sealer.key, path, job.blobs[theirs.oid], job.now, trust)
    fault = None
    if opened.fault:
        fault = Refusal(path, theirs.oid, opened.fault, opened.bad, opened.lasting)
    mine = job.sealer.open(path, job.blobs[ours.oid]) if ours is not None else []
    common = _lines_or_none(job, path, base)
    own = path.startswith(job.own + "/")
    signs = not own and trust.of(device_of(path)) is not None
    joined = versions.join(path, common, mine, opened.lines, own=own, signs=signs)
    data = versions.joined_bytes(joined)
    if not joined or (ours is not None and data == versions.joined_bytes(mine)):
        return None, fault  # nothing taken, or nothing new
    if fault is None and data == versions.joined_bytes(opened.lines):
        job.whole[path] = theirs.oid  # the same lines seal to the same bytes: no new blob
    return joined, fault


def _lines_or_none(job: Join, path: str, entry: TreeEntry | None) -> list[versions.Line]:
    if entry is None:
        return []
    opened = opening.open_sealed(job.sealer.key, path, job.blobs[entry.oid], job.now)
    return opened.lines  # a damaged common version only means: no side is known to have changed


def _is_segment(path: str) -> bool:
    from memlog.eventlog.devices import DEVICE_RE

    parts = path.split("/")
    name = parts[-1]
    return (
        len(parts) == 2 and bool(DEVICE_RE.match(parts[0])) and name.endswith(SUFFIX)
        and name[: -len(SUFFIX)].isdigit() and len(name) == 20 + len(SUFFIX)
    )  # fmt: skip


# -- a device's segments follow each other -----------------------------------------------


def _keep_chained(
    job: Join, tree: dict[str, str], joined: dict[str, list[versions.Line]],
    refusals: list[Refusal],
) -> None:  # fmt: skip
    """Refuse, whole, the remote's changes to a device whose segments would not follow
    each other."""
    while fault := _chain_fault(job, tree, joined):
        device = device_of(fault)
        for path in [p for p in joined if p.startswith(device + "/")]:
            refusals.append(Refusal(path, job.other[path].oid, f"{fault}; {device} kept as it was"))
            del joined[path]


def _chain_fault(job: Join, tree: dict[str, str], joined: dict[str, list[versions.Line]]) -> str:
    for device in sorted({device_of(path) for path in joined}):
        names = sorted(
            p for p in set(tree) | set(joined) if p.startswith(device + "/") and _is_segment(p)
        )
        spans = [_span(job, tree, joined, path) for path in names]
        last, before, tail = 0, "", ""
        for path, span in zip(names, spans, strict=True):
            if span.last is None:
                continue
            touched = path in joined or before in joined
            if path in joined and span.first is not None and span.first <= last:
                return f"{path} starts at seq {span.first}, inside {before} (seq {last})"
            if span.prev != last and touched:
                after = f"{before} (seq {last})" if before else "nothing"
                return (
                    f"{path} starts after seq {span.prev}, but follows {after}: lines were removed"
                )
            if span.link and tail and span.link != tail and touched:
                return (f"{path} does not follow {before} in its device's chain (lines signed "
                        "after other lines than these)")  # fmt: skip
            last, before, tail = span.last, path, span.tail
        fault = _old_lines_fault(job, device, names, tree, joined)
        if fault:
            return fault
    return ""


class _Span(NamedTuple):
    """A segment's first line's ``prev``, its first (when joined here) and last sequence
    (None: no lines), and the chain digests before and after it (hex; "": not known)."""

    prev: int
    first: int | None
    last: int | None
    link: str
    tail: str


def _span(
    job: Join, tree: dict[str, str], joined: dict[str, list[versions.Line]], path: str
) -> _Span:
    lines = joined.get(path)
    if lines is not None:
        if not lines:
            return _Span(0, None, None, "", "")
        link, tail = sealing._digests(lines)
        return _Span(lines[0].prev, lines[0].seq, lines[-1].seq, link, tail)
    info = job.sealer.info(path, tree[path])
    if not info.lines:
        return _Span(0, None, None, "", "")
    return _Span(info.first_prev, None, info.last_seq, info.link, info.tail)


def _old_lines_fault(
    job: Join, device: str, names: list[str], tree: dict[str, str],
    joined: dict[str, list[versions.Line]],
) -> str:  # fmt: skip
    """The old, unsigned lines of a device that signs must be the ones its first signed
    line chains to (a holder of the team key could otherwise change them): checked when
    a segment holding them changed."""
    found = job.sealer.trust.of(device)
    if found is None or found.first <= 1 or device == job.own:
        return ""
    holding = [p for p in names if _first_seq(p) < found.first]
    if not any(p in joined for p in holding):
        return ""
    digest, last = signing.chain_start(device), 0
    for path in holding:
        lines = joined.get(path)
        if lines is None:
            lines = job.sealer.open(path, job.git.blobs([tree[path]])[tree[path]])
        for line in lines:
            if line.signature is not None:
                if line.before and line.before != digest:
                    return (f"{path} seq {line.seq}: the old lines of device {device} before it "
                            "are not the ones it signed after (changed since)")  # fmt: skip
                return ""
            digest = signing.chain_next(digest, None, last, line.seq, line.data[:-1])
            last = line.seq
    return ""


def _first_seq(path: str) -> int:
    return int(path.rsplit("/", 1)[1].split(".", 1)[0])


def _settle(
    job: Join, tree: dict[str, str], joined: dict[str, list[versions.Line]]
) -> dict[str, bytes]:
    """Seal and write the joined versions into ``tree``; their plain bytes by path."""
    changed = {}
    for path, lines in joined.items():
        oid = job.whole.get(path) or job.git.write_blob(job.sealer.sealed_lines(path, lines))
        job.sealer.remember(path, oid, lines)
        tree[path] = oid
        changed[path] = versions.joined_bytes(lines)
    return changed


# -- heads -------------------------------------------------------------------------------


def _heads(
    job: Join, tree: dict[str, str], paths: list[str], known: set[str], highest: dict[str, int]
) -> list[Refusal]:
    """Check the heads the remote changed against the joined tree; keep the newest good
    one of each other device in ``tree``; raise ``highest``."""
    last = {device_of(p): i.last_seq for p, i in sorted(job.sealer.infos(tree).items())}
    held = _claimed(job, last)
    refusals: list[Refusal] = []
    heads: dict[str, tuple[str, Head]] = {}
    for path in paths:
        entry = job.other[path]
        if entry.oid in known or path == head_path(job.own):
            continue
        try:
            heads[device_of(path)] = (entry.oid, _head(job, path, entry.oid))
        except Unopenable as exc:
            refusals.append(Refusal(path, entry.oid, f"{path}: {exc}"))
    for device, (oid, head) in heads.items():
        problems = _head_problems(device, head, held, highest)
        refusals += [Refusal(head_path(device), oid, problem) for problem in problems]
        lives_up = last.get(device, 0) >= head.seq  # else this home's tree says less
        if not problems and lives_up and _newer(job, tree, device, head):
            tree[head_path(device)] = oid
        highest[device] = max(highest.get(device, 0), head.seq)
    return refusals


def _claimed(job: Join, last: dict[str, int]) -> dict[str, int]:
    """How far the remote holds each device's lines, or this home does, whichever is
    further (the remote's claim: lines refused for another reason were not removed)."""
    found = dict(last)
    for path, entry in job.other.items():
        data = job.blobs.get(entry.oid)
        if data is None or not _is_segment(path):
            continue
        cut = data.rfind(b"\n", 0, len(data) - 1)
        seq = sealed_seq(data[cut + 1 :])
        if seq is not None:
            found[device_of(path)] = max(found.get(device_of(path), 0), seq)
    return found


def _head_problems(
    device: str, head: Head, last: dict[str, int], highest: dict[str, int]
) -> list[str]:
    problems = []
    if highest.get(device, 0) > head.seq:
        problems.append(f"{device}: the remote's head went back from seq {highest[device]} to "
                        f"{head.seq} (an older copy of the remote?)")  # fmt: skip
    if last.get(device, 0) < head.seq:
        problems.append(f"{device}: its head says seq {head.seq}, the remote holds its lines to "
                        f"seq {last.get(device, 0)}: lines were removed")  # fmt: skip
    for other, seq in sorted(head.seen.items()):
        if last.get(other, 0) < seq:
            held = last.get(other, 0)
            problems.append(f"{other}: device {device} had received its lines to seq {seq}, the "
                            f"remote holds them to seq {held}: lines were removed")  # fmt: skip
    return problems


def _newer(job: Join, tree: dict[str, str], device: str, head: Head) -> bool:
    current = tree.get(head_path(device))
    if current is None:
        return True
    try:
        return _head(job, head_path(device), current).seq < head.seq
    except Unopenable:
        return True


def _head(job: Join, path: str, oid: str) -> Head:
    return job.sealer.head(device_of(path), oid, job.blobs.get(oid))


__all__ = ["Merged", "Refusal", "merge", "sealing"]
