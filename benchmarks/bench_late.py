"""What an event that arrives late costs a home that syncs, against a replay of the same log.

    python benchmarks/bench_late.py [--entries 30000] [--repeats 3] [--memlog PATH]
                                    [--baseline PATH]

A synthetic log (``synthetic.py``: three events per entry, 384-d vectors in
the hashing space) is written under one device, as a home that syncs keeps
it, and its views built with ``memlog replay``.  Then, each ``--repeats``
times on a fresh copy of that home, timed as ``memlog catch-up`` in a
process of its own (the installed command, ``--memlog``):

* a late new lesson: another device's observation (and its vector) dated in
  the middle of the log's year, so a replay gives it a slot among the others;
* a late lesson seen again: another device's observation of an entry the
  views hold, dated before that entry's first one (it moves before others);

against ``memlog replay`` of the same home in the same rounds.  It prints
medians, each late catch-up's ratio to the replay, and the home on disk per
entry, kept per device (with ``lines``) and flat (a home that never synced).
``--baseline PATH`` times another install's ``memlog replay`` of the same
home in the same rounds too (the cost of keeping ``lines``: run it with an
install of the commit before them).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

import msgspec

from memlog.embeddings.hashing import HashingProvider
from memlog.eventlog.codec import encode_line
from memlog.eventlog.events import EventBase, Observed, Reembedded, content_hash
from memlog.eventlog.log import EventLog
from memlog.vocabulary import DEFAULT_SPACES

HERE = Path(__file__).resolve().parent
SPACE = DEFAULT_SPACES["hashing"]
ENV = {"MEMLOG_EMBEDDING_PROVIDER": "hashing", "MEMLOG_RESIDENT_MINUTES": "0",
       "MEMLOG_KEYWORD_PROVIDER": "off"}  # fmt: skip


def sibling(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"memlog_bench_{name}", HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


SYNTHETIC = sibling("synthetic")
SCALE = sibling("bench_scale")


def timed(command: Sequence[str], home: Path) -> float:
    """Seconds ``command`` takes on ``home``, in a process of its own (a catch-up that
    rebuilt the views instead of folding the late events stops the run)."""
    env = {**os.environ, **ENV, "MEMLOG_HOME": str(home)}
    began = time.perf_counter()
    done = subprocess.run(list(command), env=env, capture_output=True, check=False)
    took = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {done.stderr.decode()[-2000:]}")
    if command[-1] == "--json" and json.loads(done.stdout)["rebuilt"]:
        raise SystemExit(f"the late events rebuilt the views of {home}")
    return took


def build(home: Path, entries: int, per_device: bool) -> None:
    """The synthetic log, under the device ``aa`` when ``per_device``."""
    SYNTHETIC.generate(home, entries, 3 * entries, 1, space=SPACE)
    if per_device:
        (home / "events" / "aa").mkdir()
        for segment in (home / "events").glob("*.jsonl"):
            segment.rename(home / "events" / "aa" / segment.name)


def middle_ts(home: Path) -> str:
    """A time halfway through the log's year."""
    first = next(iter(EventLog(home).read())).event.ts
    start = datetime.fromisoformat(first.replace("Z", "+00:00"))
    return (start + SYNTHETIC.SPAN / 2).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def held_description(home: Path) -> str:
    """The description of an entry first observed in the second half of the log."""
    records = list(EventLog(home).read())
    for record in records[len(records) * 3 // 4 :]:
        if isinstance(record.event, Observed):
            return record.event.description
    raise SystemExit("no observation in the log's last quarter")


def write_late(home: Path, events: list[EventBase], ts: str) -> None:
    """``events`` as device ``zz`` wrote them at ``ts``."""
    lines = b"".join(
        encode_line(msgspec.structs.replace(e, seq=n, id=f"late-{n:04d}", ts=ts))
        for n, e in enumerate(events, 1)
    )
    path = home / "events" / "zz" / "00000000000000000001.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(lines)


def late_events(home: Path, kind: str) -> tuple[list[EventBase], str]:
    ts = middle_ts(home)
    if kind == "new":
        lesson = Observed(name="Late lesson", description="Pin the tool versions offline too.",
                          category="patterns", project="late")  # fmt: skip
        vector = HashingProvider().embed(lesson.description, "document").astype("<f4")
        embedded = Reembedded(entry_id=content_hash(lesson.description), provider=SPACE.provider,
                              model=SPACE.model, dimensions=SPACE.dimensions,
                              vector=vector.tobytes())  # fmt: skip
        return [lesson, embedded], ts
    held = held_description(home)
    return [Observed(name="Seen again", description=held, category="patterns")], ts


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=30000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--memlog", default=str(Path(sys.executable).with_name("memlog")))
    parser.add_argument("--baseline", help="another install's memlog, its replay timed too")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="memlog-bench-late-") as tmp:
        base, flat = Path(tmp) / "base", Path(tmp) / "flat"
        build(base, args.entries, per_device=True)
        build(flat, args.entries, per_device=False)
        timed([args.memlog, "replay"], base)
        timed([args.memlog, "replay"], flat)
        figures: dict[str, list[float]] = {}
        for _ in range(args.repeats):
            figures.setdefault("memlog replay", []).append(timed([args.memlog, "replay"], base))
            if args.baseline:
                took = timed([args.baseline, "replay"], base)
                figures.setdefault("memlog replay (baseline)", []).append(took)
                timed([args.memlog, "replay"], base)  # its own views back
            for kind in ("new", "seen again"):
                home = Path(tmp) / "late"
                shutil.rmtree(home, ignore_errors=True)
                shutil.copytree(base, home)
                write_late(home, *late_events(home, "new" if kind == "new" else "held"))
                took = timed([args.memlog, "catch-up", "--json"], home)
                figures.setdefault(f"late lesson, {kind}", []).append(took)
        report(args.entries, figures, base, flat)


def report(entries: int, figures: dict[str, list[float]], base: Path, flat: Path) -> None:
    replay = statistics.median(figures["memlog replay"])
    print(f"{entries} entries, {3 * entries} events; medians of {len(figures['memlog replay'])}")
    for name, values in figures.items():
        median = statistics.median(values)
        print(f"  {name:<32} {median:7.2f} s  {median / replay:5.2f}× the replay")
    for label, home in (("kept per device", base), ("flat", flat)):
        per_entry, detail = SCALE.disk_per_entry(home, entries)
        print(f"  on disk, {label:<16} {per_entry:7.0f} B an entry ({detail})")


if __name__ == "__main__":
    main()
