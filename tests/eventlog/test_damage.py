"""Damage at rest against torn writes, and sequences never handed out twice.

A batch whose lines were all written loses only the lines that are damaged
later, loudly (``verify`` names each by its sequence, ``doctor`` reports it);
only a batch a crash cut short is dropped whole; ``verify --repair`` never
moves a line that passes its checksum.  Each device keeps a high-water mark
beside its segments, so a tail that lost lines (cut, repaired, restored)
never makes the appender hand a sequence out again.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from memlog.commands.cli import cli
from memlog.eventlog import devices
from memlog.eventlog import segments as seg
from memlog.eventlog.codec import encode_line
from memlog.eventlog.events import Observed, Promoted
from memlog.eventlog.log import Damage, EventLog, written_in
from memlog.eventlog.verify import repair_log, verify_log
from memlog.home import Home

BATCH = 50


def invoke(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input)


def ok(*args: str, input: str | None = None) -> Result:
    result = invoke(*args, input=input)
    assert result.exit_code == 0, result.output
    return result


def lesson(i: int) -> dict[str, str]:
    return {
        "name": f"Lesson {i}",
        "description": f"Retry lesson number {i}: wrap the flaky call {i} in a bounded retry.",
        "category": "patterns",
    }


def observe_batch(count: int = BATCH) -> None:
    lines = "\n".join(json.dumps(lesson(i)) for i in range(count))
    ok("observe", "--from", "-", input=lines)


def segment_of(home: Path) -> Path:
    (path,) = EventLog(home).segments()
    return path


def flip(path: Path, number: int, needle: bytes = b"wrap the flaky") -> bytes:
    """Flip one bit inside line ``number`` (1-based; negative from the end); its bytes."""
    lines = path.read_bytes().splitlines(keepends=True)
    line = bytearray(lines[number if number < 0 else number - 1])
    line[line.index(needle) + 2] ^= 0x01
    lines[number if number < 0 else number - 1] = bytes(line)
    path.write_bytes(b"".join(lines))
    return bytes(line)


def listed() -> list[str]:
    result = ok("list", "--limit", "1000", "--json")
    return sorted(entry["name"] for entry in json.loads(result.stdout)["entries"])


@pytest.mark.parametrize("after", [0, 2], ids=["at-the-end-of-the-log", "mid-log"])
def test_a_flipped_bit_in_the_last_line_of_a_batch_loses_that_event_only(
    memlog_home: Path, after: int
) -> None:
    ok("observe", "--name", "Before", "--description", "A lesson before.", "--category", "facts")
    observe_batch()
    for i in range(after):
        ok("observe", "--name", f"After {i}", "--description", f"Later {i}.", "--category", "facts")
    path = segment_of(memlog_home)
    lines = path.read_bytes().splitlines()
    last_of_batch = 1 + next(i for i, x in enumerate(lines) if b'"name":"Lesson 49"' in x)
    assert json.loads(lines[last_of_batch - 1])["seq"] == last_of_batch  # line = sequence
    damaged = flip(path, last_of_batch)

    ok("replay")  # the views as the log now gives them
    names = listed()
    assert len(names) == 1 + BATCH - 1 + after and f"Lesson {BATCH - 1}" not in names
    assert "Lesson 0" in names and "Lesson 48" in names
    found = ok("search", "wrap the flaky call 7 in a bounded retry")
    assert "Lesson 7" in found.stdout
    injected = ok("inject", "--limit", "5")
    assert "Lesson" in injected.stdout

    checked = invoke("verify", "--log-only")
    assert checked.exit_code == 1
    named = f"{path.name} line {last_of_batch} (seq {last_of_batch}): checksum mismatch"
    assert f"problem: {named}" in checked.stderr
    assert "gap" not in checked.stderr and "log: 1 problems" in checked.stdout
    doctor = invoke("doctor")
    assert doctor.exit_code == 1
    assert f"PROBLEM  log          {named}" in doctor.stdout

    repaired = ok("verify", "--repair", "--log-only")
    assert repaired.stdout.splitlines()[0].startswith(f"moved {named}")
    assert sum(line.startswith("moved ") for line in repaired.stdout.splitlines()) == 1
    (record,) = [r for r in seg.read_quarantine(Home(memlog_home)) if r.size]
    assert base64.b64decode(record.data) + b"\n" == damaged and record.seqs == (last_of_batch,)
    assert listed() == names  # every line that passed its checksum stayed
    lost = f"1 event lost to damage (seq {last_of_batch}); their bytes are in quarantine.jsonl"
    assert f"log: {lost}" in ok("verify").stdout
    assert f"warn     log          {lost}" in ok("doctor").stdout

    ok("observe", "--name", "Next", "--description", "The next lesson.", "--category", "facts")
    events = [r.event for r in EventLog(memlog_home).read()]
    (added,) = [e for e in events if isinstance(e, Observed) and e.name == "Next"]
    assert added.seq == len(lines) + 1  # never the lost one's sequence again
    assert len({e.seq for e in events}) == len(events)


@pytest.mark.parametrize("number", [1, 2, 25, 50], ids=["first", "second", "middle", "last"])
def test_any_one_damaged_line_of_a_batch_costs_that_line(memlog_home: Path, number: int) -> None:
    log = EventLog(memlog_home)
    stored = log.append([Observed(category="facts", **_texts(i)) for i in range(BATCH)])
    path = segment_of(memlog_home)
    flip(path, number)
    damage: list[Damage] = []
    read = [r.event for r in log.read(on_damage=damage.append, include_torn_tail=True)]
    assert read == [e for e in stored if e.seq != number]
    assert [(d.line, d.seqs, d.reason) for d in damage] == [
        (number, (number,), "checksum mismatch (damaged or edited line)")
    ]
    assert repair_log(log) == [f"moved {damage[0].describe()} ({damage[0].length} bytes)"]
    assert [r.event for r in log.read()] == read
    report = verify_log(log)
    assert report.clean and report.acknowledged_gaps == [number]


def _texts(i: int) -> dict[str, str]:
    return {"name": f"L{i}", "description": f"entry {i}: wrap the flaky call in a retry"}


def test_a_newline_lost_at_rest_costs_the_line_it_ended(memlog_home: Path) -> None:
    """Two lines joined: the second is found again behind the first (salvaged)."""
    log = EventLog(memlog_home)
    stored = log.append([Observed(category="facts", **_texts(i)) for i in range(5)])
    path = segment_of(memlog_home)
    data = bytearray(path.read_bytes())
    cut = [i for i, b in enumerate(data) if b == ord("\n")][3]  # between lines 4 and 5
    data[cut] ^= 0x01
    path.write_bytes(bytes(data))
    damage: list[Damage] = []
    assert [r.event for r in log.read(on_damage=damage.append)] == stored[:3] + stored[4:]
    assert [d.seqs for d in damage] == [(4,)]
    assert log.append([Promoted(entry_id="0" * 16)])[0].seq == 6


def test_a_batch_a_crash_cut_short_still_goes_whole(memlog_home: Path) -> None:
    """Lines of a write that never finished: not acknowledged (past the high-water mark)."""
    log = EventLog(memlog_home)
    log.append([Observed(category="facts", **_texts(i)) for i in range(3)])
    path = segment_of(memlog_home)
    good = path.read_bytes()
    torn = [Observed(seq=s, batch_end=8, category="facts", **_texts(s)) for s in range(4, 9)]
    with open(path, "ab") as handle:
        handle.write(b"".join(encode_line(e) for e in torn[:3]) + encode_line(torn[3])[:40])
    assert log.written() == 3

    assert [r.event.seq for r in log.read()] == [1, 2, 3]
    (added,) = log.append([Promoted(entry_id="0" * 16)])
    assert added.seq == 4 and path.read_bytes() == good + encode_line(added)
    assert verify_log(log).clean


def test_a_damaged_line_inside_a_torn_write_goes_with_it(memlog_home: Path) -> None:
    """Zeroed blocks a crash left (NUL bytes) are a write that never finished, not damage
    at rest: the batch still goes whole."""
    log = EventLog(memlog_home)
    log.append([Observed(category="facts", **_texts(i)) for i in range(2)])
    path = segment_of(memlog_home)
    torn = [Observed(seq=s, batch_end=5, category="facts", **_texts(s)) for s in (3, 4)]
    lines = [encode_line(e) for e in torn]
    zeroed = b"\0" * (len(lines[0]) - 1) + b"\n"
    forget_mark(log)  # a log of an earlier version: no mark
    with open(path, "ab") as handle:
        handle.write(zeroed + lines[1])
    assert [r.event.seq for r in log.read()] == [1, 2]
    assert log.append([Promoted(entry_id="0" * 16)])[0].seq == 3


def test_a_log_of_an_earlier_version_keeps_a_batch_damaged_at_rest(memlog_home: Path) -> None:
    """No high-water mark yet: a damaged complete line says the batch was written whole (a
    torn write leaves only good lines); the first append starts keeping the mark."""
    log = EventLog(memlog_home)
    stored = log.append([Observed(category="facts", **_texts(i)) for i in range(4)])
    forget_mark(log)
    path = segment_of(memlog_home)
    flip(path, -1)
    assert [r.event for r in log.read()] == stored[:3]
    (added,) = log.append([Promoted(entry_id="0" * 16)])
    assert added.seq == 5 and log.written() == 5
    assert [r.event.seq for r in log.read()] == [1, 2, 3, 5]
    repair_log(log)
    assert [r.event.seq for r in log.read()] == [1, 2, 3, 5] and verify_log(log).clean


# -- sequences are never handed out twice ------------------------------------------------


def three(home: Path) -> EventLog:
    log = EventLog(home)
    for i in range(3):
        log.append([Observed(category="facts", **_texts(i))])
    return log


def test_a_tail_cut_at_rest_never_gives_its_sequence_again(memlog_home: Path) -> None:
    log = three(memlog_home)
    path = segment_of(memlog_home)
    data = path.read_bytes()
    path.write_bytes(data[: data.rindex(b"\n", 0, len(data) - 1) + 20])  # line 3 torn

    report = verify_log(log)
    assert "seq 3..3 missing from the end of the log (written, then lost)" in report.sequence
    (added,) = log.append([Promoted(entry_id="0" * 16)])
    assert added.seq == 4
    report = verify_log(log)
    assert report.clean and report.acknowledged_gaps == [3]


def test_a_tail_cut_at_a_line_end_never_gives_its_sequence_again(memlog_home: Path) -> None:
    log = three(memlog_home)
    path = segment_of(memlog_home)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:2]))  # a valid, shorter log: only the mark knows
    assert not verify_log(log).clean
    assert log.append([Promoted(entry_id="0" * 16)])[0].seq == 4
    assert verify_log(log).acknowledged_gaps == [3]


def test_a_repaired_tail_never_lowers_the_mark(memlog_home: Path) -> None:
    log = three(memlog_home)
    path = segment_of(memlog_home)
    flip(path, 3, b"wrap the flaky")
    assert len(repair_log(log)) == 1
    assert [r.event.seq for r in log.read()] == [1, 2]
    assert log.append([Promoted(entry_id="0" * 16)])[0].seq == 4


def test_a_repair_of_a_log_without_a_mark_keeps_its_sequences(memlog_home: Path) -> None:
    log = three(memlog_home)
    forget_mark(log)
    flip(segment_of(memlog_home), 3, b"wrap the flaky")
    assert len(repair_log(log)) == 1
    assert seg.read_high_water(log.home.events) == 3  # repair keeps it in .seq, synced
    assert log.append([Promoted(entry_id="0" * 16)])[0].seq == 4


def test_each_device_keeps_its_own_mark(memlog_home: Path) -> None:
    log = three(memlog_home)
    with log._locked():
        devices.to_devices(log.home)
    own = log.home.device(devices.device_id(log.home))
    path = log.segments()[0]
    data = path.read_bytes()
    path.write_bytes(data[: data.rindex(b"\n", 0, len(data) - 1) + 1])  # seq 3 gone
    (added,) = log.append([Promoted(entry_id="0" * 16)])
    assert added.seq == 4  # the flat log's mark was this device's
    assert written_in(log.home, own) == 4
    assert verify_log(log).acknowledged_gaps == [3]


def test_the_mark_is_raised_with_every_append_and_redaction(memlog_home: Path) -> None:
    """On the tail segment's inode once its lines are synced (no flush of its own), and in
    ``.seq`` when a rewrite replaces the segments' inodes."""
    from memlog.eventlog.expunge import Target, expunge

    log = three(memlog_home)
    assert log.written() == 3 and seg.segment_mark(segment_of(memlog_home)) == 3
    log.append([Observed(category="facts", **_texts(i)) for i in range(5, 8)])
    assert log.written() == 6 and seg.segment_mark(segment_of(memlog_home)) == 6
    expunge(log, Target(None, "entry 5"), "test")
    assert log.written() == 7 and seg.read_high_water(log.home.events) == 7
    mark = log.home.events / seg.HIGH_WATER_NAME
    assert mark.stat().st_mode & 0o777 == 0o600 and mark.read_bytes() == b"%020d\n" % 7


def test_without_extended_attributes_the_mark_is_kept_in_its_file(
    memlog_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(seg, "mark_segment", lambda fd, seq: False)
    log = three(memlog_home)
    assert seg.read_high_water(log.home.events) == 3 and log.written() == 3


def forget_mark(log: EventLog) -> None:
    """The log as an earlier version left it: no high-water mark anywhere."""
    (log.home.events / seg.HIGH_WATER_NAME).unlink(missing_ok=True)
    for path in log.segments():
        with contextlib.suppress(OSError):
            os.removexattr(path, seg.HIGH_WATER_ATTR)


@pytest.mark.slow
def test_a_flipped_bit_in_the_last_line_of_an_import_loses_one_entry(memlog_home: Path) -> None:
    """The 265 entries of a real knowledge bank, imported as one batch: a bit flipped in its
    last line took all of them out of every view (270 live → 5)."""
    from memlog.tests.support import FIXTURES

    ok("import", str(FIXTURES / "knowledge-bank-08a38d02"))
    live = len(listed())
    assert live == 265
    path = segment_of(memlog_home)
    lines = path.read_bytes().splitlines(keepends=True)
    last = max(i for i, line in enumerate(lines) if b'"type":"entry.observed"' in line) + 1
    batch_end = json.loads(lines[last - 1])["batch_end"]
    assert batch_end == json.loads(lines[last - 1])["seq"]  # the batch's last line
    flip(path, last, b'"description":"')
    ok("replay")
    assert len(listed()) == live - 1
    repaired = ok("verify", "--repair", "--log-only")
    assert sum(line.startswith("moved ") for line in repaired.stdout.splitlines()) == 1
    ok("replay")
    assert len(listed()) == live - 1
