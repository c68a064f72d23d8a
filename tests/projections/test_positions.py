"""The views' place in the log is checked against the log at every command.

A view stores where its fold stopped (the segment, the offset and the event
there) and how many bytes of log the fold read before that place.  A log
that lost a segment before it, was cut, or got a segment back (taken back
from the remote) no longer holds those bytes: the next command says so in
one line when the log shrank and rebuilds the views; a sequence number
handed out is never handed out again, even when the segment that held it
is gone.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memlog.eventlog import devices
from memlog.eventlog.events import Observed
from memlog.eventlog.log import EventLog
from memlog.eventlog.verify import verify_log
from memlog.projections.runner import SHRUNK
from memlog.tests.sync.helpers import bare_remote, init, memlog, memlog_ok, observe


def lessons_file(tmp_path: Path, count: int, start: int = 0) -> Path:
    path = tmp_path / f"lessons-{start}.jsonl"
    rows = [
        {"name": f"Lesson {i}", "description": f"Lesson number {i}: keep the views in step "
         f"with the log, whatever is deleted {i * 7919 % 1000}.", "category": "patterns"}
        for i in range(start, start + count)
    ]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def entry_count(home: Path) -> int:
    done = memlog_ok(home, "stats", "--json")
    found = json.loads(done.stdout)
    return int(found["entries"]["live"])


def observed(home: Path) -> set[str]:
    return {r.event.description for r in EventLog(home).read() if isinstance(r.event, Observed)}


def synced_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batches: int) -> Path:
    """A device-layout home of small segments, ``batches`` of 40 lessons, synced."""
    monkeypatch.setattr(devices, "ROLL_BYTES", 16 << 10)
    home = tmp_path / "home"
    init(home, str(bare_remote(tmp_path / "remote.git")))
    for batch in range(batches):
        memlog_ok(home, "observe", "--from", str(lessons_file(tmp_path, 40, batch * 40)))
    memlog_ok(home, "sync")
    return home


def test_a_segment_deleted_then_taken_back_from_the_remote_rebuilds_the_views(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A device-layout home of four segments or more loses one holding lessons; a replay
    builds views of what is left; the next sync takes the segment back from the remote,
    and the views are a replay of the whole log again (they stayed at what was left)."""
    home = synced_home(tmp_path, monkeypatch, batches=4)
    own = EventLog(home).segments()
    assert len(own) >= 4
    whole = observed(home)
    lost = next(p for p in own[1:] if b'"type":"entry.observed"' in p.read_bytes())
    lost.unlink()  # a segment after the first that holds lessons (not only their vectors)
    memlog_ok(home, "replay")
    assert entry_count(home) < len(whole)

    done = memlog_ok(home, "sync")
    assert "took them back" in done.stderr
    assert observed(home) == whole
    assert entry_count(home) == len(whole)
    audit = memlog(home, "verify")
    assert audit.exit_code == 0, audit.output


def test_a_segment_deleted_before_the_views_place_is_said_and_the_views_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = synced_home(tmp_path, monkeypatch, batches=3)
    own = EventLog(home).segments()
    own[1].unlink()
    done = memlog(home, "list", "--limit", "1")
    assert done.exit_code == 0, done.output
    assert done.stderr.count(SHRUNK) == 1
    assert entry_count(home) == len(observed(home))
    assert memlog(home, "list", "--limit", "1").stderr.count(SHRUNK) == 0  # said once
    report = memlog(home, "verify")
    assert report.exit_code == 1 and "missing" in report.output
    memlog_ok(home, "sync")
    assert memlog(home, "verify").exit_code == 0  # taken back: nothing is missing


def test_the_last_segment_deleted_is_noticed_and_its_sequences_never_handed_out_again(
    memlog_home: Path,
) -> None:
    home = memlog_home
    for i in range(3):
        observe(home, f"A lesson kept in the one segment, number {i}.")
    log = EventLog(home)
    last = max(r.event.seq for r in log.read())
    (segment,) = log.segments()
    segment.unlink()
    report = verify_log(EventLog(home))
    assert not report.clean
    assert any("missing from the end of the log" in p for p in report.problems())
    done = memlog(home, "observe", "--name", "After", "--description", "After the loss.",
                  "--category", "patterns")  # fmt: skip
    assert done.exit_code == 0, done.output
    seqs = [r.event.seq for r in EventLog(home).read()]
    assert min(seqs) > last
    said = memlog(home, "verify")
    assert "lost" in said.output and "seq 1, 2, 3" in said.output
    assert entry_count(home) == 1
