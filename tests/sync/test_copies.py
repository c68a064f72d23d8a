"""A copy of a home is a new device.

``cp -a`` of a home that synced (or a restore of it onto another machine)
would write as the same device as the original, under the same sequence
numbers.  The copy notices at its first write (its device id was made in
another folder) or at its first sync (the remote holds lines of its device
it never wrote), takes a new device id for what it writes from then on,
and every home ends with views a replay of its log makes.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from memlog.eventlog import devices
from memlog.eventlog.events import Observed
from memlog.eventlog.log import EventLog
from memlog.home import Home
from memlog.tests.sync.helpers import (
    assert_same_views,
    bare_remote,
    device_of,
    init,
    memlog,
    memlog_ok,
    observe,
)


def counts(home: Path) -> dict[str, int]:
    """Each lesson's observation count as ``memlog list`` shows it."""
    import json

    listed = json.loads(memlog_ok(home, "list", "--json", "--limit", "100").stdout)
    return {e["description"]: e["observation_count"] for e in listed["entries"]}


def lessons(home: Path) -> set[str]:
    return {r.event.description for r in EventLog(home).read() if isinstance(r.event, Observed)}


def copied(tmp_path: Path) -> tuple[Path, Path, str]:
    remote = str(bare_remote(tmp_path / "remote.git"))
    a, c = tmp_path / "a", tmp_path / "c"
    for i in range(3):
        observe(a, f"A's lesson {i}, from before the copy.")
    init(a, remote)
    shutil.copytree(a, c, symlinks=True)  # cp -a A C
    return a, c, remote


def test_a_copy_writes_as_a_new_device_and_both_homes_agree(tmp_path: Path) -> None:
    a, c, remote = copied(tmp_path)
    old = device_of(a)
    observe(a, "A's new lesson.")
    memlog_ok(a, "sync")
    done = memlog(c, "observe", "--name", "C's own", "--description", "C's own lesson.",
                  "--category", "patterns")  # fmt: skip
    assert done.exit_code == 0, done.output
    assert "this home is a copy" in done.stderr and old in done.stderr
    assert device_of(c) != old
    memlog_ok(c, "sync")
    assert lessons(c) == lessons(a) | {"C's own lesson."}
    assert counts(c)["C's own lesson."] == 1 and counts(c)["A's new lesson."] == 1
    assert memlog(c, "verify").exit_code == 0
    again = memlog_ok(a, "sync")
    assert "refused" not in again.output
    assert device_of(a) == old
    assert_same_views([a, c])
    for home in (a, c):
        assert memlog(home, "verify").exit_code == 0


def test_a_copy_the_stamp_cannot_tell_is_caught_at_its_sync(tmp_path: Path) -> None:
    """A home stamped by no version before (or a copy onto the same folder elsewhere):
    its first sync finds the remote holding lines of its device it never wrote."""
    a, c, remote = copied(tmp_path)
    old = device_of(a)
    (c / "events" / ".device-stamp").write_text(
        f"{(c / 'events').stat().st_ino}\n"
    )  # the copy believes the id was made here
    observe(a, "A's new lesson.")
    memlog_ok(a, "sync")
    observe(c, "C's own lesson.")
    assert device_of(c) == old  # written as the old device: the stamp could not tell
    done = memlog_ok(c, "sync")
    assert f"device {old} also writes elsewhere" in done.stderr
    assert device_of(c) != old
    assert lessons(c) == lessons(a) | {"C's own lesson."}
    assert counts(c)["C's own lesson."] == 1
    assert memlog(c, "verify").exit_code == 0
    again = memlog_ok(a, "sync")
    assert "refused" not in again.output
    assert_same_views([a, c])
    for home in (a, c):
        assert memlog(home, "verify").exit_code == 0


def test_the_home_itself_keeps_its_device(memlog_home: Path) -> None:
    observe(memlog_home, "A lesson.")
    events = Home(memlog_home)
    first = devices.device_id(Home(events))
    assert not devices.is_copy(Home(events))
    assert devices.device_id(Home(events)) == first
