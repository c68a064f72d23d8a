"""No sync ever takes another device's files or lines off the remote.

A sync joins the remote's tree with this home's and pushes the join.  Each
way a join or a push could drop another device's file, or lines of it, is
forged here: a copy cut short or deleted in ``events/``, a join that leaves a
file out or keeps an older version, lines the remote holds that this home
refuses (one taken out in the middle, one slipped in).  The remote keeps
every line of another device that opens with the key; a tree that would
not is refused with one line, and nothing is pushed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memlog.sync import engine
from memlog.tests.sync.helpers import (
    bare_remote,
    device_of,
    git,
    init,
    memlog,
    memlog_ok,
    observe,
    push_tampered,
    remote_file,
)

SEGMENT = "00000000000000000001"


def two_homes(tmp_path: Path) -> tuple[Path, Path, str]:
    remote = str(bare_remote(tmp_path / "remote.git"))
    a, b = tmp_path / "a", tmp_path / "b"
    for i in range(4):
        observe(a, f"A's lesson number {i}: the remote keeps it.")
    observe(b, "B's lesson.")
    for home in (a, b, a):
        init(home, remote)
    return a, b, remote


def tip(remote: str) -> str:
    return git("--git-dir", remote, "rev-parse", "memlog").stdout.strip()


def sealed(home: Path) -> str:
    return f"{device_of(home)}/{SEGMENT}.sealed"


def lines_of(remote: str, path: str) -> int:
    return remote_file(remote, path).count(b"\n")


def test_a_copy_cut_short_here_is_never_offered_and_comes_back_whole(tmp_path: Path) -> None:
    a, b, remote = two_homes(tmp_path)
    path = sealed(a)
    held = lines_of(remote, path)
    copy = b / "events" / device_of(a) / f"{SEGMENT}.jsonl"
    data = copy.read_bytes()
    copy.write_bytes(data[: data.index(b"\n") + 1])  # one line left of a's lines
    observe(b, "Written after the cut.")
    memlog_ok(b, "sync")
    assert lines_of(remote, path) == held
    assert copy.read_bytes() == data  # taken back from the join
    assert memlog(b, "verify").exit_code == 0


def test_a_copy_deleted_here_is_written_back_and_stays_on_the_remote(tmp_path: Path) -> None:
    a, b, remote = two_homes(tmp_path)
    path = sealed(a)
    copy = b / "events" / device_of(a) / f"{SEGMENT}.jsonl"
    data = copy.read_bytes()
    copy.unlink()
    observe(b, "Written after the loss.")
    memlog_ok(b, "sync")
    assert remote_file(remote, path)
    assert copy.read_bytes() == data


@pytest.mark.parametrize("forged", ["a file left out", "an older version kept"])
def test_a_join_that_would_drop_another_devices_lines_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forged: str
) -> None:
    a, b, remote = two_homes(tmp_path)
    path = sealed(a)
    older = git("--git-dir", remote, "rev-parse", f"memlog:{path}").stdout.strip()
    observe(a, "A's lesson written later.")
    memlog_ok(a, "sync")
    real = engine.merge

    def lossy(*args: object, **kwargs: object) -> engine.Merged:
        joined = real(*args, **kwargs)  # type: ignore[arg-type]
        tree = dict(joined.tree)
        if forged == "a file left out":
            del tree[path]
        else:
            tree[path] = older
        return joined._replace(tree=tree)

    monkeypatch.setattr(engine, "merge", lossy)
    before = tip(remote)
    observe(b, "Written by b meanwhile.")
    done = memlog(b, "sync")
    assert done.exit_code == 1
    assert "refused to push" in done.output and device_of(a) in done.output
    assert "off the remote; nothing was pushed" in done.output
    assert tip(remote) == before


def test_lines_this_home_refuses_stay_on_the_remote(tmp_path: Path) -> None:
    """One of a's lines taken out of the remote's copy: a machine that never had them
    takes what still follows on, and its push leaves a's copy as the remote had it; once
    a syncs, its lines are whole again everywhere."""
    a, b, remote = two_homes(tmp_path)
    path = sealed(a)
    full = remote_file(remote, path)
    rows = full.splitlines(keepends=True)
    assert len(rows) >= 6
    push_tampered(remote, path, lambda data: b"".join(rows[:2] + rows[3:]))
    cut = remote_file(remote, path)
    c = tmp_path / "c"
    observe(c, "C's lesson.")
    key = memlog_ok(a, "sync", "--print-key").output.strip()
    joined = memlog(c, "sync", "--init", remote, "--key", key)
    assert "refused" in joined.output
    assert remote_file(remote, path) == cut  # c did not take a's later lines off it
    own = memlog(a, "sync")  # a refuses the cut copy of its own lines, and pushes them whole
    assert own.exit_code == 1 and "lines were removed or moved" in own.output
    assert remote_file(remote, path) == full
    memlog_ok(c, "sync")
    assert (c / "events" / device_of(a) / f"{SEGMENT}.jsonl").read_bytes() == (
        a / "events" / device_of(a) / f"{SEGMENT}.jsonl"
    ).read_bytes()
    assert memlog(c, "verify").exit_code == 0


def test_a_segment_redacted_here_keeps_its_chain_when_the_one_before_is_gone(
    tmp_path: Path,
) -> None:
    """b redacts a line of a's second segment while its copy of a's first segment is gone:
    the rewritten segment still follows the first (a chain sealed from what is on disk
    said it followed nothing, and every other home refused a's lines)."""
    from memlog.eventlog import devices
    from memlog.tests.sync.helpers import redact_line

    remote = str(bare_remote(tmp_path / "remote.git"))
    a, b = tmp_path / "a", tmp_path / "b"
    observe(a, "A's first lesson.")
    for home in (a, b):
        init(home, remote)
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(devices, "ROLL_BYTES", 2 << 10)
        for i in range(8):
            observe(a, f"A's lesson number {i}: hunter2hunter2 rolls the segment over.")
    memlog_ok(a, "sync")
    memlog_ok(b, "sync")
    own = sorted((b / "events" / device_of(a)).glob("*.jsonl"))
    assert len(own) >= 2
    own[0].unlink()
    redact_line(b, device_of(a), "hunter2hunter2")
    done = memlog(b, "sync")
    assert "lines were removed" not in done.output, done.output
    again = memlog(a, "sync")
    assert "refused" not in again.output, again.output
