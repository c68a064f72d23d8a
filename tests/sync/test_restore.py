"""A home restored from a backup takes its own events back from the remote.

A home restored from a backup reused its sequences and never got back the
events the remote still held of it; two homes then refused each other for
good.  Now ``memlog sync`` notices (the remote holds sequences of its device
it does not), takes those events back, puts what it wrote since after them,
and says so in one line.  A tail lost at rest is taken back the same way.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from memlog.eventlog.events import Observed
from memlog.eventlog.log import EventLog
from memlog.eventlog.verify import verify_log
from memlog.tests.sync import helpers
from memlog.tests.sync.helpers import bare_remote, init, memlog, memlog_ok, observe


def lessons(home: Path) -> list[tuple[int, str]]:
    return [(r.event.seq, r.event.name) for r in EventLog(home).read()
            if isinstance(r.event, Observed)]  # fmt: skip


def own_seqs(home: Path) -> list[int]:
    """This device's sequences, in its own order."""
    own = helpers.device_of(home)
    return sorted(r.event.seq for r in EventLog(home).read() if r.segment.startswith(own))


def test_a_restored_home_becomes_a_new_device_and_loses_nothing(tmp_path: Path) -> None:
    """Restored from a backup, the home is another folder than the one its device id was
    made in: it writes as a device of its own from its first write, and takes what the
    old device wrote after the backup from the remote as another device's."""
    remote = str(bare_remote(tmp_path / "remote.git"))
    home, backup, other = tmp_path / "home", tmp_path / "backup", tmp_path / "other"
    for i in range(3):
        observe(home, f"Lesson {i} before the backup.", name=f"Before {i}")
    init(home, remote)
    old = helpers.device_of(home)
    shutil.copytree(home, backup, symlinks=True)
    for i in range(2):
        observe(home, f"Lesson {i} after the backup.", name=f"After {i}")
    memlog_ok(home, "sync")

    shutil.rmtree(home)
    shutil.copytree(backup, home, symlinks=True)  # the disk died; the backup comes back
    lesson = "A lesson written on the restored home."
    written = memlog(home, "observe", "--name", "Restored", "--description", lesson,
                     "--category", "patterns")  # fmt: skip
    assert written.exit_code == 0 and "this home is a copy (or a restore)" in written.stderr
    assert helpers.device_of(home) != old
    done = memlog(home, "sync")
    assert done.exit_code == 0, done.output
    assert "refused" not in done.output

    names = [name for _, name in lessons(home)]
    for wanted in ("Before 0", "Before 2", "After 0", "After 1", "Restored"):
        assert names.count(wanted) == 1, names
    assert own_seqs(home)[:1] == [1]
    assert verify_log(EventLog(home)).clean
    memlog_ok(home, "sync")
    init(other, remote)
    memlog_ok(home, "sync")
    helpers.assert_same_views([home, other])


def test_a_tail_lost_at_rest_is_taken_back_from_the_remote(tmp_path: Path) -> None:
    """The last line of this device's segment cut after it was synced: the next write does
    not hand its sequence out again, and the next sync brings the line back."""
    remote = str(bare_remote(tmp_path / "remote.git"))
    home = tmp_path / "home"
    for i in range(3):
        observe(home, f"Lesson {i}.", name=f"Lesson {i}")
    init(home, remote)
    own = EventLog(home).segments()[-1]
    data = own.read_bytes()
    own.write_bytes(data[: data.rindex(b"\n", 0, len(data) - 1) + 1])  # the last line lost
    observe(home, "A lesson after the loss.", name="After")
    done = memlog(home, "sync")
    assert done.exit_code == 0, done.output
    assert "the remote holds 1 event of this device that this home lacks" in done.stderr
    seqs = own_seqs(home)
    assert seqs == list(range(1, len(seqs) + 1))
    assert verify_log(EventLog(home)).clean
    assert [n for _, n in lessons(home)].count("After") == 1
