"""Disk use and catch-up cost of the packed vector file at 10k entries.

    python benchmarks/bench_integrity.py [--entries 10000] [--events 30000]
                                         [--observes 1000] [--repeats 41] [--seed 1]

A synthetic log (``synthetic.py``, every entry embedded in the local
384-dimension space) is written to a temporary home and replayed.  Then:

* **disk growth**: ``--observes`` observations of new entries, each as
  ``memlog observe`` makes it (the observation appended and the views caught
  up, then its vector appended and the views caught up).  The growth of every
  part of the home is set against what the new events themselves take: their
  bytes in the log, and one record of each slot file per entry (its q8 vector,
  its ranking record, its neighbour lists).  When every catch-up that added a
  vector wrote the whole matrix to a new file and never removed the old one,
  the same observes took what the estimate printed says.
* **catch-up adding one vector**: the median time of a catch-up that applies
  one new vector, patching its record in place (now) against also writing the
  whole vector file anew (what every such catch-up did before), measured in
  the same process on the same home.
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from synthetic import generate

from memlog.eventlog.events import Observed, Reembedded
from memlog.eventlog.log import EventLog
from memlog.eventlog.vectors import q8_size, quantise
from memlog.home import Home
from memlog.projections import runner
from memlog.projections.sqlite_view import index_files, neighbours, packed, ranks, vectors
from memlog.vocabulary import DEFAULT_SPACE

SPACE = DEFAULT_SPACE
PARTS = ("log", "memory.db", "index", "markdown and state")
#: the bytes of the slot files' records of one entry with a vector
RECORDS = q8_size(SPACE.dimensions) + ranks.RECORD.size + neighbours.RECORD.itemsize


def sizes(home: Path) -> dict[str, int]:
    found = dict.fromkeys(PARTS, 0)
    for path in home.rglob("*"):
        if not path.is_file():
            continue
        top = path.relative_to(home).parts[0]
        part = {"events": "log", "index": "index"}.get(top)
        part = part or ("memory.db" if top.startswith("memory.db") else "markdown and state")
        found[part] += path.stat().st_size
    return found


def packed_count(home: Path) -> int:
    return sum(1 for n in os.listdir(home / "index") if n.endswith(".vec"))


def new_vector(rng: np.random.Generator) -> bytes:
    """A random unit vector, as ``memlog observe`` logs one (``q8``)."""
    values = rng.standard_normal(SPACE.dimensions)
    return quantise(values / np.linalg.norm(values))


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
                           vector=new_vector(rng), encoding="q8")])  # fmt: skip
    runner.catch_up(home, SPACE)


def disk_growth(home: Path, observes: int, rng: np.random.Generator) -> None:
    log = EventLog(home)
    before = sizes(home)
    started = time.perf_counter()
    for n in range(observes):
        observe(log, home, n, rng)
    took = time.perf_counter() - started
    after = sizes(home)
    rows = observes * RECORDS
    logged = after["log"] - before["log"]
    grown = sum(after.values()) - sum(before.values())
    print(f"\n## disk growth after {observes} observes ({took:.1f} s)\n")
    print(f"{'part':<20} {'before':>14} {'after':>14} {'growth':>12}")
    for part in PARTS:
        print(
            f"{part:<20} {before[part]:>14,} {after[part]:>14,} {after[part] - before[part]:>12,}"
        )
    print(f"{'home':<20} {sum(before.values()):>14,} {sum(after.values()):>14,} {grown:>12,}")
    print(f"\nvector files in index/: {packed_count(home)}")
    print(f"index/ growth {after['index'] - before['index']:,} bytes; "
          f"{observes} entries' records of {RECORDS} ({rows:,})")  # fmt: skip
    baseline = logged + rows
    print(f"the new data (events in the log + records): {baseline:,} bytes")
    print(f"home growth / new data: {grown / baseline:.2f}x")
    row = 16 + 4 * SPACE.dimensions  # a float32 row with its id, as whole matrices held
    count = before["index"] // RECORDS
    leaked = sum((count + i + 1) * row for i in range(observes))
    print(f"a new whole-matrix file per catch-up, none removed (as once): "
          f"about {leaked / 2**30:.1f} GiB")  # fmt: skip


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
                               vector=new_vector(rng), encoding="q8")])  # fmt: skip
        started = time.perf_counter()
        runner.catch_up(home, SPACE)
        return (time.perf_counter() - started) * 1000

    real = vectors.patch

    def whole_file(db: sqlite3.Connection, folder: Path, *args: Any) -> bool:
        """The record patched, then the whole file written anew, as every catch-up once did."""
        done = real(db, folder, *args)
        found = index_files.pointer(db, vectors.KIND)
        if done and found is not None:
            where = folder / "index"
            packed.write(where, found[0], (where / found[0]).read_bytes())
        return done

    appended: list[float] = []
    rewritten: list[float] = []
    for i in range(repeats):  # interleaved, so both see the same machine and the same size
        appended.append(one_vector())
        vectors.patch = whole_file
        try:
            rewritten.append(one_vector())
        finally:
            vectors.patch = real
        if i == 0:
            appended.clear()
            rewritten.clear()  # the first of each warms the caches
    after, before = statistics.median(appended), statistics.median(rewritten)
    print(f"\n## a catch-up that adds one vector (median of {len(appended)})\n")
    print(f"patch one record (now)             {after:8.2f} ms")
    print(f"write the whole file (before)      {before:8.2f} ms")
    print(f"ratio now / before                 {after / before:8.3f}x")
    print(f"vector files in index/ afterwards: {packed_count(home)}")


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
        timed("replay", lambda: runner.rebuild(Home(home), SPACE))
        print(f"# {args.entries} entries, {args.events} events, space {SPACE.key}")
        disk_growth(home, args.observes, rng)
        catch_up_cost(home, args.repeats, rng)


if __name__ == "__main__":
    main()
