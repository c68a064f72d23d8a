"""``memlog sync``: offer this home's events, take the remote's, push the union.

One sync, under a lock of its own:

0. the key is found (``--init`` makes one for a remote without memlog data,
   or takes the one given for a remote that has some: ``setup``);
1. the log moves to one directory per device if it was flat (``devices``);
2. the remote's branches are fetched: ``memlog`` and its roster (``team``),
   which is merged into this machine's pins; this device's new whole batches
   are checked, signed, sealed and committed (``local``);
3. the remote's branch is joined with ours under the roster (``merge``), the
   files that changed are written into ``events/`` under the append lock, the
   local branch moves to the join, and this device's head goes into the
   roster;
4. both branches are pushed at once (if someone pushed meanwhile, back to 3);
5. the clock floor is raised past every event received, and what was received
   is folded into the views (``views``): nothing, when nothing was; the
   entries late events touch, folded again; every home holding the same
   events has views of the same content, a replay's.

Every step leaves the log and the repository usable if the process is
killed: files are replaced atomically, refs move only after what they point
at exists, and the next sync starts from what is on disk.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import msgspec

from memlog.eventlog import clock, devices
from memlog.eventlog import segments as seg
from memlog.eventlog.codec import BadLine, decode_line
from memlog.eventlog.ids import utc_now
from memlog.eventlog.log import EventLog
from memlog.files import atomic_write
from memlog.home import ensure_dir
from memlog.locking import locked_within
from memlog.sync import keys, local, restore, sealed, setup, signing, team, versions, views
from memlog.sync.merge import Merged, held_by, is_device_file, merge
from memlog.sync.repo import (
    BRANCH,
    LOCAL_REF,
    NETWORK_TIMEOUT,
    REMOTE_REF,
    Git,
    SyncError,
    first_line,
)
from memlog.sync.roster import BRANCH as ROSTER_BRANCH
from memlog.sync.roster import Roster, Trust
from memlog.sync.sealed import FORMAT_FILE, SUFFIX, Key, Unopenable
from memlog.sync.sealing import Sealer, device_of, event_path, is_head
from memlog.sync.setup import Fetched
from memlog.sync.signing import DeviceKey
from memlog.sync.state import Asking, Outcome, SyncState, load_state, save_state
from memlog.vocabulary import MAX_EVENT_BYTES, Space

LOCK_NAME = ".sync.lock"
LOCK_WAIT = 60.0
PUSH_ATTEMPTS = 5


@contextmanager
def sync_lock(home: Path, wait: float = LOCK_WAIT) -> Iterator[int]:
    """The sync lock (its descriptor is inherited by every git a sync starts)."""
    ensure_dir(home)
    busy = "another sync is still running; try again later"
    with locked_within(home / LOCK_NAME, wait, lambda: SyncError(busy)) as fd:
        yield fd


class Asks(NamedTuple):
    """What a sync is asked to change in the roster or of this device's lines."""

    #: a device to evict
    evict: str | None = None
    #: who confirms a redaction of another device's text ("owner" or "any")
    redactions: str | None = None
    #: requests of other devices this device's owner confirms, or declines ("all": every one)
    confirm: tuple[str, ...] = ()
    decline: tuple[str, ...] = ()


#: a sync asked for nothing beyond itself
NO_ASKS = Asks()


def sync(
    home: Path, space: Space, remote: str | None = None, init: bool = False,
    key: str | None = None, asks: Asks = NO_ASKS,
) -> Outcome:  # fmt: skip
    """Sync ``home`` with ``remote`` (the configured one by default); see the module.
    ``key``: the sync key given to join a remote (else ``MEMLOG_SYNC_KEY``)."""
    with sync_lock(home) as fd:
        job = _run(home, remote, init, key, asks, fd)
        return _finish(job, space)


def rotate(home: Path, space: Space, asks: Asks = NO_ASKS) -> Outcome:
    """Sync, then seal everything the remote holds with a new team key, pushed on top of
    what every machine has (``memlog sync --rotate-key``); the other machines follow with
    ``--init URL --key -``.  The remote's history before it stays sealed with the old key."""
    with sync_lock(home) as fd:
        for _ in range(PUSH_ATTEMPTS):
            job = _run(home, None, False, None, asks, fd)
            made = Key.generate()
            branch, roster_commit = _resealed(job, made)
            if _push(job.git, job.url, branch, roster_commit):
                keys.store(home, made)
                job.state.sealed.clear()
                job.state.roster_commit = roster_commit or ""
                job.outcome.key_made = True
                job.outcome.notes.insert(0, _rotated_note(job))
                return _finish(job, space)
    raise SyncError(f"the remote kept moving; {PUSH_ATTEMPTS} pushes were refused")


def _rotated_note(job: Exchange) -> str:
    return (
        f"made a new team key and sealed {job.url} with it (kept in this home's "
        f"{keys.KEY_FILE}; the old one no longer opens what is pushed from now on).  Every "
        "other machine's sync now stops, saying the key changed, until it runs `memlog sync "
        f"--init {job.url} --key -` with the key `memlog sync --print-key` prints here (or "
        "MEMLOG_SYNC_KEY set to it); the remote's history from before stays sealed with the "
        "old key: make a new repository and --init it if that must go too"
    )


def _run(
    home: Path, remote: str | None, init: bool, key: str | None, asks: Asks, fd: int
) -> Exchange:
    """One sync's exchange with the remote, under the sync lock: set up, roster, take back,
    offer, join, write and push; the views are left to ``_finish``."""
    log = EventLog(home, command="sync")
    said: list[str] = []
    own = devices.device_id(log.events_dir, said.append)
    git = Git(home, own, fd)
    swept = git.sweep_stale_locks()
    ready = setup.ready(git, home, remote, init, key)  # before the layout changes: a
    migrated = _to_devices(log)  # home never set up for sync is left as it was
    outcome = Outcome(remote=ready.url, device=own, migrated=len(migrated), swept=swept)
    outcome.key_made, outcome.notes = ready.made, [*said, *ready.notes]
    state = load_state(git.git_dir)
    sealer = Sealer(ready.key, git, state.sealed, own)
    before = git.ref(REMOTE_REF)
    fetched = ready.fetched or setup.fetch(git, ready.url)
    setup.check_remote(git, sealer, ready.url, fetched.branch)
    job = Exchange(git, log, local.Files(log.events_dir, state.cache), sealer, own, ready.url,
                   state, outcome, asks)  # fmt: skip
    _take_roster(job, fetched)
    _check_asks(job)
    _take_back(job, fetched.branch)  # before it offers
    job.signer = _signer(job)
    _check_not_evicted(job)
    previous = job.trust.heads.get(job.own)
    job.offered = local.offer(git, job.files, job.own, sealer, job.signer, previous)
    outcome.held = job.offered.problems
    _exchange(job, fetched, before)
    state.pins = job.team.roster
    return job


def _finish(job: Exchange, space: Space) -> Outcome:
    """Raise the clock floor, tidy the repository, bring the views up to date, keep the
    state."""
    outcome, state = job.outcome, job.state
    home = job.log.home
    outcome.notes += _raise_floor(job.log.events_dir, job.own)
    job.git.tidy()
    began = time.perf_counter()
    outcome.views = views.settle(home, space)  # a failure there is a note
    outcome.views_seconds = round(time.perf_counter() - began, 3)
    outcome.devices = len(devices.device_dirs(job.log.events_dir))
    outcome.finished = utc_now()
    state.last = outcome
    save_state(job.git.git_dir, state)
    return outcome


def _resealed(job: Exchange, made: Key) -> tuple[str | None, str | None]:
    """The local branch and the roster sealed again with the new key ``made``, each
    committed on top of what was just pushed: (branch commit, roster commit)."""
    git, old = job.git, job.sealer.key
    head = git.ref(LOCAL_REF)
    tree = git.tree(head)
    blobs = git.blobs([e.oid for e in tree.values() if e.kind == "blob"])
    files: dict[str, str] = {}
    for path, entry in sorted(tree.items()):
        data = blobs.get(entry.oid, b"")
        if path == FORMAT_FILE:
            files[path] = git.write_blob(sealed.format_file(made, job.own, utc_now()))
        elif path.endswith(SUFFIX):
            segment = path.rsplit("/", 1)[1][: -len(SUFFIX)]
            files[path] = git.write_blob(sealed.reseal(old, made, device_of(path), segment, data))
        elif is_head(path):
            try:
                files[path] = git.write_blob(sealed.reseal_head(old, made, device_of(path), data))
            except Unopenable:
                continue  # it never opened: nothing of that device to keep
    branch = None
    if head is not None:
        branch = git.commit(git.write_tree(files), [head], "memlog: a new team key")
        git.update_ref(LOCAL_REF, branch, head)
    roster_commit = team.commit(git, made, job.team.roster, git.ref(team.REMOTE))
    return branch, roster_commit


def _check_asks(job: Exchange) -> None:
    """SyncError, before anything changes, for an eviction this sync cannot make."""
    evict = job.asks.evict
    if evict is None:
        return
    if evict == job.own:
        raise SyncError("a machine cannot evict itself: run memlog sync --evict on another one")
    listed = set(job.trust.keys) | set(job.trust.roster.legacy or {})
    if evict not in listed and evict not in devices.device_dirs(job.log.events_dir):
        raise SyncError(f"no device {evict} in the team (memlog sync --status lists them)")


def _to_devices(log: EventLog) -> list[str]:
    with log._locked():
        return devices.to_devices(log.events_dir)


@dataclass
class Exchange:
    """Everything one exchange with the remote works with."""

    git: Git
    log: EventLog
    files: local.Files
    sealer: Sealer
    own: str
    url: str
    state: SyncState
    outcome: Outcome
    asks: Asks
    #: the roster as merged with the pins, and what it refused
    team: team.Taken = field(default_factory=lambda: team.take(Roster(), None))
    signer: DeviceKey | None = None
    offered: local.Offered | None = None

    @property
    def trust(self) -> Trust:
        return self.team.trust


def _exchange(job: Exchange, fetched: Fetched, before: str | None) -> None:
    """Fetch, join, write, push; again while someone else's push got in first.
    ``fetched``: the remote's branches fetched a moment ago (not fetched again), and
    ``before``: where the remote stood when this home last looked."""
    git, files = job.git, job.files
    seen = {rel: files.blob_id(rel) for rel in files.paths()}
    for attempt in range(PUSH_ATTEMPTS):
        if attempt:
            before, fetched = git.ref(REMOTE_REF), setup.fetch(git, job.url)
            setup.check_remote(git, job.sealer, job.url, fetched.branch)
            _take_roster(job, fetched)
        theirs = fetched.branch
        job.outcome.refused += _went_back(git, before, theirs)
        ours = git.ref(LOCAL_REF)
        joined = _join(job, ours, theirs)
        _write(job, ours, joined, seen)
        head = git.ref(LOCAL_REF)
        roster_commit = _roster(job, head, fetched.roster, theirs)
        if attempt == 0:
            job.outcome.notes += _lost(job, before, theirs, head)
        if head == theirs and roster_commit == fetched.roster:
            job.state.roster_commit = roster_commit or ""
            return
        sent = _sent(job, head, theirs) if head is not None else 0
        if head is not None:
            keeps_theirs(job, theirs, {p: e.oid for p, e in git.tree(head).items()})
        if _push(git, job.url, head if head != theirs else None,
                 roster_commit if roster_commit != fetched.roster else None):  # fmt: skip
            job.outcome.sent += sent
            job.state.roster_commit = roster_commit or ""
            return
    raise SyncError(f"the remote kept moving; {PUSH_ATTEMPTS} pushes were refused")


# -- the roster --------------------------------------------------------------------------


def _take_roster(job: Exchange, fetched: Fetched) -> None:
    """The remote's roster merged into this machine's pins: what a sync trusts from now."""
    if fetched.roster is not None and fetched.roster == job.state.roster_commit:
        theirs, why = None, ""  # the roster this machine left there: in its pins already
    else:
        theirs, why = team.remote_roster(job.git, job.sealer.key, fetched.roster)
    earlier = job.team.trust if job.team.roster.devices else team.take(job.state.pins, None).trust
    job.team = team.take(job.state.pins, theirs, job.own)
    job.sealer.trust = job.team.trust
    job.sealer.format_bytes = setup.format_bytes(job.git, fetched.branch, job.sealer.key)
    said = [why] if why else []
    if fetched.roster is None and fetched.branch is not None and job.state.pins.devices:
        said.append("the remote has no roster (its branch memlog-roster was deleted?): this "
                    "machine's pinned one is pushed back")  # fmt: skip
    job.outcome.refused += _once(job, [*said, *job.team.refused])
    job.outcome.notes += _once(job, [*job.team.notes, *team.changes(earlier, job.trust, job.own)])


def _once(job: Exchange, lines: list[str]) -> list[str]:
    """The lines this machine has not told before (each is told at the sync that finds it)."""
    told = job.state.told
    fresh = [line for line in dict.fromkeys(lines) if line not in told]
    job.state.told = [*told, *fresh][-256:]
    return fresh


def _take_back(job: Exchange, branch: str | None) -> None:
    """This device's lines the remote holds that this home lacks, taken back; a home that
    cannot sign as its device (the roster holds another key of it) becomes a new one."""
    mine = job.trust.of(job.own)
    kept = signing.stored(job.log.home)
    keyless = mine is not None and (
        kept is None or kept.device != job.own
        or kept.public.public_bytes_raw() != mine.key.public_bytes_raw()
    )  # fmt: skip
    restored = restore.take_back(job.git, job.log, job.own, branch, job.sealer, keyless)
    job.outcome.notes += [restored.said] if restored.said else []
    job.own = job.outcome.device = job.sealer.own = restored.own


def _signer(job: Exchange) -> DeviceKey:
    key, made = signing.for_device(job.log.home, job.own)
    if made:
        job.outcome.notes.append(
            f"made this device's signing key (kept in {signing.KEY_FILE}, readable by you "
            "only, never sent): its public key goes in the team's roster, and every line this "
            "device sends is signed with it"
        )
    return key


def _check_not_evicted(job: Exchange) -> None:
    eviction = job.trust.evictions.get(job.own)
    if eviction is not None:
        raise SyncError(
            f"this device ({job.own}) was evicted from the team by device {eviction.by} "
            f"({eviction.at[:10]}): every machine refuses its lines after seq {eviction.after}; "
            "its events stay here.  To sync again, ask a machine of the team for a new key "
            "and join as a new device: move this home's sync.device.key aside, then "
            "memlog sync --init URL --key -"
        )


def _claimed(job: Exchange, commit: str | None, device: str) -> int:
    """The last sequence the remote's files of ``device`` name, whether they open or not."""
    oids = [
        e.oid for p, e in job.git.tree(commit).items()
        if p.startswith(device + "/") and p.endswith(SUFFIX) and is_device_file(p, e)
    ]  # fmt: skip
    data = job.git.blobs(oids) if oids else {}
    return max((sealed.last_seq(blob) for blob in data.values()), default=0)


def _roster(
    job: Exchange, head: str | None, theirs: str | None, theirs_branch: str | None
) -> str | None:
    """The roster to push: the merged one, with this device's head, the evictions and
    policy asked for, and the old lines' last sequences when the remote takes this format;
    committed onto the roster branch (the commit, or the remote's when nothing changed)."""
    assert job.signer is not None and job.offered is not None and job.offered.chain is not None
    last = job.sealer.last_seqs(job.git.tree(head))
    previous = job.trust.heads.get(job.own)
    requests = team.requests_of(job.offered.asks, previous, job.trust)
    answers = _answers(job)
    seen = {device: seq for device, seq in last.items() if device != job.own}
    head_now = team.head_of(job.own, job.offered.chain, seen, requests, answers, previous,
                            job.team.roster)  # fmt: skip
    found = team.with_head(job.team.roster, job.signer, head_now, previous)
    found = _asked_changes(job, found, last)
    unsigned = {d: s for d, s in last.items() if d != job.own and job.trust.of(d) is None}
    if job.offered.chain.first > 1:
        unsigned[job.own] = job.offered.chain.first - 1
    found = team.with_legacy(found, unsigned)
    job.team = team.take(found, None, job.own)
    job.sealer.trust = job.team.trust
    claimed = functools.partial(_claimed, job, theirs_branch)
    job.outcome.refused += _once(job, team.check_heads(job.trust, last, job.own, claimed))
    if not found.devices:
        return theirs
    return team.commit(job.git, job.sealer.key, found, theirs)


def _asked_changes(job: Exchange, found: Roster, last: dict[str, int]) -> Roster:
    """``found`` with the eviction and the redaction policy this sync was asked for."""
    from memlog.sync.roster import Eviction, Policy, sign_eviction, sign_policy

    assert job.signer is not None
    evict, policy = job.asks.evict, job.asks.redactions
    if evict is not None and evict not in found.evicted:
        eviction = Eviction(evict, job.own, utc_now(), last.get(evict, 0))
        found = msgspec.structs.replace(
            found, evicted={**found.evicted, evict: sign_eviction(job.signer, eviction)}
        )
    if policy is not None and job.trust.redactions != policy:
        made = Policy(policy, job.own, utc_now(), time.time_ns() // 1000)  # type: ignore[arg-type]
        found = msgspec.structs.replace(found, policy=sign_policy(job.signer, made))
    return found


def _answers(job: Exchange) -> dict[str, str]:
    """This device's answers to the requests other devices make of it (the ones waiting
    for its owner go into ``outcome.asked``)."""
    asked = team.asked_of(job.trust, job.own)
    state, asks = job.state, job.asks
    answers = {
        a.request.id: state.answers[a.request.id] for a in asked if a.request.id in state.answers
    }
    lines = _own_lines(job, {a.request.seq for a in asked}) if asked else {}
    job.outcome.asked = []
    for item in asked:
        ident = item.request.id
        status = team.checked(item, lines.get(item.request.seq))
        if status == "done" or answers.get(ident) == "declined":
            answers[ident] = answers.get(ident) or "done"
        elif status or ident in asks.decline or "all" in asks.decline:
            answers[ident] = "declined"
            why = status or "declined by this device's owner"
            job.outcome.notes += _once(job, [f"declined device {item.by}'s request to take text "
                                             f"out of seq {item.request.seq}: {why}"])  # fmt: skip
        else:
            now = job.trust.redactions == "any" or ident in state.confirmed
            now = now or ident in asks.confirm or "all" in asks.confirm
            job.outcome.asked.append(Asking(id=ident, by=item.by, seq=item.request.seq,
                                            event=item.request.event, line=item.request.line,
                                            applied_without_asking=now))  # fmt: skip
    state.answers = answers
    state.confirmed = [a.id for a in job.outcome.asked if a.applied_without_asking]
    return answers


def _own_lines(job: Exchange, seqs: set[int]) -> dict[int, versions.Line]:
    """This device's lines at ``seqs``, as ``events/`` holds them."""
    found = {}
    for rel, path in sorted(job.files.paths().items()):
        if rel.startswith(job.own + "/"):
            try:
                lines = versions.parse(rel, path.read_bytes())
            except versions.Refused:
                continue
            found.update({line.seq: line for line in lines if line.seq in seqs})
    return found


def _lost(job: Exchange, before: str | None, theirs: str | None, pushed: str | None) -> list[str]:
    """Lines the remote held when this home last looked and holds no longer (files deleted
    or cut short there), named with what this sync puts back."""
    git = job.git
    if before is None or theirs is None or before == theirs or not git.is_ancestor(before, theirs):
        return []
    was, now = git.tree(before), git.tree(theirs)
    held, sent = job.sealer.reach(now), job.sealer.last_seqs(git.tree(pushed))
    said = []
    for device, seq in sorted(job.sealer.reach(was).items()):
        if held.get(device, 0) >= seq:
            continue
        gone = sorted(p for p in was if p.startswith(device + "/") and p not in now)
        how = f"{', '.join(gone)} deleted" if gone else "cut short"
        back = ("restored from this home" if sent.get(device, 0) >= seq
                else "this home does not hold them either")  # fmt: skip
        said.append(f"the remote lost device {device}'s lines seq {held.get(device, 0) + 1}.."
                    f"{seq} ({how}): {back}")  # fmt: skip
    return said


def _went_back(git: Git, before: str | None, theirs: str | None) -> list[str]:
    """The remote's branch moved back since this home last saw it (sync never does that:
    someone rewound or replaced it); this home's events stand and are pushed again."""
    if (
        before is None
        or before == theirs
        or (theirs is not None and git.is_ancestor(before, theirs))
    ):
        return []
    now = theirs[:12] if theirs is not None else "nothing"
    return [f"the remote's branch went back from {before[:12]} to {now} (rewound or replaced "
            "by someone else): this home's events stand and are sent again"]  # fmt: skip


def _join(job: Exchange, ours: str | None, theirs: str | None) -> Merged | None:
    """Join ``theirs`` into the local branch (which moves); None when there is nothing to join."""
    git, state = job.git, job.state
    if theirs is None or theirs == ours or (ours is not None and git.is_ancestor(theirs, ours)):
        return None
    joined = merge(git, job.sealer, job.own, ours, theirs, state.refused, state.heads)
    for refusal in joined.refused:
        job.outcome.refused.append(refusal.reason)
        if refusal.lasting:
            state.refused.append(refusal.blob)
        _quarantine(job, refusal.path, refusal.data or _bytes_of(git, refusal.blob),
                    f"from the remote: {refusal.reason} (object {refusal.blob})")  # fmt: skip
    theirs_tree = {path: entry.oid for path, entry in git.tree(theirs).items()}
    tree = dict(joined.tree)
    job.sealer.finish(tree)
    keeps_theirs(job, theirs, tree)
    if tree == theirs_tree and not joined.refused:
        new = theirs
    else:
        parents = [ours, theirs] if ours else [theirs]
        new = git.commit(git.write_tree(tree), parents, "memlog: join")
    git.update_ref(LOCAL_REF, new, ours)
    return joined


def keeps_theirs(job: Exchange, theirs: str | None, tree: dict[str, str]) -> None:
    """SyncError unless ``tree`` holds every file of another device the remote's commit
    ``theirs`` holds, with every line of it that opens (only a redaction, which keeps
    each line's sequence and event, changes one): no sync takes another device's files
    or lines off the remote."""
    if theirs is None:
        return
    for path, entry in job.git.tree(theirs).items():
        device = device_of(path)
        if device == job.own or not is_device_file(path, entry) or tree.get(path) == entry.oid:
            continue
        if path in tree and is_head(path):
            continue  # a newer head of that device, or one that opened where theirs did not
        wanted = held_by(job.sealer, path, entry.oid)
        if not wanted:
            continue  # nothing in it opens with the key: nothing of that device to lose
        if path not in tree:
            raise SyncError(f"refused to push: it would take {path} (device {device}) off "
                            "the remote; nothing was pushed")  # fmt: skip
        held = versions.ids_of(job.sealer.open(path, job.git.blobs([tree[path]])[tree[path]]))
        if not versions.covers(held, wanted):
            lost = sorted(s for s, i in wanted.items() if held.get(s) != i)
            raise SyncError(f"refused to push: it would take seq {lost[0]}..{lost[-1]} of "
                            f"{path} (device {device}) off the remote; nothing was "
                            "pushed")  # fmt: skip


#: the most of one refused object kept in the quarantine file
QUARANTINE_KEPT = 4 * MAX_EVENT_BYTES


def _quarantine(job: Exchange, path: str, data: bytes, reason: str) -> None:
    if len(data) > QUARANTINE_KEPT:
        reason += f"; its first {QUARANTINE_KEPT >> 10} KiB of {len(data) >> 10} KiB kept"
        data = data[:QUARANTINE_KEPT]
    seg.quarantine(job.log.home, path, 0, data, reason)


def _bytes_of(git: Git, oid: str) -> bytes:
    """A refused object's bytes to keep (none when it is no blob, e.g. a submodule)."""
    try:
        return git.blobs([oid])[oid]
    except SyncError:
        return b""


def _write(
    job: Exchange, ours: str | None, joined: Merged | None, seen: dict[str, str | None]
) -> None:
    """Make ``events/`` hold the local branch's segments (this device's: written back when
    deleted here); another device's with the text this home took out of it left out, and
    (when any machine confirms a redaction) the redactions the team asked of it made."""
    git, log, files, sealer, outcome = job.git, job.log, job.files, job.sealer, job.outcome
    tree = {p: e.oid for p, e in git.tree(git.ref(LOCAL_REF)).items() if p.endswith(SUFFIX)}
    joined_from = {path: entry.oid for path, entry in git.tree(ours).items()}
    changed = joined.changed if joined is not None else {}
    infos = sealer.infos(tree)
    asked = _asked_by_device(job)
    with log._locked():
        for path, oid in sorted(tree.items()):
            rel = event_path(path)
            if path.startswith(job.own + "/"):
                if not (log.events_dir / rel).exists():
                    atomic_write(log.events_dir / rel, sealer.plain(path, oid), log.home)  # deleted
                continue
            current = files.blob_id(rel)
            requests = asked.get(device_of(path), {})
            if current == infos[path].plain_id and not requests:
                continue
            old = files.read(rel) or b""
            data = _overlaid(rel, changed.get(path) or sealer.plain(path, oid), old, requests)
            if current == versions.blob_id(data):
                continue
            if current != seen.get(rel):
                outcome.held.append(f"{rel} changed here during sync; the next sync takes it")
                continue
            if not data or not _grows(old, data):
                continue  # this home holds lines the remote's version lacks: kept, not offered
            was = joined_from.get(path)
            taken = sealer.plain_as_taken(path, was) if was is not None else None
            joined_in = current is None or (
                taken is not None and old in (taken, _overlaid(rel, taken, old, requests))
            )
            outcome.received += _replace_foreign(log, files, rel, data, keep_old=not joined_in)
            seen[rel] = files.blob_id(rel)  # written here: not a change made meanwhile


def _asked_by_device(job: Exchange) -> dict[str, dict[int, bytes]]:
    """When any machine confirms a redaction of another device's text: the lines the
    team's requests ask for, by device and sequence."""
    if job.trust.redactions != "any":
        return {}
    found: dict[str, dict[int, bytes]] = {}
    for device, head in job.trust.heads.items():
        if device in job.trust.evictions:
            continue
        for request in head.requests:
            if request.target != job.own:
                found.setdefault(request.target, {})[request.seq] = request.line.encode() + b"\n"
    return found


def _overlaid(rel: str, data: bytes, old: bytes, requests: dict[int, bytes]) -> bytes:
    """Another device's segment as its device signed it (``data``), with the lines this
    home's copy ``old`` holds with text taken out kept so, and the lines ``requests`` ask
    for taken in the same way."""
    try:
        lines = versions.parse(rel, data)
        mine = {line.seq: line for line in versions.parse(rel, old)} if old else {}
    except versions.Refused:
        return data
    out = []
    for line in lines:
        kept = line
        for other in (mine.get(line.seq), _line_or_none(rel, requests.get(line.seq))):
            if (
                other is not None and other.id == line.id and other.data != kept.data
                and versions.is_redaction(other.event, kept.event)
            ):  # fmt: skip
                kept = other
        out.append(kept.data)
    return b"".join(out)


def _line_or_none(rel: str, data: bytes | None) -> versions.Line | None:
    """The event line ``data`` a request asks for, when it decodes."""
    if data is None or data.count(b"\n") != 1:
        return None
    try:
        event = decode_line(data[:-1])
    except BadLine:
        return None
    return versions.Line(event.seq, event.id, data, event)


def _grows(old: bytes, new: bytes) -> bool:
    """Whether ``new`` holds every event of the copy ``old`` of another device's segment
    under its sequence (a damaged line of ``old`` counts for nothing): a copy is replaced
    only by one that loses none of its events."""
    return versions.covers(versions.plain_ids(new), versions.plain_ids(old))


def _plain_id(job: Exchange, path: str, oid: str) -> str:
    return job.sealer.info(path, oid).plain_id


def _replace_foreign(
    log: EventLog, files: local.Files, path: str, data: bytes, keep_old: bool
) -> int:
    """Write another device's segment; with ``keep_old``, a local copy that took no part
    in the join (a damaged one) goes to the quarantine file, unless the new one extends
    it.  Returns how many events the file gained."""
    old = files.read(path) or b""
    if keep_old and old and not data.startswith(old):
        seg.quarantine(log.home, path, 0, old, "this home's copy, replaced by the synced one")
    target = log.events_dir / path
    if not target.parent.is_dir():
        ensure_dir(target.parent)
        seg.fsync_dir(log.events_dir)
    atomic_write(target, data, log.home)
    clock.raise_floor(log.events_dir, clock.last_stamp([target]))  # before anything appends
    return max(0, data.count(b"\n") - old.count(b"\n"))


def _sent(job: Exchange, head: str, theirs: str | None) -> int:
    """Events of this device that ``head`` has and ``theirs`` lacks."""
    mine = {p: e for p, e in job.git.tree(head).items() if p.startswith(job.own + "/")}
    remote = {p: e for p, e in job.git.tree(theirs).items() if p.startswith(job.own + "/")}
    have = sum(i.lines for i in job.sealer.infos(mine).values())
    return max(0, have - job.sealer.count_lines(remote))


def _push(git: Git, url: str, head: str | None, roster: str | None) -> bool:
    """Push the local branch and the roster's (those that moved), at once; False when the
    remote moved on first."""
    refs = [
        (LOCAL_REF, BRANCH, REMOTE_REF, head),
        (team.LOCAL, ROSTER_BRANCH, team.REMOTE, roster),
    ]
    moving = [(local_ref, name, remote_ref, c) for local_ref, name, remote_ref, c in refs if c]
    if not moving:
        return True
    refspecs = [f"{c}:refs/heads/{name}" for _, name, _, c in moving]
    atomic = ["--atomic"] if len(refspecs) > 1 else []
    done = git.call("push", "--porcelain", *atomic, url, *refspecs, timeout=NETWORK_TIMEOUT)
    if done.returncode != 0 and atomic and b"atomic" in done.stderr and b"support" in done.stderr:
        done = git.call("push", "--porcelain", url, *refspecs, timeout=NETWORK_TIMEOUT)
    if done.returncode == 0:
        for _, _, remote_ref, commit in moving:
            git.run("update-ref", remote_ref, commit)
        return True
    if _moved_on(done.stdout + done.stderr):
        return False
    raise SyncError(f"cannot push to {url}: {first_line(done.stderr, done.returncode)}")


def _moved_on(said: bytes) -> bool:
    """Whether a push failed because the remote branch moved (or was being moved) meanwhile."""
    return any(
        sign in said
        for sign in (b"[rejected]", b"fetch first", b"non-fast-forward", b"cannot lock ref",
                     b"failed to update ref", b"incorrect old value")
    )  # fmt: skip


def _raise_floor(events_dir: Path, own: str) -> list[str]:
    """Events appended from now on sort after every event received; a note when that
    puts this machine's events ahead of its own clock (another clock runs fast)."""
    stamps = {
        device: clock.last_stamp(seg.list_segments(events_dir / device))
        for device in devices.device_dirs(events_dir)
        if device != own
    }
    if not stamps:
        return []
    newest = max(stamps.values())
    clock.raise_floor(events_dir, newest)
    ahead = (newest - clock.now_micros()) / 3.6e9
    if ahead < 1:
        return []
    device = max(stamps, key=lambda d: stamps[d])
    far = f"{ahead / 24:.0f} days" if ahead >= 48 else f"{ahead:.0f} h"
    return [
        f"device {device} stamps its events {far} ahead of this machine's clock (one of the "
        "two clocks is wrong: check both); its events are taken, and those written here are "
        "stamped after them"
    ]
