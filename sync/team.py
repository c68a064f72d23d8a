"""The team's side of a sync: the roster fetched and pinned, this device's head, the
redactions asked of it and by it, and the roster pushed beside the branch.

The roster (``roster``) lives on its own branch, ``memlog-roster``: one commit
whose tree holds ``roster.sealed``.  Each sync merges the remote's roster into
this machine's pins (``trust.merge``), writes this device's head into it
(signed, only when what it says changed), sets the old lines' last sequences
when the remote takes this format, and commits it on top of the remote's
roster commit so that both branches are pushed together, fast-forward.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import NamedTuple

import msgspec

from memlog.eventlog import codec
from memlog.eventlog.codec import BadLine
from memlog.eventlog.ids import utc_now
from memlog.sync import roster, versions
from memlog.sync import trust as trust_of
from memlog.sync.local import Ask, Chain
from memlog.sync.repo import Git
from memlog.sync.roster import Head, Request, Roster
from memlog.sync.sealed import Key, Unopenable
from memlog.sync.signing import DeviceKey
from memlog.sync.trust import Trust

LOCAL = f"refs/heads/{roster.BRANCH}"
REMOTE = f"refs/remotes/sync/{roster.BRANCH}"


class Taken(NamedTuple):
    """The remote's roster merged into the pins: what this machine trusts, the roster to
    push, and what was refused or worth saying."""

    trust: Trust
    roster: Roster
    refused: list[str]
    notes: list[str]


def remote_roster(git: Git, key: Key, commit: str | None) -> tuple[Roster | None, str]:
    """The roster of the remote's roster commit (None: none there), and why it was refused
    when it does not open ("" when it did)."""
    if commit is None:
        return None, ""
    entry = git.tree(commit).get(roster.FILE)
    if entry is None or entry.kind != "blob":
        return None, f"the remote's branch {roster.BRANCH} holds no roster"
    if entry.size > roster.MAX_BYTES:
        return None, f"the remote's roster is {entry.size >> 20} MiB, longer than a roster may be"
    try:
        return roster.open_roster(key, git.blobs([entry.oid])[entry.oid]), ""
    except Unopenable as exc:
        return None, f"the remote's roster: {exc}"


def take(pins: Roster, theirs: Roster | None, own: str = "") -> Taken:
    merged = trust_of.merge(pins, theirs, own)
    trust = trust_of.Trust(merged.roster, merged.keys, own)
    return Taken(trust, merged.roster, merged.refused, merged.notes)


def changes(before: Trust, after: Trust, own: str) -> list[str]:
    """What the roster says now that it did not before: devices that joined, evictions,
    the redaction policy (one line each)."""
    said = [
        f"device {device} joined the team (its signing key is pinned here)"
        for device in sorted(set(after.keys) - set(before.keys))
        if device != own and before.keys
    ]
    for device, eviction in sorted(after.evictions.items()):
        if device not in before.evictions:
            said.append(f"device {device} was evicted by device {eviction.by} "
                        f"({eviction.at[:10]}): its lines after seq {eviction.after} are "
                        "refused")  # fmt: skip
    if after.policy is not None and after.policy != before.policy:
        who = "any machine" if after.policy.redactions == "any" else "the device's owner"
        said.append(f"device {after.policy.by} set who confirms a redaction of another "
                    f"device's text: {who}")  # fmt: skip
    return said


# -- this device's head ------------------------------------------------------------------


def requests_of(asks: list[Ask], previous: Head | None, trust: Trust) -> tuple[Request, ...]:
    """This device's requests: the ones it made before that their device has not done yet
    (declined ones stay: they keep this home's copy without the text, whatever writes it
    again), and one per line of another device this home holds with text taken out (the
    newest for a line)."""
    made = {(r.target, r.seq): r for r in previous.requests} if previous is not None else {}
    for ask in asks:
        line = ask.line.decode("utf-8", "replace")
        ident = request_id(ask.target, ask.seq, ask.event, line)
        was = made.get((ask.target, ask.seq))
        if was is None or was.id != ident:
            made[(ask.target, ask.seq)] = Request(ident, ask.target, ask.seq, ask.event, line,
                                                  at=utc_now())  # fmt: skip
    return tuple(
        request for _, request in sorted(made.items()) if answer_to(trust, request) != "done"
    )


def answer_to(trust: Trust, request: Request) -> str | None:
    """What the device asked answered (None: nothing yet)."""
    head = trust.heads.get(request.target)
    return head.answers.get(request.id) if head is not None else None


def request_id(target: str, seq: int, event: str, line: str) -> str:
    from memlog import digests

    text = f"{target}\0{seq}\0{event}\0{line}".encode()
    return digests.sha256(text).hexdigest()[:16]


def head_of(
    own: str, chain: Chain, seen: dict[str, int], requests: tuple[Request, ...],
    answers: dict[str, str], previous: Head | None, found: Roster,
) -> Head:  # fmt: skip
    """This device's head as it stands; the previous one when it says the same."""
    keys = {d: roster.fingerprint(m.key) for d, m in sorted(found.devices.items()) if d != own}
    wanted = Head(
        device=own, n=0, seq=chain.seq, tip=chain.tip.hex(), gen=chain.gen,
        rewrites=chain.rewrites, first=chain.first, seen=dict(sorted(seen.items())),
        requests=_bounded(requests), answers=dict(sorted(answers.items())), keys=keys,
    )  # fmt: skip
    if previous is not None and previous.same_as(msgspec.structs.replace(wanted, at=previous.at)):
        return previous
    now = time.time_ns() // 1000
    n = max(now, previous.n + 1) if previous is not None else now
    return msgspec.structs.replace(wanted, n=n, at=utc_now())


def _bounded(requests: tuple[Request, ...]) -> tuple[Request, ...]:
    """As many requests as a head holds (the rest wait for the next sync)."""
    kept, size = [], 0
    for request in requests:
        size += len(request.line) + 200
        if size > roster.MAX_HEAD_BYTES:
            break
        kept.append(request)
    return tuple(kept)


def with_head(found: Roster, key: DeviceKey, head: Head, previous: Head | None) -> Roster:
    """``found`` with this device's membership and head (signed anew only when it changed)."""
    devices = dict(found.devices)
    if key.device not in devices:
        devices[key.device] = roster.member(key, utc_now())
    heads = dict(found.heads)
    if previous is None or head is not previous:
        heads[key.device] = roster.sign_head(key, head)
    return msgspec.structs.replace(found, devices=devices, heads=heads)


def with_legacy(found: Roster, last_unsigned: dict[str, int]) -> Roster:
    """The old lines' last sequences, set once: when the remote takes this format."""
    if found.legacy is not None:
        return found
    return msgspec.structs.replace(found, legacy=dict(sorted(last_unsigned.items())))


# -- requests of other devices to this one -----------------------------------------------


class Asked(NamedTuple):
    """A request to this device: who asked, and the line it asks for."""

    by: str
    request: Request


def asked_of(trust: Trust, own: str) -> list[Asked]:
    """Every request a device of the roster (not evicted) makes of this device."""
    found = []
    for device, head in sorted(trust.heads.items()):
        if device == own or device in trust.evictions:
            continue
        found += [Asked(device, r) for r in head.requests if r.target == own]
    return found


def checked(asked: Asked, current: versions.Line | None) -> str:
    """ "" when the request takes text out of this device's line as it stands, "done" when
    the line already is the one asked for (or has less text), else why it cannot be."""
    request = asked.request
    if current is None or current.id != request.event:
        return f"seq {request.seq} is not event {request.event} here"
    try:
        wanted = codec.decode_line(request.line.encode() + b"\n")
    except BadLine as exc:
        return f"not an event line ({exc.reason})"
    if wanted.seq != request.seq or wanted.id != request.event:
        return "the line asked for is another event"
    if current.data == request.line.encode() + b"\n" or versions.is_redaction(
        current.event, wanted
    ):
        return "done"
    if not versions.is_redaction(wanted, current.event):
        return "it changes the line otherwise than by taking text out"
    return ""


# -- the roster's branch -----------------------------------------------------------------


def commit(git: Git, key: Key, found: Roster, theirs: str | None) -> str | None:
    """Commit ``found`` onto the local roster branch, on top of the remote's roster commit
    ``theirs`` (which it joins); the commit the branch then points at."""
    ours = git.ref(LOCAL)
    data = roster.seal(key, found)
    for candidate in (theirs, ours):
        if candidate is not None and _holds(git, candidate, data):
            if candidate == theirs or theirs is None or git.is_ancestor(theirs, candidate):
                git.update_ref(LOCAL, candidate, ours)
                return candidate
    tree = git.write_tree({roster.FILE: git.write_blob(data)})
    parents = [p for p in dict.fromkeys([ours, theirs]) if p is not None]
    if ours is not None and theirs is not None and git.is_ancestor(ours, theirs):
        parents = [theirs]
    made = git.commit(tree, parents, "memlog: roster")
    git.update_ref(LOCAL, made, ours)
    return made


def _holds(git: Git, commit_id: str, data: bytes) -> bool:
    entry = git.tree(commit_id).get(roster.FILE)
    return entry is not None and entry.oid == versions.blob_id(data)


def check_heads(
    trust: Trust, last: dict[str, int], own: str, claimed: Callable[[str], int]
) -> list[str]:
    """Devices whose lines neither the joined tree nor the remote (``claimed``: the last
    sequence the remote's files of a device name, opened or not: lines refused for
    another reason were not removed) hold as far as a head in the roster says they were
    offered: files deleted or cut short, or the branch forced back."""
    problems = []
    for device, head in sorted(trust.heads.items()):
        held = last.get(device, 0)
        if device != own and held < head.seq and max(held, claimed(device)) < head.seq:
            problems.append(
                f"{device}: its head (signed {head.at[:16]}) says seq {head.seq}, the remote "
                f"holds its lines to seq {held}: lines were removed (files "
                "deleted or cut short, or the branch forced back to an older commit)"
            )
        for other, seq in sorted(head.seen.items()):
            if other != own and last.get(other, 0) < seq and other not in trust.heads:
                problems.append(
                    f"{other}: device {device} had received its lines to seq {seq}, the remote "
                    f"holds them to seq {last.get(other, 0)}: lines were removed"
                )
    return problems
