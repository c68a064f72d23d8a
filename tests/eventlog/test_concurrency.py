"""Many processes append to one log while some of them are killed mid-write."""

from __future__ import annotations

import base64
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from memlog.eventlog import reader as log_module
from memlog.eventlog import segments as seg
from memlog.eventlog.codec import encode_line
from memlog.eventlog.events import Observed, Promoted
from memlog.eventlog.log import Damage, EventLog
from memlog.eventlog.verify import repair_log, verify_log
from memlog.home import Home

WRITERS = 8
ROUNDS = 20
SEGMENT_BYTES = 8 << 20

# A writer appends forever.  Every event is named ``<tag>-<append>.<k>of<m>`` and
# its description is ``body(name, size)``, so any event read back can be checked
# byte for byte.  Only after ``append`` returns are the names written (and
# fsynced) to the ack file.  The first byte of the status file is ``W`` while
# the writer is in a ``write`` of a megabyte or more, so the driver can aim its
# kills at the middle of a large write.
WRITER = r"""
import os, random, sys
from pathlib import Path
from memlog.eventlog import segments
from memlog.eventlog.events import Observed
from memlog.eventlog.log import EventLog

home, ack_path, status_path, tag, seed, segment_bytes = sys.argv[1:7]
rng = random.Random(int(seed))
# (no scan of lessons: this measures the log's writes, and its filler text is no lesson)
log = EventLog(Path(home), segment_bytes=int(segment_bytes), command="writer", screen=False)
ack = os.open(ack_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
status = os.open(status_path, os.O_RDWR | os.O_CREAT, 0o600)
write_all = segments.write_all

def flagged_write_all(fd, data):
    big = len(data) >= 1 << 20
    if big:
        os.pwrite(status, b"W", 0)
    write_all(fd, data)
    if big:
        os.pwrite(status, b"-", 0)

segments.write_all = flagged_write_all
FILL = "abcdefghijklmnopqrstuvwxyz0123456789 " * 4096

def body(name, size):
    head = f"{name}:{size}:"
    return head + (FILL * (size // len(FILL) + 1))[: max(size - len(head), 0)]

def size_of(big):
    if big:  # one event is at most 64 KiB: a large write is a batch of large events
        return rng.randint(40_000, 60_000)
    return rng.choice([rng.randint(100, 2000)] * 8 + [rng.randint(2000, 60_000)] * 2)

n, big_left = 0, 2
while True:
    n += 1
    big = big_left > 0 and rng.random() < 0.04
    count = rng.randint(24, 80) if big else rng.choice([1, 1, 1, 2, 3, 5])
    big_left -= big
    sizes = [size_of(big) for _ in range(count)]
    names = [f"{tag}-{n}.{k}of{count}" for k in range(1, count + 1)]
    events = [
        Observed(name=name, description=body(name, size), category="facts")
        for name, size in zip(names, sizes)
    ]
    log.append(events)
    os.write(ack, ("\n".join(names) + "\n").encode())
    os.fsync(ack)
"""

FILL = "abcdefghijklmnopqrstuvwxyz0123456789 " * 4096


def body(name: str, size: int) -> str:
    head = f"{name}:{size}:"
    return head + (FILL * (size // len(FILL) + 1))[: max(size - len(head), 0)]


class Writers:
    """Writer processes by slot; each restart is a new incarnation with its own files."""

    def __init__(self, home: Path, work: Path, rng: random.Random) -> None:
        self.home, self.work, self.rng = home, work, rng
        self.script = work / "writer.py"
        self.script.write_text(WRITER)
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        self.status: dict[int, Path] = {}
        self.incarnations = 0

    def start(self, slot: int) -> None:
        self.incarnations += 1
        tag = f"w{slot}i{self.incarnations}"
        self.status[slot] = self.work / f"{tag}.status"
        args = [self.home, self.work / f"{tag}.ack", self.status[slot], tag]
        args += [self.rng.randrange(1 << 30), SEGMENT_BYTES]
        self.procs[slot] = subprocess.Popen([sys.executable, str(self.script), *map(str, args)])

    def in_a_big_write(self) -> list[int]:
        return [s for s, p in self.status.items() if p.exists() and p.read_bytes()[:1] == b"W"]

    def kill(self, slot: int) -> None:
        proc = self.procs.pop(slot)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert proc.returncode == -signal.SIGKILL, f"writer {slot} died by itself"

    def kill_all(self) -> None:
        for slot in list(self.procs):
            self.kill(slot)


def acknowledged(work: Path) -> list[str]:
    """Every name an ``append`` returned for (a torn last ack line is not an ack)."""
    names: list[str] = []
    for path in work.glob("*.ack"):
        text = path.read_text()
        lines = text.split("\n")
        names.extend(lines[:-1])  # complete lines only
    return names


def check_intact(log: EventLog) -> tuple[list[Observed], list[Damage]]:
    """Read everything; every event yielded must be exactly what a writer wrote."""
    damage: list[Damage] = []
    events = []
    for record in log.read(on_damage=damage.append):
        event = record.event
        assert isinstance(event, Observed)
        size = int(event.description.split(":", 2)[1])
        assert event.description == body(event.name, size), f"altered {event.name}"
        events.append(event)
    _check_batches(Counter(e.name for e in events))
    return events, damage


def _drive(writers: Writers, rng: random.Random, log: EventLog) -> None:
    for slot in range(WRITERS):
        writers.start(slot)
    time.sleep(0.5)
    for round_no in range(ROUNDS):
        victims: list[int] = []
        if round_no % 2:  # every other round: kill whoever is inside a large write
            deadline = time.monotonic() + 1.0
            while time.monotonic() < deadline and not victims:
                victims = writers.in_a_big_write()[:1]
        else:
            time.sleep(rng.uniform(0.1, 0.6))
        victims = victims or rng.sample(range(WRITERS), rng.randint(1, 3))
        for slot in victims:
            writers.kill(slot)
        check_intact(log)  # read while the others keep appending
        for slot in victims:
            writers.start(slot)


@pytest.mark.slow
def test_killed_writers_lose_no_acknowledged_event(memlog_home: Path, tmp_path: Path) -> None:
    rng = random.Random(20261122)
    work = tmp_path / "work"
    work.mkdir()
    log = EventLog(memlog_home)
    writers = Writers(memlog_home, work, rng)
    try:
        _drive(writers, rng, log)
    finally:
        writers.kill_all()

    report = verify_log(log)
    if not report.clean:  # only the last write, cut short by the final kill, may be left
        last = log.segments()[-1].name
        assert not report.sequence and 1 <= len(report.damage) <= 2, report.problems()
        for problem in report.damage:
            assert problem.startswith(last) and problem.endswith(TAIL_DAMAGE), problem
        assert len(repair_log(log)) == len(report.damage)
        report = verify_log(log)
    assert report.clean and not report.acknowledged_gaps, report.problems()

    events, damage = check_intact(log)
    assert not damage
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    names = Counter(e.name for e in events)
    assert max(names.values()) == 1, "an event was stored twice"
    acked = acknowledged(work)
    assert len(acked) == len(set(acked))
    missing = [n for n in acked if n not in names]
    assert not missing, f"{len(missing)} acknowledged events lost, e.g. {missing[:3]}"
    assert len(events) >= 200
    batch_bytes: Counter[str] = Counter()
    for e in events:
        batch_bytes[e.name.split(".")[0]] += len(e.description)
    assert max(batch_bytes.values()) > 1 << 20  # writes of a megabyte and more were cut
    assert any(e.name.endswith("of5") for e in events)
    _check_quarantine(memlog_home, set(acked), names)


TAIL_DAMAGE = ("torn tail (no newline)", "unfinished batch (interrupted write)")


def _check_batches(names: Counter[str]) -> None:
    """A batch is stored whole or not at all."""
    batches: Counter[str] = Counter()
    for name in names:
        batch, part = name.split(".")
        batches[f"{batch}/{part.split('of')[1]}"] += 1
    partial = {b: n for b, n in batches.items() if n != int(b.split("/")[1])}
    assert not partial, f"batches stored in part: {partial}"


def _names_in(data: bytes) -> list[str]:
    return [part.split(b'"', 1)[0].decode() for part in data.split(b'"name":"')[1:]]


def _check_quarantine(home: Path, acked: set[str], stored: Counter[str]) -> None:
    """Quarantined bytes are torn writes kept verbatim: the start of one batch, never acked.

    Complete lines among them are the first lines of a batch the crash cut short.
    """
    for record in seg.read_quarantine(Home(home)):
        data = base64.b64decode(record.data)
        assert record.size == len(data) > 0
        assert "torn tail" in record.reason or "unfinished batch" in record.reason
        assert data.startswith(b'{"type":"entry.observed"')
        names = _names_in(data)
        assert not (set(names) & (acked | set(stored)))
        assert len({n.split(".")[0] for n in names}) <= 1, f"several batches torn: {names}"


# -- a torn tail written by hand ----------------------------------------------------


def _three(home: Path) -> EventLog:
    log = EventLog(home)
    log.append([Observed(name=f"E{i}", description=f"entry {i}", category="facts") for i in "123"])
    return log


def test_torn_tail_is_quarantined_verbatim_and_cut_by_the_next_append(memlog_home: Path) -> None:
    log = _three(memlog_home)
    (path,) = log.segments()
    good = path.read_bytes()
    line = encode_line(Observed(seq=4, name="E4", description="entry 4", category="facts"))
    torn = line[: len(line) // 2]
    with open(path, "ab") as handle:
        handle.write(torn)

    assert [r.event.name for r in log.read()] == ["E1", "E2", "E3"]
    report = verify_log(log)
    assert report.damage == [f"{path.name} byte {len(good)}: torn tail (no newline)"]

    (added,) = log.append([Promoted(entry_id="0123456789abcdef")])
    assert added.seq == 4
    assert path.read_bytes() == good + encode_line(added)
    (record,) = seg.read_quarantine(Home(memlog_home))
    assert base64.b64decode(record.data) == torn
    assert (record.segment, record.offset, record.size) == (path.name, len(good), len(torn))
    assert "torn tail" in record.reason
    raw = (memlog_home / "quarantine.jsonl").read_bytes()
    assert raw.count(b"\n") == 1 and base64.b64encode(torn) in raw
    assert verify_log(log).clean


@pytest.mark.parametrize("torn", [0, 25], ids=["at-a-line-end", "mid-line"])
def test_a_batch_cut_short_is_never_read_and_goes_whole(memlog_home: Path, torn: int) -> None:
    log = _three(memlog_home)
    (path,) = log.segments()
    good = path.read_bytes()
    batch = [
        Observed(seq=s, batch_end=6, name=f"B{s}", description=f"batch {s}", category="facts")
        for s in (4, 5, 6)
    ]
    cut_short = encode_line(batch[0]) + encode_line(batch[1]) + encode_line(batch[2])[:torn]
    with open(path, "ab") as handle:
        handle.write(cut_short)

    assert [r.event.name for r in log.read()] == ["E1", "E2", "E3"]
    damage = verify_log(log).damage
    assert f"{path.name} line 4 (seq 4..5): unfinished batch (interrupted write)" in damage

    (added,) = log.append([Promoted(entry_id="0123456789abcdef")])
    assert added.seq == 4 and path.read_bytes() == good + encode_line(added)
    (record,) = seg.read_quarantine(Home(memlog_home))
    assert base64.b64decode(record.data) == cut_short and record.offset == len(good)
    assert verify_log(log).clean


def test_a_whole_batch_is_read_whole(memlog_home: Path) -> None:
    log = _three(memlog_home)
    log.append([Promoted(entry_id=f"{i:016x}") for i in range(3)])
    events = [r.event for r in log.read()]
    assert [(e.seq, e.batch_end) for e in events] == [(s, 3 if s <= 3 else 6) for s in range(1, 7)]
    (single,) = log.append([Promoted(entry_id="0" * 16)])
    assert single.batch_end == 0 and verify_log(log).clean


def test_a_reader_crossing_a_repair_misses_nothing(
    memlog_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read that has seen a torn tail, then goes on after an append cut it."""
    log = _three(memlog_home)
    (path,) = log.segments()
    lines = path.read_bytes().splitlines(keepends=True)
    monkeypatch.setattr(log_module, "_READ_CHUNK", len(lines[0]) + len(lines[1]) + 10)
    with open(path, "ab") as handle:
        handle.write(encode_line(Observed(seq=4, name="T", description="t", category="facts"))[:99])

    damage: list[Damage] = []
    reader = log.read(on_damage=damage.append)
    seen = [next(reader), next(reader), next(reader)]  # the torn bytes are read with E3
    log.append([Observed(name=n, description=n, category="facts") for n in ("E4", "E5")])
    seen += list(reader)
    seen += list(log.read(seen[-1].after, on_damage=damage.append))
    assert [r.event.name for r in seen] == ["E1", "E2", "E3", "E4", "E5"]
    assert not damage


def test_line_glued_after_a_torn_prefix_is_salvaged(memlog_home: Path) -> None:
    log = _three(memlog_home)
    (path,) = log.segments()
    good = path.read_bytes()
    half = encode_line(Observed(seq=4, name="Torn", description="never done", category="facts"))
    whole = encode_line(Observed(seq=4, name="E4", description="entry 4", category="facts"))
    with open(path, "ab") as handle:
        handle.write(half[:40] + whole)

    damage: list[Damage] = []
    records = list(log.read(on_damage=damage.append))
    assert [r.event.name for r in records] == ["E1", "E2", "E3", "E4"]
    assert records[-1].offset == len(good) + 40 and records[-1].end == len(good) + 40 + len(whole)
    assert [(d.offset, d.length, d.line, d.reason) for d in damage] == [
        (len(good), 40, 4, "torn prefix glued to a good line")
    ]
    assert not verify_log(log).clean

    moved = repair_log(log)
    assert moved == [f"moved {path.name} line 4: torn prefix glued to a good line (40 bytes)"]
    assert path.read_bytes() == good + whole
    (record,) = seg.read_quarantine(Home(memlog_home))
    assert base64.b64decode(record.data) == half[:40]
    report = verify_log(log)
    assert report.clean and report.last_seq == 4
    assert log.append([Promoted(entry_id="0123456789abcdef")])[0].seq == 5


def test_a_quarantine_record_torn_by_a_crash_breaks_nothing(memlog_home: Path) -> None:
    log = _three(memlog_home)
    (path,) = log.segments()
    quarantine = memlog_home / "quarantine.jsonl"
    torn = b'{"type":"entry.observed","seq":'
    offsets = []
    for name in ("first", "second"):
        offsets.append(path.stat().st_size)
        with open(path, "ab") as handle:
            handle.write(torn)
        log.append([Observed(name=name, description=name, category="facts")])
        if name == "first":  # a crash while its record was written
            cut = quarantine.read_bytes()[:50]
            quarantine.write_bytes(cut)

    (record,) = seg.read_quarantine(Home(memlog_home))  # the torn record is skipped
    assert base64.b64decode(record.data) == torn and record.offset == offsets[1]
    raw = quarantine.read_bytes()  # the second record did not glue onto the torn one
    assert raw.startswith(cut + b"\n") and raw.count(b"\n") == 2
    report = verify_log(log)
    assert report.clean and report.last_seq == 5
    assert repair_log(log) == []


def test_appends_from_many_processes_interleave_without_loss(memlog_home: Path) -> None:
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from memlog.eventlog.events import Observed\n"
        "from memlog.eventlog.log import EventLog\n"
        "log = EventLog(Path(sys.argv[1]))\n"
        "for i in range(40):\n"
        "    log.append([Observed(name=f'{sys.argv[2]}-{i}', description=f'{sys.argv[2]} {i}',"
        " category='facts')])\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(memlog_home), f"p{n}"])
        for n in range(4)
    ]
    assert all(p.wait(timeout=60) == 0 for p in procs)
    log = EventLog(memlog_home)
    events = [r.event for r in log.read()]
    assert [e.seq for e in events] == list(range(1, 161))
    assert sorted(e.name for e in events if isinstance(e, Observed)) == sorted(
        f"p{n}-{i}" for n in range(4) for i in range(40)
    )
    assert verify_log(log).clean
    for n in range(4):  # each process's own appends keep their order
        mine = [e.name for e in events if isinstance(e, Observed) and e.name.startswith(f"p{n}-")]
        assert mine == [f"p{n}-{i}" for i in range(40)]
    assert os.stat(log.segments()[0]).st_mode & 0o777 == 0o600
