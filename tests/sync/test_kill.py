"""kill -9 in the middle of a sync leaves the log and both repositories usable."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memlog.eventlog.log import EventLog
from memlog.eventlog.verify import verify_log
from memlog.home import Home
from memlog.sync.engine import sync_lock
from memlog.tests.sync.helpers import assert_same_views, bare_remote, git, init, memlog_ok, observe


def start_sync(home: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "MEMLOG_HOME": str(home)}
    return subprocess.Popen(
        [sys.executable, "-m", "memlog", "sync"], env=env, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip


def timed_sync(home: Path) -> float:
    began = time.monotonic()
    assert start_sync(home).wait(timeout=120) in (0, 1)
    return time.monotonic() - began


def usable(home: Path, remote: str) -> None:
    log = EventLog(home)
    assert verify_log(log).clean, verify_log(log).problems()
    assert git("--git-dir", str(home / "sync.git"), "fsck", "--no-progress").returncode == 0
    assert git("--git-dir", remote, "fsck", "--no-progress").returncode == 0


@pytest.mark.slow
def test_kill_9_during_sync_leaves_everything_usable(tmp_path: Path) -> None:
    remote = str(bare_remote(tmp_path / "remote.git"))
    a, b = tmp_path / "a", tmp_path / "b"
    for i in range(30):
        observe(a, f"Lesson {i} from the first machine.")
        observe(b, f"Lesson {i} from the second machine.")
    init(a, remote)
    init(b, remote)
    took = max(timed_sync(a), timed_sync(b))
    for step, fraction in enumerate((0.05, 0.15, 0.3, 0.45, 0.6, 0.75, 0.9, 1.0)):
        home = (a, b)[step % 2]
        observe(home, f"Written before kill number {step}.")
        child = start_sync(home)
        time.sleep(took * fraction)
        os.killpg(child.pid, signal.SIGKILL)  # memlog dies; the git it started runs on
        child.wait()
        with sync_lock(Home(home)):  # held until the last git of the killed sync has ended
            usable(home, remote)
        EventLog(home).append([])  # appending still works
    for home in (a, b, a):
        memlog_ok(home, "sync")
    for home in (a, b):
        usable(home, remote)
    assert_same_views([a, b])
    assert "Written before kill number 7." in memlog_ok(a, "log").output


def test_lock_files_of_a_killed_git_are_swept(tmp_path: Path) -> None:
    remote = str(bare_remote(tmp_path / "remote.git"))
    home = tmp_path / "home"
    observe(home, "A lesson worth keeping.")
    init(home, remote)
    git_dir = home / "sync.git"
    stale = [git_dir / "refs/heads/memlog.lock", git_dir / "refs/remotes/sync/memlog.lock",
             git_dir / "index.lock", git_dir / "config.lock"]  # fmt: skip
    for path in stale:
        path.write_text("")
    observe(home, "Another lesson.")
    result = memlog_ok(home, "sync", "--json")
    assert "refs/heads/memlog.lock" in result.output
    assert not any(path.exists() for path in stale)
    usable(home, remote)


def test_a_second_sync_waits_for_the_first(tmp_path: Path) -> None:
    from memlog.sync.engine import sync_lock
    from memlog.sync.repo import SyncError

    home = tmp_path / "home"
    with sync_lock(Home(home)), pytest.raises(SyncError, match="another sync"):
        with sync_lock(Home(home), wait=0.2):
            pass


WRITER = """
import sys
from pathlib import Path
from memlog.eventlog.events import Observed
from memlog.eventlog.log import EventLog
log = EventLog(Path(sys.argv[1]))
for i in range(int(sys.argv[3])):
    size = 1 + i % 3  # lone events and batches
    log.append([Observed(name=f"w{sys.argv[2]}-{i}-{k}", description=f"Writer {sys.argv[2]} "
                         f"event {i} part {k}.", category="facts") for k in range(size)])
"""


@pytest.mark.slow
def test_appends_while_syncing_lose_nothing(tmp_path: Path) -> None:
    remote = str(bare_remote(tmp_path / "remote.git"))
    a, b = tmp_path / "a", tmp_path / "b"
    observe(a, "The first lesson.")
    init(a, remote)
    init(b, remote)
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(a), str(n), "150"])
        for n in range(2)
    ]  # fmt: skip
    while any(w.poll() is None for w in writers):
        assert timed_sync(a) >= 0
    assert all(w.returncode == 0 for w in writers)
    for home in (a, b):
        memlog_ok(home, "sync")
    usable(a, remote)
    usable(b, remote)
    names = {getattr(r.event, "name", "") for r in EventLog(b).read()}
    expected = {f"w{n}-{i}-{k}" for n in range(2) for i in range(150) for k in range(1 + i % 3)}
    assert expected <= names
    assert_same_views([a, b])


@pytest.mark.slow
def test_homes_syncing_at_once_both_get_through(tmp_path: Path) -> None:
    remote = str(bare_remote(tmp_path / "remote.git"))
    homes = [tmp_path / "a", tmp_path / "b", tmp_path / "c"]
    for home in homes:
        observe(home, f"Lesson of {home.name}.")
        init(home, remote)
    for step in range(3):
        for home in homes:
            observe(home, f"Step {step} of {home.name}.")
        children = [start_sync(home) for home in homes]  # pushes race: the losers join again
        assert [child.wait(timeout=180) for child in children] == [0, 0, 0]
    for home in homes:
        memlog_ok(home, "sync")
    assert_same_views(homes)
    assert all(f"Step 2 of {h.name}." in memlog_ok(homes[0], "log").output for h in homes)
