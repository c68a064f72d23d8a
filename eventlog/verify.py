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

from memlog.eventlog import rewrite
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

    def segment_start(self, path: Path) -> None:
        named = int(path.name.split(".")[0])
        if named != self.last + 1 and not self._covered(self.last + 1, named):
            self.problems.append(f"{path.name}: named for seq {named}, expected {self.last + 1}")

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


def acknowledged_seqs(home: Path) -> set[int]:
    """Sequence numbers whose lines a repair moved to the quarantine file."""
    return {s for r in seg.read_quarantine(home) for s in r.seqs}


def verify_log(log: EventLog) -> Report:
    rewrite.recover(log)  # a committed rewrite is part of the log
    report = Report()
    check = _SeqCheck(acknowledged_seqs(log.home))
    counts: Counter[str] = Counter()
    segments = log.segments()

    def damaged(d: Damage) -> None:
        report.damage.append(d.describe())

    for path in segments:
        check.segment_start(path)
        # a tail without newline is damage in any segment: only the last is ever
        # appended to, and the next append cuts a torn tail before rolling over
        for record in read_segment(path, 0, damaged, include_torn_tail=True):
            check.see(record.event.seq, f"{path.name} line {record.line}")
            counts[type(record.event).__struct_config__.tag] += 1  # type: ignore[index]
    report.events, report.segments, report.last_seq = counts.total(), len(segments), check.last
    report.by_type, report.sequence = dict(sorted(counts.items())), check.problems
    report.acknowledged_gaps = check.gaps
    return report


def repair_log(log: EventLog) -> list[str]:
    """Quarantine every bad line and torn tail; return one line per move."""
    moved: list[str] = []
    with log._locked():
        for path in log.segments():
            moved.extend(_repair_segment(log.home, path))
        if moved:
            _acknowledge_gaps(log)
    return moved


def _acknowledge_gaps(log: EventLog) -> None:
    """Record the sequence numbers a repair left missing, so verify can name them."""
    seen = sorted(r.event.seq for r in log.read())
    known = acknowledged_seqs(log.home)
    present = set(seen)
    top = seen[-1] if seen else 0
    lost = tuple(s for s in range(1, top) if s not in present and s not in known)
    if lost:
        reason = "sequence numbers lost with quarantined lines"
        seg.quarantine(log.home, "", 0, b"", reason, None, lost)


def _repair_segment(home: Path, path: Path) -> list[str]:
    bad: list[Damage] = []
    good = [
        r.offset for r in read_segment(path, 0, bad.append, include_torn_tail=True)
    ]  # offsets of good lines (salvaged lines start inside their damaged line)
    if not bad:
        return []
    data = path.read_bytes()
    kept = b"".join(data[o : data.index(b"\n", o) + 1] for o in good)
    for d in bad:
        chunk = data[d.offset : d.offset + d.length]
        seqs = tuple(int(m) for m in _SEQ_RE.findall(chunk))
        seg.quarantine(home, path.name, d.offset, chunk, d.reason, d.line, seqs)
    _replace(path, kept)
    return [f"moved {d.describe()} ({d.length} bytes)" for d in bad]


def _replace(path: Path, data: bytes) -> None:
    atomic_write(path, data)
