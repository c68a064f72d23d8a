"""Which key a sync uses, and whether the remote and this home's repository take it.

``memlog sync --init URL`` on a remote without memlog data makes the key
(kept in the home, ``keys``); on a remote with data it needs the key that
data was sealed with (``--key`` or ``MEMLOG_SYNC_KEY``), and says how to get
it when it is missing or wrong.  A remote, or this home's own repository,
in the earlier plain format is refused with what to do: nothing plain and
sealed is ever mixed, and nothing is pushed to a plain remote.
"""

from __future__ import annotations

import os
import shutil
from typing import NamedTuple

from memlog.home import Home
from memlog.sync import keys, roster
from memlog.sync.repo import (
    BRANCH,
    LOCAL_REF,
    NETWORK_TIMEOUT,
    REMOTE_REF,
    Git,
    SyncError,
    TreeEntry,
    first_line,
)
from memlog.sync.sealed import FORMAT, FORMAT_FILE, FORMATS, Key, read_format
from memlog.sync.sealing import PLAIN_SUFFIX, Sealer
from memlog.sync.state import load_state, save_state
from memlog.untrusted import shown


class Fetched(NamedTuple):
    """The remote's branches as fetched: ``memlog``, and its roster (None: not there)."""

    branch: str | None
    roster: str | None


class Ready(NamedTuple):
    """The key and remote of this sync; whether the key was made now; what ``--init``
    fetched already (the remote's commit, in ``REMOTE_REF``), when it did."""

    key: Key
    url: str
    made: bool = False
    notes: tuple[str, ...] = ()
    fetched: Fetched | None = None


def plain_remote(url: str) -> str:
    return (
        f"{url} holds memlog's earlier plain format, which whoever hosts it can read: "
        "make a new, empty repository and run `memlog sync --init NEW_URL` on each machine "
        f"(each keeps its events), then delete {url}"
    )


NOT_SET_UP = "sync is not set up here: memlog sync --init REMOTE"
PLAIN_HOME = (
    "this home synced in memlog's earlier plain format, which its remote could read: run "
    "`memlog sync --init NEW_URL` with a new, empty repository (this home keeps every event), "
    "then delete the old remote"
)


def ready(git: Git, home: Home, remote: str | None, init: bool, key_text: str | None) -> Ready:
    """The key and the remote for this sync (``--init``: set up, joining or making a key)."""
    if init or (remote and not git.exists()):
        if not remote:
            raise SyncError("--init needs REMOTE (a git URL or path)")
        return _init(git, home, remote, keys.given(key_text))
    key = keys.stored(home) if git.exists() else None
    if key is None:
        plain = git.exists() and git.ref(LOCAL_REF) is not None
        raise SyncError(
            PLAIN_HOME if plain else "sync is not set up here: memlog sync --init REMOTE"
        )
    given = keys.given(key_text)
    if given is not None and given.text() != key.text():
        raise SyncError("the key given is not this home's sync key; memlog sync --init REMOTE "
                        "--key KEY joins a remote with another key")  # fmt: skip
    _check_local(git, key)
    if remote and not git.remote_url():
        git.set_remote(remote)
    url = remote or git.remote_url()
    if not url:
        raise SyncError("no remote to sync with: memlog sync --init REMOTE")
    return Ready(key, url)


def _init(git: Git, home: Home, url: str, given: Key | None) -> Ready:
    """Set up (again) for ``url``: nothing here changes unless the key opens it."""
    made_now = not git.exists()
    if made_now:
        git.init()
    try:
        probed = fetch(git, url, PROBE)
        theirs = probed.branch
        sealed = classify(git, url, theirs)
        key, made = _key_for(git, home, url, theirs if sealed else None, given)
    except BaseException:
        if made_now:  # a refused join sets up nothing (status would call it the plain format)
            shutil.rmtree(git.git_dir, ignore_errors=True)
        raise
    finally:
        if git.exists():
            for ref in (PROBE_REF, PROBE_ROSTER):
                git.call("update-ref", "-d", ref)
    stored = keys.stored(home)
    fetched: Fetched | None = probed
    if stored is None or stored.text() != key.text() or _local_problem(git, key):
        if _start_over(git):
            fetched = None  # its objects went with the old repository
        keys.store(home, key)
    git.set_remote(url)
    if fetched is not None:
        for ref, commit in ((REMOTE_REF, fetched.branch), (REMOTE_ROSTER, fetched.roster)):
            if commit is not None:
                git.update_ref(ref, commit, git.ref(ref))
    return Ready(key, url, made, _joined_note(url, made, sealed), fetched)


def _key_for(
    git: Git, home: Home, url: str, sealed_at: str | None, given: Key | None
) -> tuple[Key, bool]:
    """The key for ``url`` (the remote's commit ``sealed_at`` when it holds memlog data),
    and whether it was made now."""
    stored = keys.stored(home)
    key = given or stored
    if sealed_at is None:
        return (key, False) if key is not None else (Key.generate(), True)
    if key is None:
        raise SyncError(
            f"{url} holds memlog data sealed with a key this home does not have: run "
            "`memlog sync --print-key` on a machine that syncs with it, then "
            f"`memlog sync --init {url} --key -` here and paste it (or set {keys.ENV})"
        )
    if _format_check(git, sealed_at, key):
        which = "given" if given is not None else "kept in this home"
        raise SyncError(
            f"the key {which} does not open {url}'s data{_rotated(git, sealed_at)}: run "
            f"`memlog sync --print-key` on a machine that syncs with it, then "
            f"`memlog sync --init {url} --key -` here and paste it"
        )
    return key, False


def _joined_note(url: str, made: bool, sealed: bool) -> tuple[str, ...]:
    if made:
        return (
            f"made a sync key, kept in this home (sync.key, readable by you only) and "
            f"never sent: {url} holds only what it seals.  To join another machine, run "
            f"`memlog sync --init {url} --key -` there and paste the key `memlog sync "
            "--print-key` prints here (or set MEMLOG_SYNC_KEY); whoever has the key can read "
            "this memory, and each machine signs what it writes",
        )
    if sealed:
        return (f"joined {url} with its key",)
    return ()


def classify(git: Git, url: str, commit: str | None) -> bool:
    """Whether commit ``commit`` of the remote holds sealed memlog data (False: nothing
    yet); SyncError for the plain format, a format unknown here, or foreign files.  A file
    of a sealed remote that is no segment (a stray ``.jsonl`` among them) is refused alone
    by the join, never the remote."""
    tree = git.tree(commit)
    if not tree:
        return False
    entry = tree.get(FORMAT_FILE)
    if entry is None:
        if any(path.endswith(PLAIN_SUFFIX) for path in tree):
            raise SyncError(plain_remote(url))
        raise SyncError(f"{url}'s branch {BRANCH} holds files memlog did not write; give "
                        "memlog sync a repository of its own")  # fmt: skip
    found = read_format(git.blobs([entry.oid])[entry.oid]) if entry.kind == "blob" else None
    if found is None or found.format not in FORMATS:
        named = found.format[:40] if found is not None else "unreadable"
        raise SyncError(f"{url} holds memlog data in a format this memlog does not know "
                        f"({shown(named)}): upgrade memlog")  # fmt: skip
    return True


def check_remote(git: Git, sealer: Sealer, url: str, commit: str | None) -> None:
    """SyncError unless the remote's ``commit`` is empty or sealed with this home's key."""
    if classify(git, url, commit) and commit is not None and _format_check(git, commit, sealer.key):
        raise SyncError(
            f"{url}'s data is sealed with another key than this home's{_rotated(git, commit)}: "
            f"`memlog sync --init {url} --key -` joins it with its key (from `memlog sync "
            "--print-key` on a machine that has it)"
        )


def _rotated(git: Git, commit: str) -> str:
    """Who made the remote's key, when its format file says (a key rotated)."""
    entry: TreeEntry | None = git.tree(commit).get(FORMAT_FILE)
    found = read_format(git.blobs([entry.oid])[entry.oid]) if entry is not None else None
    if found is None or not found.rotated_by:
        return " (was it set up again with a new key?)"
    return f" (device {found.rotated_by} made a new team key on {found.rotated_at[:10]})"


def format_bytes(git: Git, commit: str | None, key: Key) -> bytes | None:
    """The remote's format file when it is this format's and names ``key`` (kept as it is,
    who rotated the key included); None: a new one is written."""
    entry: TreeEntry | None = git.tree(commit).get(FORMAT_FILE) if commit is not None else None
    if entry is None or entry.kind != "blob":
        return None
    data = git.blobs([entry.oid])[entry.oid]
    found = read_format(data)
    if found is None or found.format != FORMAT or found.key_check != key.check():
        return None
    return data


def _format_check(git: Git, commit: str, key: Key) -> str:
    """ "" when the format file of ``commit`` names ``key``, else why not."""
    entry: TreeEntry | None = git.tree(commit).get(FORMAT_FILE)
    data = git.blobs([entry.oid])[entry.oid] if entry is not None else None
    return Sealer(key, git, {}).check_format(data)


def _check_local(git: Git, key: Key) -> None:
    problem = _local_problem(git, key)
    if problem == "plain":
        raise SyncError(PLAIN_HOME)
    if problem:
        raise SyncError("this home's sync repository is sealed with another key than the one "
                        "it keeps: memlog sync --init REMOTE sets it up again")  # fmt: skip


def _local_problem(git: Git, key: Key) -> str:
    """ "" when this home's own branch is empty or sealed with ``key``; "plain" for the
    earlier format; else what is wrong."""
    head = git.ref(LOCAL_REF)
    tree = git.tree(head)
    if not tree:
        return ""
    if any(path.endswith(PLAIN_SUFFIX) for path in tree):
        return "plain"
    assert head is not None
    return _format_check(git, head, key)


def _start_over(git: Git) -> bool:
    """A fresh repository for this home (its events stay in ``events/``, and its pins of
    the roster with them): the old one holds what another key (or none) sealed, which
    nothing here may mix or push.  False when the repository holds nothing yet (it is
    kept)."""
    if git.ref(LOCAL_REF) is None and git.ref(REMOTE_REF) is None:
        return False
    kept = load_state(git.home)
    aside = git.home.sync_repo_aside(f"old.{os.getpid()}")
    os.rename(git.git_dir, aside)
    shutil.rmtree(aside, ignore_errors=True)
    git.init()
    fresh = load_state(git.home)
    fresh.pins, fresh.answers, fresh.told = kept.pins, kept.answers, kept.told
    save_state(git.home, fresh)
    return True


#: where ``--init`` looks at a remote before it is taken as this home's
PROBE = "refs/memlog/probe/"
PROBE_REF = f"{PROBE}{BRANCH}"
PROBE_ROSTER = f"{PROBE}{roster.BRANCH}"
#: where the remote's branches are kept (``REMOTE_REF``, and the roster's)
REMOTE = REMOTE_REF.rsplit("/", 1)[0] + "/"
REMOTE_ROSTER = f"{REMOTE}{roster.BRANCH}"


def fetch(git: Git, url: str, into: str = REMOTE) -> Fetched:
    """Fetch the remote's branch and its roster's into ``into``; their commits (None for
    a branch that is not there: nothing was pushed yet, or it was deleted)."""
    refspec = f"+refs/heads/{BRANCH}*:{into}{BRANCH}*"
    done = git.call("fetch", "--no-tags", "--quiet", "--prune", url, refspec,
                    timeout=NETWORK_TIMEOUT)  # fmt: skip
    if done.returncode != 0:
        raise SyncError(f"cannot fetch from {url}: {first_line(done.stderr, done.returncode)}")
    return Fetched(git.ref(f"{into}{BRANCH}"), git.ref(f"{into}{roster.BRANCH}"))


def print_key(home: Home) -> str:
    """The key kept in ``home``, on one line (SyncError when there is none)."""
    key = keys.stored(home)
    if key is None:
        raise SyncError("this home has no sync key: memlog sync --init REMOTE makes one")
    return key.text()
