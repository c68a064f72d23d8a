"""Time the views on a large log: full replay, incremental catch-up, vector load.

    python benchmarks/bench_views.py [--entries 10000] [--events 100000] [--seed 1]
                                     [--repeats 5] [--catch-up-repeats 21]
                                     [--load-repeats 200] [--log DIR]

A synthetic log (``synthetic.py``) is generated in a temporary directory,
or copied from ``--log DIR``.  Every figure is the median of its repeats and
is set against a baseline measured in the same run:

* full replay (``views.rebuild`` into a fresh directory) against decoding the
  same log and doing nothing with it, and against one ``executemany`` of the
  same entry rows into a bare table;
* catch-up after 1 and after 100 new events (observations of existing
  entries and recalls), appended untimed, then ``views.catch_up``, against
  decoding just those events;
* ``load_matrix`` of the 10k × 384 space in a fresh connection, against
  ``np.frombuffer`` over the same bytes already in memory and against
  reading the ``vectors`` table row by row.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from synthetic import generate

from memlog.eventlog.events import EventBase, Observed, Recalled, Reembedded
from memlog.eventlog.log import START, EventLog, Position
from memlog.home import Home
from memlog.projections import runner as views
from memlog.projections.markdown_view import render
from memlog.projections.sqlite_view import store
from memlog.projections.sqlite_view.reading import load_matrix
from memlog.vocabulary import DEFAULT_SPACE

SPACE = DEFAULT_SPACE
GOALS_MS = {"full replay": 5000.0, "catch-up, 1 observation": 20.0, "catch-up, 1 recall": 20.0}
GOALS_MS["load_matrix (fresh connection)"] = 5.0


class Row(NamedTuple):
    name: str
    median_ms: float
    baseline: str = ""
    baseline_ms: float = 0.0

    @property
    def ratio(self) -> str:
        if not self.baseline_ms:
            return ""
        ratio = self.median_ms / self.baseline_ms
        return f"{ratio:.1f}x" if ratio >= 10 else f"{ratio:.3g}x"

    @property
    def goal(self) -> str:
        goal = GOALS_MS.get(self.name)
        if goal is None:
            return ""
        return f"<= {goal:g} ms {'met' if self.median_ms <= goal else 'MISSED'}"


def timed(action: Callable[[], object]) -> float:
    """Milliseconds one call of ``action`` takes."""
    start = time.perf_counter()
    action()
    return (time.perf_counter() - start) * 1000


def median_ms(action: Callable[[], object], repeats: int) -> float:
    return statistics.median(timed(action) for _ in range(repeats))


# -- full replay ---------------------------------------------------------------


def decode_all(home: Path, start: Position = START) -> None:
    for _ in EventLog(home).read(start):
        pass


def bare_insert(rows: list[tuple[Any, ...]], path: Path) -> None:
    """One ``executemany`` of ``rows`` into a bare table of a new database file."""
    path.unlink(missing_ok=True)
    db = sqlite3.connect(path, isolation_level=None)
    try:
        columns = ", ".join(f"c{i}" for i in range(len(rows[0])))
        db.execute(f"CREATE TABLE bare ({columns})")
        db.execute("BEGIN")
        db.executemany(f"INSERT INTO bare VALUES ({', '.join('?' * len(rows[0]))})", rows)
        db.execute("COMMIT")
    finally:
        db.close()


def fresh_dirs(work: Path, prefix: str) -> Iterator[Path]:
    n = 0
    while True:
        n += 1
        path = work / f"{prefix}-{n}"
        yield path
        shutil.rmtree(path, ignore_errors=True)


def full_replay(home: Path, work: Path, repeats: int) -> list[Row]:
    entries = views.fold_log(EventLog(home))[0].entries
    rows = [store.entry_row(e, SPACE.key) for e in sorted(entries.values(), key=lambda e: e.id)]
    decode = median_ms(lambda: decode_all(home), repeats)
    bare = median_ms(lambda: bare_insert(rows, work / "bare.db"), repeats)
    fold = median_ms(lambda: views.fold_log(EventLog(home)), repeats)
    plan = median_ms(lambda: render.plan(entries.values()), repeats)
    targets = fresh_dirs(work, "rebuild")
    rebuild = median_ms(
        lambda: views.rebuild(Home(home), SPACE, target=Home(next(targets))), repeats
    )
    next(targets)  # removes the last one
    return [
        Row("decode only (baseline)", decode),
        Row(f"executemany of {len(rows)} rows (baseline)", bare),
        Row("fold only (fold_log)", fold, "decode", decode),
        Row("markdown plan (render.plan)", plan, "decode", decode),
        Row("full replay", rebuild, "decode", decode),
        Row("full replay ", rebuild, "executemany", bare),
    ]


# -- catch-up ------------------------------------------------------------------


class Known(NamedTuple):
    name: str
    description: str
    category: str
    project: str


def known_entries(home: Path) -> list[Known]:
    db = store.connect(home / "memory.db", readonly=True)
    try:
        rows = db.execute(
            "SELECT name, description, category, coalesce(source_project, '') FROM entries "
            "WHERE status = 'live' ORDER BY id"
        ).fetchall()
    finally:
        db.close()
    return [Known(*row) for row in rows]


def content_id(entry: Known) -> str:
    return Observed(name=entry.name, description=entry.description, category="facts").entry_id


def observation(rng: random.Random, known: list[Known]) -> Observed:
    entry = rng.choice(known)
    return Observed(
        name=entry.name,
        description=entry.description,
        category=entry.category,  # type: ignore[arg-type]
        source="retro",
        project=entry.project,
        feature=f"{rng.randint(1, 300):03d}",
    )


def recall(rng: random.Random, known: list[Known]) -> Recalled:
    ids = tuple(content_id(e) for e in rng.sample(known, 20))
    return Recalled(ids=ids, project=rng.choice(known).project, mode="session-start")


def mixed(rng: random.Random, known: list[Known]) -> list[EventBase]:
    events: list[EventBase] = [observation(rng, known) for _ in range(55)]
    return events + [recall(rng, known) for _ in range(45)]


def new_entry(rng: random.Random, n: int) -> list[EventBase]:
    description = f"Benchmark entry {n}: batch small writes {rng.random()} before merging."
    event = Observed(name=f"Benchmark {n}", description=description, category="patterns")
    vector = np.random.default_rng(n).standard_normal(SPACE.dimensions).astype("<f4")
    vector /= np.linalg.norm(vector)
    embedded = Reembedded(
        entry_id=event.entry_id,
        provider=SPACE.provider,
        model=SPACE.model,
        dimensions=SPACE.dimensions,
        vector=vector.tobytes(),
    )
    return [event, embedded]


def catch_up_rows(home: Path, repeats: int, seed: int) -> list[Row]:
    rng = random.Random(seed)
    known = known_entries(home)
    views.catch_up(home, SPACE)  # warm: the first call opens and migrates nothing new
    cases: list[tuple[str, Callable[[int], list[EventBase]]]] = [
        ("catch-up, 1 observation", lambda n: [observation(rng, known)]),
        ("catch-up, 1 recall", lambda n: [recall(rng, known)]),
        ("catch-up, 100 (55 observations, 45 recalls)", lambda n: mixed(rng, known)),
        ("catch-up, 1 new entry + its vector", lambda n: new_entry(rng, n)),
    ]
    rows = []
    for name, make in cases:
        pairs = [measure_catch_up(home, make(n)) for n in range(repeats)]
        decode = statistics.median(p[0] for p in pairs)
        rows.append(Row(name, statistics.median(p[1] for p in pairs), "decode", decode))
    return rows


def measure_catch_up(home: Path, events: list[EventBase]) -> tuple[float, float]:
    """Append ``events`` (untimed), then time decoding just them and ``catch_up``."""
    log = EventLog(home)
    end = log.segments()[-1]
    before = Position(end.name, end.stat().st_size)
    log.append(events)
    decode = timed(lambda: decode_all(home, before))
    start = time.perf_counter()
    done = views.catch_up(home, SPACE)
    took = (time.perf_counter() - start) * 1000
    if done.rebuilt or done.applied != len(events):
        raise SystemExit(f"catch-up did not follow incrementally: {done}")
    return decode, took


# -- vector load -----------------------------------------------------------------


def load_rows(path: Path) -> np.ndarray[Any, np.dtype[np.float32]]:
    """The matrix read row by row from the ``vectors`` table (fresh connection)."""
    db = store.connect(path, readonly=True)
    try:
        rows = db.execute(
            "SELECT entry_id, vector FROM vectors WHERE provider = ? AND model = ? "
            "AND dimensions = ? ORDER BY entry_id",
            SPACE,
        ).fetchall()
    finally:
        db.close()
    ids = [r[0] for r in rows]
    flat = np.frombuffer(b"".join(r[1] for r in rows), dtype="<f4")
    return flat.reshape(len(ids), SPACE.dimensions)


def vector_rows(home: Path, repeats: int) -> list[Row]:
    path, folder = home / "memory.db", home
    db = store.connect(path, readonly=True)
    try:
        matrix = load_matrix(db, Home(folder), SPACE)
    finally:
        db.close()
    count = len(matrix.ids)
    in_memory = matrix.vectors.tobytes()
    query = matrix.vectors[0].copy()

    def from_memory() -> np.ndarray[Any, np.dtype[np.float32]]:
        return np.frombuffer(in_memory, dtype="<f4").reshape(count, SPACE.dimensions)

    load, connect_and_load, load_and_score = [], [], []
    for _ in range(repeats):
        opened = time.perf_counter()
        db = store.connect(path, readonly=True)
        start = time.perf_counter()
        loaded = load_matrix(db, Home(folder), SPACE)
        loaded_at = time.perf_counter()
        loaded.vectors @ query
        scored_at = time.perf_counter()
        db.close()
        load.append((loaded_at - start) * 1000)
        connect_and_load.append((loaded_at - opened) * 1000)
        load_and_score.append((scored_at - start) * 1000)
    memory = median_ms(from_memory, repeats)
    memory_score = median_ms(lambda: from_memory() @ query, repeats)
    rows = median_ms(lambda: load_rows(path), max(5, repeats // 10))
    shape = f"{count}x{SPACE.dimensions}"
    return [
        Row(f"np.frombuffer of {shape} in memory (baseline)", memory),
        Row(f"row by row from vectors, {shape} (baseline)", rows),
        Row("load_matrix (fresh connection)", statistics.median(load), "row by row", rows),
        Row("load_matrix (fresh connection) ", statistics.median(load), "frombuffer", memory),
        Row("connect + load_matrix", statistics.median(connect_and_load), "row by row", rows),
        Row(
            "load_matrix + one query (matrix @ q)",
            statistics.median(load_and_score),
            "frombuffer + query",
            memory_score,
        ),
    ]


# -- report ------------------------------------------------------------------------


def print_table(title: str, rows: list[Row]) -> None:
    print(f"\n{title}")
    print(f"  {'measure':<48} {'median ms':>10}  {'vs':<20} {'ratio':>9}  goal")
    for row in rows:
        line = f"  {row.name:<48} {row.median_ms:>10.3f}  {row.baseline:<20} {row.ratio:>9}"
        print(f"{line}  {row.goal}".rstrip())


def prepare(work: Path, args: argparse.Namespace) -> Path:
    home = work / "home"
    if args.log:
        shutil.copytree(args.log / "events", home / "events")
        return home
    took = timed(lambda: generate(home, args.entries, args.events, args.seed))
    print(f"generated {args.events} events, {args.entries} entries in {took / 1000:.1f} s")
    return home


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5, help="runs of each full replay figure")
    parser.add_argument("--catch-up-repeats", type=int, default=21, help="runs of each catch-up")
    parser.add_argument("--load-repeats", type=int, default=200, help="runs of each vector load")
    parser.add_argument("--log", type=Path, help="copy the log of this directory instead")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memlog-bench-") as tmp:
        work = Path(tmp)
        home = prepare(work, args)
        size = sum(p.stat().st_size for p in EventLog(home).segments()) / 1e6
        versions = f"python {sys.version.split()[0]}, sqlite {sqlite3.sqlite_version}"
        print(f"log: {size:.1f} MB; {versions}")
        print_table("(a) full replay", full_replay(home, work, args.repeats))
        views.rebuild(Home(home), SPACE)
        catch_ups = catch_up_rows(home, args.catch_up_repeats, args.seed)
        print_table("(b) incremental catch-up", catch_ups)
        print_table("(c) vector matrix load", vector_rows(home, args.load_repeats))


if __name__ == "__main__":
    main()
