"""Disk use and catch-up cost of the packed vector file at 10k entries.

    python benchmarks/bench_integrity.py [--entries 10000] [--events 30000]
                                         [--observes 1000] [--repeats 41] [--seed 1]

A synthetic log (``synthetic.py``, every entry embedded in the local
384-dimension space) is written to a temporary home and replayed.  Then:

* **disk growth**: ``--observes`` observations of new entries, each as
  ``memlog observe`` makes it (the observation appended and the views caught
  up, then its vector appended and the views caught up).  The growth of every
  part of the home is set against what the new events themselves take: their
  bytes in the log, and one packed row (16 + 4 × 384 bytes) per vector.
  Before issue 12 every catch-up that added a vector wrote the whole matrix to
  a new file and never removed the old one: the estimate of that is printed.
* **catch-up adding one vector**: the median time of a catch-up that applies
  one new vector, appending its row (now) against writing the whole matrix
  anew (what every such catch-up did before), measured in the same process on
  the same home.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from synthetic import generate

from memlog.eventlog.events import Observed, Reembedded
from memlog.eventlog.log import EventLog
from memlog.projections import runner
from memlog.projections.sqlite_view import vectors
from memlog.vocabulary import DEFAULT_SPACE

SPACE = DEFAULT_SPACE
PARTS = ("log", "memory.db", "vectors", "markdown and state")


def sizes(home: Path) -> dict[str, int]:
    found = dict.fromkeys(PARTS, 0)
    for path in home.rglob("*"):
        if not path.is_file():
            continue
        top = path.relative_to(home).parts[0]
        part = {"events": "log", vectors.VECTOR_DIR: "vectors"}.get(top)
        part = part or ("memory.db" if top.startswith("memory.db") else "markdown and state")
        found[part] += path.stat().st_size
    return found


def packed_count(home: Path) -> int:
    return sum(1 for n in os.listdir(home / vectors.VECTOR_DIR) if n.endswith(vectors.SUFFIX))


def new_vector(rng: np.random.Generator) -> bytes:
    values = rng.standard_normal(SPACE.dimensions).astype("<f4")
    return (values / np.linalg.norm(values)).astype("<f4").tobytes()


def observe(log: EventLog, home: Path, n: int, rng: np.random.Generator) -> None:
    """One ``memlog observe`` of a new entry, as far as the log and the views see it."""
    event = Observed(
        name=f"Benchmark lesson {n}",
        description=f"Benchmark lesson {n}: keep the importer for format {n} strict.",
        category="patterns",
        project="bench",
    )
    (stored,) = log.append([event])
    runner.catch_up(home, SPACE)
    log.append([Reembedded(entry_id=stored.entry_id, provider=SPACE.provider,
                           model=SPACE.model, dimensions=SPACE.dimensions,
                           vector=new_vector(rng))])  # fmt: skip
    runner.catch_up(home, SPACE)


def disk_growth(home: Path, observes: int, rng: np.random.Generator) -> None:
    log = EventLog(home)
    before = sizes(home)
    started = time.perf_counter()
    for n in range(observes):
        observe(log, home, n, rng)
    took = time.perf_counter() - started
    after = sizes(home)
    rows = observes * vectors.row_size(SPACE.dimensions)
    logged = after["log"] - before["log"]
    grown = sum(after.values()) - sum(before.values())
    print(f"\n## disk growth after {observes} observes ({took:.1f} s)\n")
    print(f"{'part':<20} {'before':>14} {'after':>14} {'growth':>12}")
    for part in PARTS:
        print(
            f"{part:<20} {before[part]:>14,} {after[part]:>14,} {after[part] - before[part]:>12,}"
        )
    print(f"{'home':<20} {sum(before.values()):>14,} {sum(after.values()):>14,} {grown:>12,}")
    print(f"\npacked files in vectors/: {packed_count(home)}")
    print(f"vectors/ growth {after['vectors'] - before['vectors']:,} bytes = "
          f"{observes} rows of {vectors.row_size(SPACE.dimensions)} ({rows:,})")  # fmt: skip
    baseline = logged + rows
    print(f"the new data (events in the log + packed rows): {baseline:,} bytes")
    print(f"home growth / new data: {grown / baseline:.2f}x")
    count = before["vectors"] // vectors.row_size(SPACE.dimensions)
    leaked = sum((count + i + 1) * vectors.row_size(SPACE.dimensions) for i in range(observes))
    print(f"before issue 12 (a new whole-matrix file per catch-up, none removed): "
          f"about {leaked / 2**30:.1f} GiB in vectors/")  # fmt: skip


def catch_up_cost(home: Path, repeats: int, rng: np.random.Generator) -> None:
    log = EventLog(home)
    counter = iter(range(10**6, 10**7))

    def one_vector() -> float:
        observe_entry = Observed(name="n", description=f"Timing entry {next(counter)}.",
                                 category="facts")  # fmt: skip
        (stored,) = log.append([observe_entry])
        runner.catch_up(home, SPACE)
        log.append([Reembedded(entry_id=stored.entry_id, provider=SPACE.provider,
                               model=SPACE.model, dimensions=SPACE.dimensions,
                               vector=new_vector(rng))])  # fmt: skip
        started = time.perf_counter()
        runner.catch_up(home, SPACE)
        return (time.perf_counter() - started) * 1000

    def whole_matrix(*_: object) -> bool:
        return False  # every catch-up writes the matrix anew, as before issue 12

    real = vectors.append_packed
    appended: list[float] = []
    rewritten: list[float] = []
    for i in range(repeats):  # interleaved, so both see the same machine and the same size
        appended.append(one_vector())
        vectors.append_packed = whole_matrix  # type: ignore[assignment]
        try:
            rewritten.append(one_vector())
        finally:
            vectors.append_packed = real
        if i == 0:
            appended.clear()
            rewritten.clear()  # the first of each warms the caches
    after, before = statistics.median(appended), statistics.median(rewritten)
    print(f"\n## a catch-up that adds one vector (median of {len(appended)})\n")
    print(f"append one row (now)               {after:8.2f} ms")
    print(f"write the whole matrix (before)    {before:8.2f} ms")
    print(f"ratio now / before                 {after / before:8.3f}x")
    print(f"packed files in vectors/ afterwards: {packed_count(home)}")


def timed(label: str, action: Callable[[], object]) -> None:
    started = time.perf_counter()
    action()
    print(f"{label}: {time.perf_counter() - started:.1f} s", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--events", type=int, default=30_000)
    parser.add_argument("--observes", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=41)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    random.seed(args.seed)
    with tempfile.TemporaryDirectory(prefix="memlog-bench-integrity-") as tmp:
        home = Path(tmp) / "home"
        timed("synthetic log", lambda: generate(home, args.entries, args.events, args.seed))
        timed("replay", lambda: runner.rebuild(home, SPACE))
        print(f"# {args.entries} entries, {args.events} events, space {SPACE.key}")
        disk_growth(home, args.observes, rng)
        catch_up_cost(home, args.repeats, rng)


if __name__ == "__main__":
    main()
