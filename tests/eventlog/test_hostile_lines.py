"""Lines no writer of memlog makes, however they got into a log: a date in the year 9999,
a sequence of 10^18, a line of megabytes, bytes that are not UTF-8.  None of them may
stop a write, cost memory out of proportion, or end a command in a traceback."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from memlog.commands.cli import cli
from memlog.errors import InvalidInput
from memlog.eventlog import clock
from memlog.eventlog.events import Observed
from memlog.eventlog.log import EventLog
from memlog.eventlog.verify import Report, repair_log, verify_log
from memlog.home import Home
from memlog.tests import forge


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def seeded(home: Path) -> tuple[EventLog, Path]:
    log = EventLog(home)
    log.append([Observed(name="Pin", description="Pin tool versions.", category="patterns")])
    return log, log.segments()[-1]


def append_raw(path: Path, line: bytes) -> None:
    with open(path, "ab") as handle:
        handle.write(line)


def test_an_event_dated_9999_never_makes_a_local_write_fail(memlog_home: Path) -> None:
    log, segment = seeded(memlog_home)
    append_raw(segment, forge.event("entry.retired", 2, ts="9999-12-31T23:59:59.999999Z",
                                    entry_id="0123456789abcdef", reason="x"))  # fmt: skip
    for args in (
        ["observe", "--name", "Later", "--description", "Written after.", "--category", "facts"],
        ["list"],
        ["retire", "--reason", "done", run("list", "--json").stdout.split('"id":"')[1][:10]],
    ):
        done = run(*args)
        assert done.exit_code == 0, done.output
    stamps = [r.event.ts for r in EventLog(memlog_home).read()]
    assert all(ts < "9000" for ts in stamps)
    report = verify_log(log)
    assert any("time out of range" in d for d in report.damage), report.damage
    assert repair_log(log) and verify_log(log).damage == []


def test_the_clock_never_writes_past_its_last_year(memlog_home: Path) -> None:
    events = memlog_home / "events"
    events.mkdir(parents=True)
    (events / ".clock").write_text(str(10**20))  # a floor no clock can follow
    stored = EventLog(memlog_home).append([Observed(name="a", description="b", category="facts")])
    assert stored[0].ts == clock.iso(clock.LATEST) == "9000-01-01T00:00:00.000000Z"


def verified_and_repaired(log: EventLog) -> tuple[Report, list[str], int]:
    """``verify_log`` then ``repair_log`` of ``log``, with the most memory they took."""
    tracemalloc.start()
    try:
        report = verify_log(log)
        repaired = repair_log(log)
        return report, repaired, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("seq", [10**18, 9999999999999999999])
def test_a_sequence_past_2_53_is_damage_never_read(memlog_home: Path, seq: int) -> None:
    """It was read (every later event numbered from there, or OverflowError at every
    write): now it is damage, named by verify, moved by a repair, and writes go on."""
    log, segment = seeded(memlog_home)
    append_raw(segment, forge.event("entry.retired", seq, entry_id="0123456789abcdef"))
    assert [r.event.seq for r in log.read()] == [1]
    stored = log.append([Observed(name="Next", description="Written after.", category="facts")])
    assert stored[0].seq == 2
    report, repaired, peak = verified_and_repaired(log)
    assert any("9007199254740991" in d for d in report.damage), report.damage
    assert len(repaired) == 1 and verify_log(log).damage == []
    assert peak < 20 << 20, f"verify peaked at {peak} bytes"


def test_a_damaged_line_before_a_seq_of_10_18_is_given_no_range_of_sequences(
    memlog_home: Path,
) -> None:
    log, segment = seeded(memlog_home)
    append_raw(segment, b"not an event line at all\n")
    append_raw(segment, forge.event("entry.retired", 10**18, entry_id="0123456789abcdef"))
    report, repaired, peak = verified_and_repaired(log)
    assert any("no checksum" in d for d in report.damage), report.damage
    assert any("9007199254740991" in d for d in report.damage), report.damage
    assert len(repaired) == 2
    assert peak < 20 << 20, f"verify peaked at {peak} bytes"
    for args in (["verify"], ["verify", "--repair"], ["list"]):
        done = run(*args)
        assert "internal error" not in done.output, (args, done.output)


def test_a_line_past_the_largest_event_is_damage_never_read(memlog_home: Path) -> None:
    log, segment = seeded(memlog_home)
    huge = "x" * (5 << 20)
    append_raw(segment, forge.event("entry.observed", 2, name="Huge", description=huge,
                                    category="facts"))  # fmt: skip
    assert [r.event.seq for r in log.read()] == [1]
    report = verify_log(log)
    assert any("too long" in d for d in report.damage), report.damage
    done = run("list", "--json")
    assert done.exit_code == 0 and "Huge" not in done.stdout


def test_a_line_that_is_not_utf8_is_damage_not_a_crash(memlog_home: Path) -> None:
    log, segment = seeded(memlog_home)
    append_raw(segment, forge.raw_line(b'{"type":"entry.retired","seq":2,"id":"x","ts":"2026-'
                                       b'05-01T09:00:00.000000Z","entry_id":"0123456789abcdef",'
                                       b'"reason":"\xff\xfe"'))  # fmt: skip
    report = verify_log(log)
    assert any("not UTF-8" in d for d in report.damage), report.damage
    for args in (["list"], ["verify"], ["log"], ["stats"]):
        done = run(*args)
        assert "internal error" not in done.output, (args, done.output)
        assert done.exit_code in (0, 1), (args, done.output)


def test_an_event_larger_than_the_limit_is_refused_and_nothing_is_written(
    memlog_home: Path,
) -> None:
    log, segment = seeded(memlog_home)
    before = segment.read_bytes()
    big = Observed(name="Big", description="y" * (70 << 10), category="facts")
    with pytest.raises(InvalidInput, match=r"more than the 64 KiB an event may hold"):
        log.append([Observed(name="ok", description="fine", category="facts"), big])
    assert segment.read_bytes() == before


@pytest.mark.parametrize("door", ["option", "from", "import"])
def test_every_door_refuses_an_entry_past_the_limit_in_one_line(
    memlog_home: Path, tmp_path: Path, door: str
) -> None:
    seeded(memlog_home)
    text = "z" * (80 << 10)
    if door == "option":
        done = run("observe", "--name", "Big", "--description", text, "--category", "facts")
    elif door == "from":
        source = tmp_path / "in.jsonl"
        source.write_text(f'{{"name": "Big", "description": "{text}", "category": "facts"}}\n')
        done = run("observe", "--from", str(source))
    else:
        bank = tmp_path / "docs" / "knowledge-bank"
        bank.mkdir(parents=True)
        (bank / "patterns.md").write_text(f"# Patterns\n\n### Pattern: Big\n{text}\n")
        done = run("import", str(bank))
    assert done.exit_code == 2, done.output
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "64 KiB" in lines[0] and text[:100] not in lines[0], lines
    assert [r.event.seq for r in EventLog(memlog_home).read()] == [1]


def test_long_lists_spread_over_events_that_fit(memlog_home: Path) -> None:
    """A redaction of thousands of entries, a recall of thousands of ids (limit -1 on a
    large store): several events of one batch, each within the limit, none refused."""
    from memlog.eventlog.bounds import MAX_EVENT_BYTES
    from memlog.eventlog.events import Recalled, Redacted
    from memlog.eventlog.expunge import Target, expunge
    from memlog.projections.fold import fold
    from memlog.retrieval.record import Recall, write

    log = EventLog(memlog_home)
    log.append([Observed(name=f"E{i}", description=f"Entry {i} mentions hunter2hunter2.",
                         category="facts") for i in range(4000)])  # fmt: skip
    ids = list(fold(r.event for r in log.read()).entries)
    assert not write(Home(memlog_home), Recall(ids=ids, session_id="s", project="p", query="q",
                                         mode="test", last_injection=b"{}"), "inject")  # fmt: skip
    done = expunge(log, Target(None, "hunter2hunter2"), "a password")
    assert len(done.event.ids) == 4000 and done.events == 4000
    stored = [r.event for r in EventLog(memlog_home).read()]
    recalls = [e for e in stored if isinstance(e, Recalled)]
    redactions = [e for e in stored if isinstance(e, Redacted)]
    assert len(recalls) > 1 and sum(len(e.ids) for e in recalls) == 4000
    assert len(redactions) > 1 and sum(len(e.ids) for e in redactions) == 4000
    for segment in log.segments():
        assert max(len(line) for line in segment.read_bytes().splitlines()) <= MAX_EVENT_BYTES
    state = fold(stored)
    assert all(e.recall_count == 1 for e in state.entries.values())
