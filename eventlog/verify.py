"""Check a log end to end, and move what is damaged out of it.

``verify_log`` reads every line: checksums, schemas, sequence continuity
across segments, segment names, and a torn tail.  ``repair_log`` rewrites
each damaged segment without its bad lines (kept verbatim in the quarantine
file) under the append lock, so no writer races it.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import NamedTuple

import msgspec

from memlog.eventlog import devices, rewrite
from memlog.eventlog import segments as seg
from memlog.eventlog.log import (
    Damage,
    EventLog,
    is_own,
    read_segment,
    written_in,
    written_whole,
)
from memlog.files import atomic_write
from memlog.home import Home

_SEQ_RE = re.compile(rb'"seq":(\d+)')


class Report(msgspec.Struct):
    """What a verification found; ``clean`` when nothing is wrong."""

    events: int = 0
    segments: int = 0
    last_seq: int = 0
    by_type: dict[str, int] = msgspec.field(default_factory=dict)
    damage: list[str] = msgspec.field(default_factory=list)
    sequence: list[str] = msgspec.field(default_factory=list)
    #: sequence numbers missing because a repair quarantined their lines
    acknowledged_gaps: list[int] = msgspec.field(default_factory=list)
    #: kept per device: the last sequence of each device
    devices: dict[str, int] = msgspec.field(default_factory=dict)

    @property
    def clean(self) -> bool:
        return not self.damage and not self.sequence

    def problems(self) -> list[str]:
        return self.damage + self.sequence


class _SeqCheck:
    """Follows sequence numbers through the log and names every break."""

    def __init__(self, acknowledged: set[int], reported: list[str]) -> None:
        self.acknowledged = acknowledged
        self.reported = reported
        self.damaged: set[int] = set()  # sequences of damaged lines (reported as damage)
        self.last = 0
        self.problems: list[str] = []
        self.gaps: list[int] = []

    def damage(self, found: Damage) -> None:
        self.reported.append(found.describe())
        self.damaged.update(found.seqs)

    def segment_start(self, path: Path, name: str) -> None:
        named = int(path.name.split(".")[0])
        if named != self.last + 1 and not self._covered(self.last + 1, named):
            self.problems.append(f"{name}: named for seq {named}, expected {self.last + 1}")

    def see(self, seq: int, where: str) -> None:
        if seq <= self.last:
            self.problems.append(f"{where}: seq {seq} after {self.last} (duplicate or reordered)")
            return
        if seq != self.last + 1 and not self._covered(self.last + 1, seq):
            self.problems.append(f"{where}: gap, seq {self.last + 1}..{seq - 1} missing")
        self.last = seq

    def end(self, written: int | None, name: str) -> None:
        """The end of a device's log: sequences handed out past it were lost from its end."""
        if written is None or written <= self.last:
            return
        if not self._covered(self.last + 1, written + 1):
            self.problems.append(
                f"{name}seq {self.last + 1}..{written} missing from the end of the log "
                "(written, then lost)"
            )

    def _covered(self, first: int, stop: int) -> bool:
        """Whether every number of ``first..stop-1`` was acknowledged or damaged (looked at
        only when there can be that many: a gap of 10^18 costs nothing)."""
        known = self.acknowledged | self.damaged
        if not 0 < stop - first <= len(known):
            return False
        missing = range(first, stop)
        if all(s in known for s in missing):
            self.gaps.extend(s for s in missing if s in self.acknowledged - self.damaged)
            return True
        return False


def lost_summary(seqs: list[int]) -> str:
    """One line naming the events lost to damage (their bytes kept in the quarantine file)."""
    shown = ", ".join(str(s) for s in seqs[:10]) + (", …" if len(seqs) > 10 else "")
    count = f"{len(seqs)} event{'s' if len(seqs) != 1 else ''}"
    return f"{count} lost to damage (seq {shown}); their bytes are in quarantine.jsonl"


def acknowledged_seqs(home: Home, device: str = "") -> set[int]:
    """Sequence numbers (of ``device``; "" when flat) whose lines a repair quarantined."""
    return {s for r in seg.read_quarantine(home) if _device_of(r.segment) == device for s in r.seqs}


def _device_of(segment: str) -> str:
    return segment.split("/", 1)[0] if "/" in segment else ""


def sequences(log: EventLog) -> list[tuple[str, list[Path]]]:
    """The log's segments by sequence: one group when flat, one per device otherwise."""
    names = devices.device_dirs(log.home)
    if not names:
        return [("", seg.list_segments(log.home.events))]
    return [(name, seg.list_segments(log.home.device(name))) for name in names]


def verify_log(log: EventLog, finish: bool = True) -> Report:
    """Check every line of ``log``; ``finish``: complete a rewrite a crash cut short first
    (``doctor`` passes False: it writes nothing)."""
    if finish:
        rewrite.recover(log)  # a committed rewrite is part of the log
    report = Report()
    counts: Counter[str] = Counter()

    for device, paths in sequences(log):
        check = _SeqCheck(acknowledged_seqs(log.home, device), report.damage)
        folder = log.home.device(device) if device else log.home.events
        written = written_in(log.home, folder)
        for index, path in enumerate(paths):
            name = log.name_of(path)
            check.segment_start(path, name)
            # a tail without newline is damage in any segment: only the last is ever
            # appended to, and the next append cuts a torn tail before rolling over
            whole = written_whole(paths, index, written)
            for record in read_segment(
                path, 0, check.damage, include_torn_tail=True, name=name, written=whole
            ):
                check.see(record.event.seq, f"{name} line {record.line}")
                counts[type(record.event).__struct_config__.tag] += 1  # type: ignore[index]
        check.end(written, f"{device}: " if device else "")
        report.sequence += check.problems
        report.acknowledged_gaps += check.gaps
        report.last_seq = max(report.last_seq, check.last)
        if device:
            report.devices[device] = check.last
    if report.devices and devices.flat_segments(log.home):
        report.sequence.append("segments left outside the device directories")
    report.events, report.segments = counts.total(), len(log.segments())
    report.by_type = dict(sorted(counts.items()))
    return report


def repair_log(log: EventLog) -> list[str]:
    """Quarantine every bad line and torn tail; return one line per move.

    Good lines all stay, the lines of a batch written whole among them: only
    a batch a crash cut short goes whole.  The device's high-water mark is
    raised past every sequence kept or lost at rest first, so the repaired
    tail never lowers it and no sequence is handed out again.
    """
    moved: list[str] = []
    with log._locked():
        for device, paths in sequences(log):
            folder = log.home.device(device) if device else log.home.events
            written = written_in(log.home, folder)
            plans = [
                _plan(log, path, written_whole(paths, index, written))
                for index, path in enumerate(paths)
            ]
            plans = [plan for plan in plans if plan.bad]
            if not plans:
                continue
            top = max([written or 0, *(plan.top for plan in plans)])
            if is_own(log.home, folder):
                _raise_mark(folder, top)
            for plan in plans:
                moved += _move(log, plan)
            _acknowledge_gaps(log, device, paths, top, _most_lost(plans))
    return moved


def _most_lost(plans: list[_Plan]) -> int:
    """The most sequence numbers the damage of ``plans`` can have taken with it (a line
    takes at least 16 bytes): a gap longer than that was made by no repair."""
    return sum(d.length // 16 + 1 + len(d.seqs) for plan in plans for d in plan.bad)


def _raise_mark(folder: Path, seq: int) -> None:
    seg.raise_high_water_file(folder, seq)


def _acknowledge_gaps(log: EventLog, device: str, paths: list[Path], top: int, most: int) -> None:
    """Record the sequence numbers a repair left missing, so verify can name them: those
    of gaps no longer than the damage could hold (``most``; a line claiming seq 10^18
    leaves a gap no repair made, and no range of that size is ever walked)."""
    present = sorted({r.event.seq for path in paths for r in read_segment(path)})
    known = acknowledged_seqs(log.home, device)
    found: list[int] = []
    for before, after in zip([0, *present], [*present, top + 1], strict=True):
        if 1 < after - before <= most + 1:
            found += [s for s in range(before + 1, after) if s not in known]
    lost = tuple(found)
    if lost:
        reason = "sequence numbers lost with quarantined lines"
        seg.quarantine(log.home, f"{device}/" if device else "", 0, b"", reason, None, lost)


class _Plan(NamedTuple):
    """What a repair does to one segment: the good lines it keeps, the damage it moves,
    and the highest sequence handed out that it saw (kept, or lost at rest)."""

    path: Path
    name: str
    good: list[int]
    bad: list[Damage]
    top: int


#: damage a crash leaves (bytes never acknowledged: their sequences may be handed out again)
_TORN = ("torn tail", "unfinished batch", "torn prefix", "batch cut short")


def _plan(log: EventLog, path: Path, written: int | None) -> _Plan:
    bad: list[Damage] = []
    name = log.name_of(path)
    records = read_segment(path, 0, bad.append, include_torn_tail=True, name=name, written=written)
    good, top = [], 0
    for record in records:  # offsets of good lines (salvaged lines start inside their damage)
        good.append(record.offset)
        top = max(top, record.event.seq)
    at_rest = [s for d in bad if not d.reason.startswith(_TORN) for s in d.seqs]
    return _Plan(path, name, good, bad, max([top, *at_rest]))


def _move(log: EventLog, plan: _Plan) -> list[str]:
    data = plan.path.read_bytes()
    kept = b"".join(data[o : data.index(b"\n", o) + 1] for o in plan.good)
    for d in plan.bad:
        chunk = data[d.offset : d.offset + d.length]
        seqs = d.seqs or tuple(int(m) for m in _SEQ_RE.findall(chunk))
        seg.quarantine(log.home, plan.name, d.offset, chunk, d.reason, d.line, seqs)
    atomic_write(plan.path, kept, log.home.root)
    return [f"moved {d.describe()} ({d.length} bytes)" for d in plan.bad]
