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

import time
from collections.abc import Iterator
from contextlib import contextmanager

from memlog.eventlog import devices
from memlog.eventlog import segments as seg
from memlog.eventlog.ids import utc_now
from memlog.eventlog.log import EventLog
from memlog.home import Home, ensure_dir
from memlog.locking import locked_within
from memlog.sync import keys, local, members, setup, team, versions, views, writing
from memlog.sync.job import NO_ASKS, Asks, Exchange
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
from memlog.sync.sealed import Key
from memlog.sync.sealing import Sealer, device_of, is_head
from memlog.sync.setup import Fetched
from memlog.sync.state import Outcome, load_state, save_state
from memlog.vocabulary import MAX_EVENT_BYTES, Space

LOCK_WAIT = 60.0
PUSH_ATTEMPTS = 5


@contextmanager
def sync_lock(home: Home, wait: float = LOCK_WAIT) -> Iterator[int]:
    """The sync lock (its descriptor is inherited by every git a sync starts)."""
    ensure_dir(home)
    busy = "another sync is still running; try again later"
    with locked_within(home.sync_lock, wait, lambda: SyncError(busy)) as fd:
        yield fd


def sync(
    home: Home, space: Space, remote: str | None = None, init: bool = False,
    key: str | None = None, asks: Asks = NO_ASKS,
) -> Outcome:  # fmt: skip
    """Sync ``home`` with ``remote`` (the configured one by default); see the module.
    ``key``: the sync key given to join a remote (else ``MEMLOG_SYNC_KEY``)."""
    with sync_lock(home) as fd:
        job = _run(home, remote, init, key, asks, fd)
        return _finish(job, space)


def rotate(home: Home, space: Space, asks: Asks = NO_ASKS) -> Outcome:
    """Sync, then seal everything the remote holds with a new team key, pushed on top of
    what every machine has (``memlog sync --rotate-key``); the other machines follow with
    ``--init URL --key -``.  The remote's history before it stays sealed with the old key."""
    with sync_lock(home) as fd:
        for _ in range(PUSH_ATTEMPTS):
            job = _run(home, None, False, None, asks, fd)
            made = Key.generate()
            branch, roster_commit = members.resealed(job, made)
            if _push(job.git, job.url, branch, roster_commit):
                keys.store(home, made)
                job.state.sealed.clear()
                job.state.roster_commit = roster_commit or ""
                job.outcome.key_made = True
                job.outcome.notes.insert(0, members.rotated_note(job))
                return _finish(job, space)
    raise SyncError(f"the remote kept moving; {PUSH_ATTEMPTS} pushes were refused")


def _run(
    home: Home, remote: str | None, init: bool, key: str | None, asks: Asks, fd: int
) -> Exchange:
    """One sync's exchange with the remote, under the sync lock: set up, roster, take back,
    offer, join, write and push; the views are left to ``_finish``."""
    log = EventLog(home, command="sync")
    said: list[str] = []
    own = devices.device_id(log.home, said.append)
    git = Git(home, own, fd)
    swept = git.sweep_stale_locks()
    ready = setup.ready(git, home, remote, init, key)  # before the layout changes: a
    migrated = _to_devices(log)  # home never set up for sync is left as it was
    outcome = Outcome(remote=ready.url, device=own, migrated=len(migrated), swept=swept)
    outcome.key_made, outcome.notes = ready.made, [*said, *ready.notes]
    state = load_state(git.home)
    sealer = Sealer(ready.key, git, state.sealed, own)
    before = git.ref(REMOTE_REF)
    fetched = ready.fetched or setup.fetch(git, ready.url)
    setup.check_remote(git, sealer, ready.url, fetched.branch)
    job = Exchange(git, log, local.Files(log.home, state.cache), sealer, own, ready.url,
                   state, outcome, asks)  # fmt: skip
    members.take_roster(job, fetched)
    members.check_asks(job)
    members.take_back(job, fetched.branch)  # before it offers
    job.signer = members.signer_of(job)
    members.check_not_evicted(job)
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
    outcome.notes += writing.raise_floor(job.log.home, job.own)
    job.git.tidy()
    began = time.perf_counter()
    outcome.views = views.settle(home, space)  # a failure there is a note
    outcome.views_seconds = round(time.perf_counter() - began, 3)
    outcome.devices = len(devices.device_dirs(job.log.home))
    outcome.finished = utc_now()
    state.last = outcome
    save_state(job.git.home, state)
    return outcome


def _to_devices(log: EventLog) -> list[str]:
    with log._locked():
        return devices.to_devices(log.home)


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
            members.take_roster(job, fetched)
        theirs = fetched.branch
        job.outcome.refused += _went_back(git, before, theirs)
        ours = git.ref(LOCAL_REF)
        joined = _join(job, ours, theirs)
        writing.write(job, ours, joined, seen)
        head = git.ref(LOCAL_REF)
        roster_commit = members.roster_to_push(job, head, fetched.roster, theirs)
        if attempt == 0:
            job.outcome.notes += writing.lost(job, before, theirs, head)
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
