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

import msgspec

from memlog.eventlog import devices, rewrite
from memlog.eventlog import segments as seg
from memlog.eventlog.log import Damage, EventLog, read_segment
from memlog.files import atomic_write

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

    def __init__(self, acknowledged: set[int]) -> None:
        self.acknowledged = acknowledged
        self.last = 0
        self.problems: list[str] = []
        self.gaps: list[int] = []

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

    def _covered(self, first: int, stop: int) -> bool:
        missing = set(range(first, stop))
        if missing and missing <= self.acknowledged:
            self.gaps.extend(sorted(missing))
            return True
        return False


def acknowledged_seqs(home: Path, device: str = "") -> set[int]:
    """Sequence numbers (of ``device``; "" when flat) whose lines a repair quarantined."""
    return {s for r in seg.read_quarantine(home) if _device_of(r.segment) == device for s in r.seqs}


def _device_of(segment: str) -> str:
    return segment.split("/", 1)[0] if "/" in segment else ""


def sequences(log: EventLog) -> list[tuple[str, list[Path]]]:
    """The log's segments by sequence: one group when flat, one per device otherwise."""
    names = devices.device_dirs(log.events_dir)
    if not names:
        return [("", seg.list_segments(log.events_dir))]
    return [(name, seg.list_segments(log.events_dir / name)) for name in names]


def verify_log(log: EventLog) -> Report:
    rewrite.recover(log)  # a committed rewrite is part of the log
    report = Report()
    counts: Counter[str] = Counter()

    def damaged(d: Damage) -> None:
        report.damage.append(d.describe())

    for device, paths in sequences(log):
        check = _SeqCheck(acknowledged_seqs(log.home, device))
        for path in paths:
            name = log.name_of(path)
            check.segment_start(path, name)
            # a tail without newline is damage in any segment: only the last is ever
            # appended to, and the next append cuts a torn tail before rolling over
            for record in read_segment(path, 0, damaged, include_torn_tail=True, name=name):
                check.see(record.event.seq, f"{name} line {record.line}")
                counts[type(record.event).__struct_config__.tag] += 1  # type: ignore[index]
        report.sequence += check.problems
        report.acknowledged_gaps += check.gaps
        report.last_seq = max(report.last_seq, check.last)
        if device:
            report.devices[device] = check.last
    if report.devices and devices.flat_segments(log.events_dir):
        report.sequence.append("segments left outside the device directories")
    report.events, report.segments = counts.total(), len(log.segments())
    report.by_type = dict(sorted(counts.items()))
    return report


def repair_log(log: EventLog) -> list[str]:
    """Quarantine every bad line and torn tail; return one line per move."""
    moved: list[str] = []
    with log._locked():
        for device, paths in sequences(log):
            found = [m for path in paths for m in _repair_segment(log, path)]
            if found:
                _acknowledge_gaps(log, device, paths)
            moved += found
    return moved


def _acknowledge_gaps(log: EventLog, device: str, paths: list[Path]) -> None:
    """Record the sequence numbers a repair left missing, so verify can name them."""
    seen = sorted(r.event.seq for path in paths for r in read_segment(path))
    known = acknowledged_seqs(log.home, device)
    present = set(seen)
    top = seen[-1] if seen else 0
    lost = tuple(s for s in range(1, top) if s not in present and s not in known)
    if lost:
        reason = "sequence numbers lost with quarantined lines"
        seg.quarantine(log.home, f"{device}/" if device else "", 0, b"", reason, None, lost)


def _repair_segment(log: EventLog, path: Path) -> list[str]:
    bad: list[Damage] = []
    name = log.name_of(path)
    good = [
        r.offset for r in read_segment(path, 0, bad.append, include_torn_tail=True, name=name)
    ]  # offsets of good lines (salvaged lines start inside their damaged line)
    if not bad:
        return []
    data = path.read_bytes()
    kept = b"".join(data[o : data.index(b"\n", o) + 1] for o in good)
    for d in bad:
        chunk = data[d.offset : d.offset + d.length]
        seqs = tuple(int(m) for m in _SEQ_RE.findall(chunk))
        seg.quarantine(log.home, name, d.offset, chunk, d.reason, d.line, seqs)
    _replace(path, kept)
    return [f"moved {d.describe()} ({d.length} bytes)" for d in bad]


def _replace(path: Path, data: bytes) -> None:
    atomic_write(path, data)
