"""``memlog sync``: offer this home's events, take the remote's, push the union.

One sync, under a lock of its own:

0. the key is found (``--init`` makes one for a remote without memlog data,
   or takes the one given for a remote that has some: ``setup``);
1. the log moves to one directory per device if it was flat (``devices``);
2. this device's new whole batches are checked, sealed and committed
   (``local``);
3. the remote's branch is fetched, its format and key checked, and joined
   with ours (``merge``), the files that changed are written into
   ``events/`` under the append lock, and the local branch moves to the join;
4. the join is pushed (if someone pushed meanwhile, back to 3);
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
from pathlib import Path
from typing import NamedTuple

from memlog.eventlog import clock, devices, screening
from memlog.eventlog import segments as seg
from memlog.eventlog.ids import utc_now
from memlog.eventlog.log import EventLog
from memlog.files import atomic_write
from memlog.home import ensure_dir
from memlog.locking import locked_within
from memlog.sync import local, restore, setup, views
from memlog.sync.merge import Merged, merge
from memlog.sync.repo import (
    BRANCH,
    LOCAL_REF,
    NETWORK_TIMEOUT,
    REMOTE_REF,
    Git,
    SyncError,
    first_line,
)
from memlog.sync.sealed import SUFFIX
from memlog.sync.sealing import Sealer, event_path
from memlog.sync.state import Outcome, SyncState, load_state, save_state
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


def sync(
    home: Path, space: Space, remote: str | None = None, init: bool = False,
    key: str | None = None,
) -> Outcome:  # fmt: skip
    """Sync ``home`` with ``remote`` (the configured one by default); see the module.
    ``key``: the sync key given to join a remote (else ``MEMLOG_SYNC_KEY``)."""
    with sync_lock(home) as fd:
        log = EventLog(home, command="sync")
        own = devices.device_id(log.events_dir)
        git = Git(home, own, fd)
        swept = git.sweep_stale_locks()
        ready = setup.ready(git, home, remote, init, key)  # before the layout changes: a
        migrated = _to_devices(log)  # home never set up for sync is left as it was
        outcome = Outcome(remote=ready.url, device=own, migrated=len(migrated), swept=swept)
        outcome.key_made, outcome.notes = ready.made, list(ready.notes)
        state = load_state(git.git_dir)
        sealer = Sealer(ready.key, git, state.sealed)
        before = git.ref(REMOTE_REF)
        fetched = ready.fetched or (setup.fetch(git, ready.url),)
        setup.check_remote(git, sealer, ready.url, fetched[0])
        restored = restore.take_back(git, log, own, fetched[0], sealer)  # before it offers
        outcome.notes += [restored] if restored else []
        files = local.Files(log.events_dir, state.cache)
        offered = local.offer(git, files, own, sealer)
        outcome.held = offered.problems
        job = Exchange(git, log, files, sealer, own, ready.url, state, outcome)
        _exchange(job, fetched, before)
        outcome.notes += _raise_floor(log.events_dir, own)
        git.tidy()
        began = time.perf_counter()
        outcome.views = views.settle(home, space)  # a failure there is a note
        outcome.views_seconds = round(time.perf_counter() - began, 3)
        outcome.devices = len(devices.device_dirs(log.events_dir))
        outcome.finished = utc_now()
        state.last = outcome
        save_state(git.git_dir, state)
    return outcome


def _to_devices(log: EventLog) -> list[str]:
    with log._locked():
        return devices.to_devices(log.events_dir)


class Exchange(NamedTuple):
    """Everything one exchange with the remote works with."""

    git: Git
    log: EventLog
    files: local.Files
    sealer: Sealer
    own: str
    url: str
    state: SyncState
    outcome: Outcome


def _exchange(job: Exchange, fetched: tuple[str | None], before: str | None) -> None:
    """Fetch, join, write, push; again while someone else's push got in first.
    ``fetched``: the remote's commit fetched a moment ago (not fetched again), and
    ``before``: where the remote stood when this home last looked."""
    git, files = job.git, job.files
    seen = {rel: files.blob_id(rel) for rel in files.paths()}
    for attempt in range(PUSH_ATTEMPTS):
        before = before if not attempt else git.ref(REMOTE_REF)
        theirs = fetched[0] if not attempt else setup.fetch(git, job.url)
        setup.check_remote(git, job.sealer, job.url, theirs)
        job.outcome.refused += _went_back(git, before, theirs)
        ours = git.ref(LOCAL_REF)
        joined = _join(job, ours, theirs)
        _write(job, ours, joined, seen)
        head = git.ref(LOCAL_REF)
        if head is None or head == theirs:
            return
        sent = _sent(job, head, theirs)
        if _push(git, job.url, head):
            job.outcome.sent += sent
            return
    raise SyncError(f"the remote kept moving; {PUSH_ATTEMPTS} pushes were refused")


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
    job.sealer.finish(tree, job.own)
    if tree == theirs_tree and not joined.refused:
        new = theirs
    else:
        parents = [ours, theirs] if ours else [theirs]
        new = git.commit(git.write_tree(tree), parents, "memlog: join")
    git.update_ref(LOCAL_REF, new, ours)
    return joined


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
    """Make ``events/`` hold the local branch's segments (this device's: only rewrites)."""
    git, log, files, sealer, outcome = job.git, job.log, job.files, job.sealer, job.outcome
    tree = {p: e.oid for p, e in git.tree(git.ref(LOCAL_REF)).items() if p.endswith(SUFFIX)}
    joined_from = {path: entry.oid for path, entry in git.tree(ours).items()}
    changed = joined.changed if joined is not None else {}
    infos = sealer.infos(tree)
    foreign: list[tuple[str, bytes, bool]] = []  # written once their lessons are screened
    with log._locked():
        for path, oid in sorted(tree.items()):
            rel = event_path(path)
            if path.startswith(job.own + "/"):
                if path in changed:
                    _rewrite_own(job, joined_from.get(path), path, changed[path])
                elif not (log.events_dir / rel).exists():
                    atomic_write(log.events_dir / rel, sealer.plain(path, oid), log.home)  # deleted
                continue
            current = files.blob_id(rel)
            if current == infos[path].plain_id:
                continue
            if current != seen.get(rel):
                outcome.held.append(f"{rel} changed here during sync; the next sync takes it")
                continue
            data = changed.get(path)
            if data is None:
                data = sealer.plain(path, oid)
            was = joined_from.get(path)
            joined_in = current is None or (
                was is not None and current == _plain_id(job, path, was)
            )
            foreign.append((rel, data, not joined_in))
        held = _screen_received(log, files, foreign)
        for rel, data, keep_old in foreign:
            outcome.received += _replace_foreign(log, files, rel, data, keep_old)
            seen[rel] = files.blob_id(rel)  # written here: not a change made meanwhile
    if held:
        outcome.notes.append(
            f"{held} {'lesson' if held == 1 else 'lessons'} from other devices held for "
            "review (their text tries to steer the agent): memlog review"
        )


def _screen_received(
    log: EventLog, files: local.Files, foreign: list[tuple[str, bytes, bool]]
) -> int:
    """The sync door of the scan of lessons, under the log's lock: each observation in the
    lines another device's files gain that the scan holds gets its ``entry.held`` event
    here, appended before those files are written and stamped after every event in them
    (the clock's floor is raised first), so a reader never folds one without its hold
    (one that reads the hold first folds the observation as late, before it).  Returns how
    many were held."""
    received = []
    for rel, data, _ in foreign:
        old = files.read(rel) or b""
        received.append(data[len(old) :] if data.startswith(old) else data)
    held, newest = screening.received_holds(received)
    if held:
        clock.raise_floor(log.events_dir, newest)
        log._append_locked(held)
    return len(held)


def _plain_id(job: Exchange, path: str, oid: str) -> str:
    return job.sealer.info(path, oid).plain_id


def _rewrite_own(job: Exchange, was: str | None, path: str, data: bytes) -> None:
    """Another home took text out of lines of this device's segment (a redaction,
    checked as one by the join): take them."""
    offered = job.sealer.plain(path, was) if was is not None else b""
    target = job.log.events_dir / event_path(path)
    current = target.read_bytes()
    if not current.startswith(offered):
        job.outcome.held.append(
            f"{event_path(path)} changed here during sync; the next sync takes it"
        )
        return
    atomic_write(target, data + current[len(offered) :], job.log.home)


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
    return max(0, data.count(b"\n") - old.count(b"\n"))


def _sent(job: Exchange, head: str, theirs: str | None) -> int:
    """Events of this device that ``head`` has and ``theirs`` lacks."""
    mine = {p: e for p, e in job.git.tree(head).items() if p.startswith(job.own + "/")}
    remote = {p: e for p, e in job.git.tree(theirs).items() if p.startswith(job.own + "/")}
    have = sum(i.lines for i in job.sealer.infos(mine).values())
    return max(0, have - job.sealer.count_lines(remote))


def _push(git: Git, url: str, head: str) -> bool:
    """Push the local branch; False when the remote moved on first."""
    refspec = f"{LOCAL_REF}:refs/heads/{BRANCH}"
    done = git.call("push", "--porcelain", url, refspec, timeout=NETWORK_TIMEOUT)
    if done.returncode == 0:
        git.run("update-ref", REMOTE_REF, head)
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
    return [
        f"device {device} stamps its events {ahead:.0f} h ahead of this machine's clock; "
        "events written here will be stamped after them (check that machine's clock)"
    ]
