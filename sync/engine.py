"""``memlog sync``: offer this home's events, take the remote's, push the union.

One sync, under a lock of its own:

1. the log moves to one directory per device if it was flat (``devices``);
2. this device's new whole batches are checked and committed (``local``);
3. the remote's branch is fetched and joined with ours (``merge``), the
   files that changed are written into ``events/`` under the append lock,
   and the local branch moves to the join;
4. the join is pushed (if someone pushed meanwhile, back to 3);
5. the clock floor is raised past every event received, and the views are
   rebuilt unless they already are exactly what a replay would make, so
   every home holding the same events has byte-identical views.

Every step leaves the log and the repository usable if the process is
killed: files are replaced atomically, refs move only after what they point
at exists, and the next sync starts from what is on disk.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memlog.eventlog import clock, devices
from memlog.eventlog import segments as seg
from memlog.eventlog.ids import utc_now
from memlog.eventlog.log import EventLog
from memlog.files import atomic_write
from memlog.home import ensure_dir
from memlog.locking import locked_within
from memlog.sync import local, restore, views
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
from memlog.sync.state import Outcome, SyncState, load_state, save_state
from memlog.vocabulary import Space

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


def sync(home: Path, space: Space, remote: str | None = None, init: bool = False) -> Outcome:
    """Sync ``home`` with ``remote`` (the configured one by default); see the module."""
    with sync_lock(home) as fd:
        log = EventLog(home, command="sync")
        own = devices.device_id(log.events_dir)
        git = Git(home, own, fd)
        swept = git.sweep_stale_locks()
        url = _remote(git, remote, init)  # before the layout changes: a home never set up
        migrated = _to_devices(log)  # for sync is left as it was
        outcome = Outcome(remote=url, device=own, migrated=len(migrated), swept=swept)
        state = load_state(git.git_dir)
        restored = restore.take_back(git, log, own, _fetch(git, url))  # before it offers
        outcome.notes += [restored] if restored else []
        files = local.Files(log.events_dir, state.cache)
        offered = local.offer(git, files, own)
        outcome.held = offered.problems
        _exchange(git, log, files, own, url, state, outcome)
        outcome.notes += _raise_floor(log.events_dir, own)
        git.tidy()
        outcome.views = views.settle(home, space, state)  # a failure there is a note
        outcome.devices = len(devices.device_dirs(log.events_dir))
        outcome.finished = utc_now()
        state.last = outcome
        save_state(git.git_dir, state)
    return outcome


def _to_devices(log: EventLog) -> list[str]:
    with log._locked():
        return devices.to_devices(log.events_dir)


def _remote(git: Git, remote: str | None, init: bool) -> str:
    if not git.exists():
        if not (init or remote):
            raise SyncError("sync is not set up here: memlog sync --init REMOTE")
        git.init()
    if remote and (init or not git.remote_url()):
        git.set_remote(remote)
    url = remote or git.remote_url()
    if not url:
        raise SyncError("no remote to sync with: memlog sync --init REMOTE")
    return url


def _exchange(
    git: Git, log: EventLog, files: local.Files, own: str, url: str, state: SyncState,
    outcome: Outcome,
) -> None:  # fmt: skip
    """Fetch, join, write, push; again while someone else's push got in first."""
    seen = {rel: files.blob_id(rel) for rel in files.paths()}
    for _ in range(PUSH_ATTEMPTS):
        theirs = _fetch(git, url)
        ours = git.ref(LOCAL_REF)
        joined = _join(git, log.home, own, ours, theirs, state, outcome)
        _write(git, log, files, own, ours, joined, seen, outcome)
        head = git.ref(LOCAL_REF)
        if head is None or head == theirs:
            return
        sent = _sent(git, log.events_dir, own, head, theirs)
        if _push(git, url, head):
            outcome.sent += sent
            return
    raise SyncError(f"the remote kept moving; {PUSH_ATTEMPTS} pushes were refused")


def _fetch(git: Git, url: str) -> str | None:
    refspec = f"+refs/heads/{BRANCH}:{REMOTE_REF}"
    done = git.call("fetch", "--no-tags", "--quiet", url, refspec, timeout=NETWORK_TIMEOUT)
    if done.returncode == 0:
        return git.ref(REMOTE_REF)
    if b"couldn't find remote ref" in done.stderr:
        return None  # nothing pushed there yet
    raise SyncError(f"cannot fetch from {url}: {first_line(done.stderr, done.returncode)}")


def _join(
    git: Git, home: Path, own: str, ours: str | None, theirs: str | None, state: SyncState,
    outcome: Outcome,
) -> Merged | None:  # fmt: skip
    """Join ``theirs`` into the local branch (which moves); None when there is nothing to join."""
    if theirs is None or theirs == ours or (ours is not None and git.is_ancestor(theirs, ours)):
        return None
    joined = merge(git, own, ours, theirs, state.refused)
    for refusal in joined.refused:
        outcome.refused.append(f"{refusal.path}: {refusal.reason}")
        state.refused.append(refusal.blob)
        seg.quarantine(home, refusal.path, 0, _bytes_of(git, refusal.blob), f"from the remote: "
                       f"{refusal.reason} (object {refusal.blob})")  # fmt: skip
    theirs_tree = {path: entry.oid for path, entry in git.tree(theirs).items()}
    if joined.tree == theirs_tree and not joined.refused:
        new = theirs
    else:
        parents = [ours, theirs] if ours else [theirs]
        new = git.commit(git.write_tree(joined.tree), parents, "memlog: join")
    git.update_ref(LOCAL_REF, new, ours)
    return joined


def _bytes_of(git: Git, oid: str) -> bytes:
    """A refused object's bytes to keep (none when it is no blob, e.g. a submodule)."""
    try:
        return git.blobs([oid])[oid]
    except SyncError:
        return b""


def _write(
    git: Git, log: EventLog, files: local.Files, own: str, ours: str | None,
    joined: Merged | None, seen: dict[str, str | None], outcome: Outcome,
) -> None:  # fmt: skip
    """Make ``events/`` hold the local branch's segments (this device's: only rewrites)."""
    head = git.ref(LOCAL_REF)
    tree = {path: entry.oid for path, entry in git.tree(head).items()}
    joined_from = {path: entry.oid for path, entry in git.tree(ours).items()}
    changed = joined.changed if joined is not None else {}
    with log._locked():
        for path, oid in sorted(tree.items()):
            if path.startswith(own + "/"):
                if path in changed:
                    _rewrite_own(git, log, ours, path, changed[path], outcome)
                elif not (log.events_dir / path).exists():
                    atomic_write(log.events_dir / path, git.blobs([oid])[oid], log.home)  # deleted
                continue
            current = files.blob_id(path)
            if current == oid:
                continue
            if current != seen.get(path):
                outcome.held.append(f"{path} changed here during sync; the next sync takes it")
                continue
            data = changed.get(path)
            if data is None:
                data = git.blobs([oid])[oid]
            joined_in = current is None or current == joined_from.get(path)
            outcome.received += _replace_foreign(log, files, path, data, keep_old=not joined_in)
            seen[path] = files.blob_id(path)  # written here: not a change made meanwhile


def _rewrite_own(
    git: Git, log: EventLog, ours: str | None, path: str, data: bytes, outcome: Outcome
) -> None:
    """Another home rewrote lines of this device's segment (a redaction): take them."""
    entry = git.tree(ours).get(path)
    offered = git.blobs([entry.oid])[entry.oid] if entry is not None else b""
    target = log.events_dir / path
    current = target.read_bytes()
    if not current.startswith(offered):
        outcome.held.append(f"{path} changed here during sync; the next sync takes it")
        return
    atomic_write(target, data + current[len(offered) :], log.home)


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


def _sent(git: Git, events_dir: Path, own: str, head: str, theirs: str | None) -> int:
    """Events of this device that ``head`` has and ``theirs`` lacks."""
    remote = git.tree(theirs)
    count = 0
    for path, entry in git.tree(head).items():
        if not path.startswith(own + "/"):
            continue
        known = remote.get(path)
        start = known.size if known is not None else 0
        if known is None or known.oid != entry.oid:
            with open(events_dir / path, "rb") as handle:
                count += os.pread(handle.fileno(), max(0, entry.size - start), start).count(b"\n")
    return count


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
