"""Time the event log: fsynced appends from 1 and from 8 processes, and reading.

    python benchmarks/bench_eventlog.py [--appends 300] [--processes 8]
                                        [--read-events 100000] [--runs 3] [--dir DIR]

Every figure is the median over ``--runs`` and is set against a baseline
measured in the same run on the same file system:

* append latency (p50 and p99 of single-event ``EventLog.append`` calls of
  about 500 bytes, lock, tail check, write and fsync included), by one process
  and by ``--processes`` processes at once, against ``os.write`` + ``os.fsync``
  of the same line bytes to a plain ``O_APPEND`` file by as many processes;
* read throughput (events per second of ``EventLog.read`` over a log of
  ``--read-events`` events: checksums, decoding, batch handling), once for
  events appended one by one and once for batches of 1000, against
  ``msgspec`` decoding the same lines, checksum stripped, split in memory.

Goals: append p50 at most 3 ms (one process); reading at least 250k events/s.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from memlog.eventlog.codec import SUM_KEY, decoder, encode_line
from memlog.eventlog.events import Observed
from memlog.eventlog.log import EventLog

APPEND_GOAL_MS = 3.0
READ_GOAL = 250_000


def event(i: int) -> Observed:
    """An observation whose stored line is about 500 bytes."""
    words = f"entry {i} retry the flaky network call with jitter and a bounded budget "
    return Observed(name=f"Entry {i}", description=(words * 2)[:52], category="patterns")


def line_of(i: int) -> bytes:
    return encode_line(EventLog(Path("/nonexistent"))._stamp([event(i)], i)[0])


# -- appends -----------------------------------------------------------------------


def memlog_appends(folder: str, count: int, start: mp.synchronize.Event) -> list[float]:
    log = EventLog(Path(folder))
    start.wait()
    times = []
    for i in range(count):
        begin = time.perf_counter()
        log.append([event(i)])
        times.append(time.perf_counter() - begin)
    return times


def raw_appends(folder: str, count: int, start: mp.synchronize.Event) -> list[float]:
    fd = os.open(Path(folder) / "plain.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    lines = [line_of(i) for i in range(count)]
    start.wait()
    times = []
    for line in lines:
        begin = time.perf_counter()
        os.write(fd, line)
        os.fsync(fd)
        times.append(time.perf_counter() - begin)
    os.close(fd)
    return times


Worker = Callable[[str, int, "mp.synchronize.Event"], list[float]]


def latencies(worker: Worker, folder: Path, processes: int, count: int) -> tuple[float, float]:
    """p50 and p99 (seconds) over every call of ``processes`` workers started together."""
    ctx = mp.get_context("spawn")
    with ctx.Manager() as manager, ctx.Pool(processes) as pool:
        start = manager.Event()
        pending = [pool.apply_async(worker, (str(folder), count, start)) for _ in range(processes)]
        time.sleep(0.5 + 0.1 * processes)  # let every worker import and open its files
        start.set()
        times = sorted(t for p in pending for t in p.get())
    return times[len(times) // 2], times[min(len(times) - 1, int(len(times) * 0.99))]


# -- reading -------------------------------------------------------------------------


def build_batched(folder: Path, count: int) -> EventLog:
    """A log appended in batches of 1000 (a reader holds each back until its end)."""
    log = EventLog(folder, redact=False, screen=False)  # built to be read: no scan
    for first in range(0, count, 1000):
        log.append([event(i) for i in range(first, min(first + 1000, count))])
    return log


def build_single(folder: Path, count: int) -> EventLog:
    """A log of events appended one by one, written as lines directly (no 100k fsyncs)."""
    (folder / "events").mkdir()
    lines = (line_of(i) for i in range(1, count + 1))
    (folder / "events" / "00000000000000000001.jsonl").write_bytes(b"".join(lines))
    return EventLog(folder)


def memlog_read(log: EventLog) -> int:
    return sum(1 for _ in log.read())


def raw_read(log: EventLog) -> int:
    total = 0
    for path in log.segments():
        for line in path.read_bytes().splitlines():
            decoder().decode(line[: line.rindex(SUM_KEY)] + b"}")
            total += 1
    return total


def events_per_second(read: Callable[[EventLog], int], log: EventLog, expected: int) -> float:
    begin = time.perf_counter()
    count = read(log)
    elapsed = time.perf_counter() - begin
    assert count == expected, (count, expected)
    return count / elapsed


# -- the table ---------------------------------------------------------------------


class Row(NamedTuple):
    name: str
    value: float
    baseline: float
    unit: str
    goal: str


def fmt(value: float, unit: str) -> str:
    return f"{value * 1000:.3f} ms" if unit == "ms" else f"{value / 1000:.0f}k ev/s"


def print_table(rows: list[Row]) -> None:
    print(f"{'measure':<28} {'memlog':>13} {'baseline':>13} {'ratio':>7}  goal")
    for row in rows:
        ratio = row.value / row.baseline
        print(
            f"{row.name:<28} {fmt(row.value, row.unit):>13} {fmt(row.baseline, row.unit):>13}"
            f" {ratio:>6.2f}x  {row.goal}"
        )


def one_run(root: Path, args: argparse.Namespace) -> dict[str, tuple[float, float]]:
    figures: dict[str, tuple[float, float]] = {}
    for processes in sorted({1, args.processes}):
        ours = latencies(memlog_appends, fresh(root, "log"), processes, args.appends)
        base = latencies(raw_appends, fresh(root, "raw"), processes, args.appends)
        figures[f"p50/{processes}"] = (ours[0], base[0])
        figures[f"p99/{processes}"] = (ours[1], base[1])
    for kind, build in (("single", build_single), ("batched", build_batched)):
        log = build(fresh(root, kind), args.read_events)
        figures[kind] = (
            events_per_second(memlog_read, log, args.read_events),
            events_per_second(raw_read, log, args.read_events),
        )
    return figures


def fresh(root: Path, name: str) -> Path:
    folder = root / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--appends", type=int, default=300, help="appends per process")
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--read-events", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dir", type=Path, help="where to write (default: a temporary folder)")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-eventlog-", dir=args.dir))
    try:
        runs = [one_run(root, args) for _ in range(args.runs)]
    finally:
        shutil.rmtree(root)

    def median(key: str, index: int) -> float:
        return statistics.median(r[key][index] for r in runs)

    rows = []
    for processes in sorted({1, args.processes}):
        label = f"{processes} process{'es' if processes > 1 else ''}"
        for stat in ("p50", "p99"):
            key = f"{stat}/{processes}"
            goal = f"<= {APPEND_GOAL_MS:g} ms" if (stat, processes) == ("p50", 1) else ""
            rows.append(Row(f"append {stat}, {label}", median(key, 0), median(key, 1), "ms", goal))
    read_goal = f">= {READ_GOAL // 1000}k ev/s"
    for kind, label in (("single", "appended alone"), ("batched", "in batches of 1000")):
        name = f"read {args.read_events // 1000}k, {label}"
        rows.append(Row(name, median(kind, 0), median(kind, 1), "ev", read_goal))
    print(f"medians of {args.runs} runs; baseline: raw write+fsync / msgspec decode, same run")
    print_table(rows)


if __name__ == "__main__":
    main()
