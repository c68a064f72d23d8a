"""Time ``memlog sync`` between two homes through a bare repository on disk, and weigh it.

    python benchmarks/bench_sync.py [--events 10000] [--entries 2000] [--repeats 3]
                                    [--more 100] [--seed 1] [--baseline PYTHON]

A synthetic log of ``--events`` events (``synthetic.py``) is written into
home A.  Each repeat, in fresh directories:

* A runs ``sync --init`` against an empty bare repository (its flat log moves
  into its device directory, is checked and pushed), then home B, empty,
  runs ``sync --init`` and receives all of it;
* A appends ``--more`` observations, one append each as ``memlog observe`` makes
  them (timed: signing happens at sync, so an append should cost what it did), and
  syncs, then B syncs again.

Every sync rebuilds the views of its home (so homes end byte-identical);
that rebuild is timed on its own as a baseline, with two more measured in
the same run: copying the segment files (``shutil.copytree``) and pushing
them with plain git (``add``, ``commit``, ``push`` to a bare repository).
Bytes transferred are the pack bytes git reports writing on push and
receiving on fetch (``--progress``), set against the bytes of the segments
that moved; the growth of A's own repository is shown too.  Figures are
medians over the repeats.

``--baseline PYTHON`` runs every round twice, interleaved, each in a process
of its own: once with this memlog and once with the memlog installed for
``PYTHON`` (e.g. the previous release in a scratch venv), on the same log,
and adds each sync's ratio (this / baseline) to the table.  B joins with the
key A made when the memlog it runs seals what it sends.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from synthetic import generate

from memlog.eventlog.events import Observed
from memlog.eventlog.log import EventLog
from memlog.home import Home
from memlog.projections.runner import rebuild
from memlog.sync import repo
from memlog.sync.engine import sync
from memlog.vocabulary import DEFAULT_SPACE

SPACE = DEFAULT_SPACE
_PACK_LINE = re.compile(
    rb"(?:Writing|Receiving|Unpacking) objects: 100% \(\d+/\d+\), ([\d.]+) (bytes|KiB|MiB|GiB)"
)
_UNITS = {b"bytes": 1, b"KiB": 1 << 10, b"MiB": 1 << 20, b"GiB": 1 << 30}


class Transfers:
    """Counts the pack bytes of every push and fetch sync makes (git's own figures)."""

    def __init__(self) -> None:
        self.sent = 0
        self.received = 0
        self._call = repo.Git.call

    def install(self) -> None:
        transfers, original = self, self._call

        def call(git: repo.Git, *args: str, **kwargs):  # type: ignore[no-untyped-def]
            if args and args[0] in ("push", "fetch"):
                args = (args[0], "--progress", *(a for a in args[1:] if a != "--quiet"))
            done = original(git, *args, **kwargs)
            if args and args[0] in ("push", "fetch"):
                for size, unit in _PACK_LINE.findall(done.stderr.replace(b"\r", b"\n")):
                    counted = int(float(size) * _UNITS[unit])
                    if args[0] == "push":
                        transfers.sent += counted
                    else:
                        transfers.received += counted
            return done

        repo.Git.call = call  # type: ignore[method-assign]

    def take(self) -> tuple[int, int]:
        found = (self.sent, self.received)
        self.sent = self.received = 0
        return found


def timed(action: Callable[[], object]) -> float:
    began = time.perf_counter()
    action()
    return time.perf_counter() - began


def cpu() -> float:
    """CPU seconds of this process and of the children it waited for (git)."""
    mine, theirs = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return mine.ru_utime + mine.ru_stime + theirs.ru_utime + theirs.ru_stime


def both(figures: dict[str, float], name: str, action: Callable[[], object]) -> None:
    """The wall time of ``action`` as ``name``, and its CPU time (git's included) as
    ``name (cpu)``: on a shared machine the second moves less with the others' load."""
    began = cpu()
    figures[name] = timed(action)
    figures[f"{name} (cpu)"] = cpu() - began


def tree_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def segment_bytes(home: Path) -> int:
    return sum(p.stat().st_size for p in EventLog(home).segments())


def bare(where: Path) -> str:
    subprocess.run(["git", "init", "--quiet", "--bare", str(where)], check=True)
    return str(where)


def plain_git_push(events: Path, work: Path) -> tuple[float, int]:
    """The same files pushed with plain git: seconds, and bytes the bare repository grew by."""
    tree = work / "plain"
    shutil.copytree(events, tree, ignore=shutil.ignore_patterns(".*"))
    remote = bare(work / "plain.git")
    before = tree_bytes(Path(remote))
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b",
           "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b"}  # fmt: skip

    def push() -> None:
        for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "x"],
                     ["push", "-q", remote, "HEAD:refs/heads/main"]):  # fmt: skip
            subprocess.run(["git", "-C", str(tree), *args], check=True, env=env)

    took = timed(push)
    return took, tree_bytes(Path(remote)) - before


def more_events(home: Path, count: int, round_no: int) -> None:
    """``count`` observations, each appended on its own (lock, write, fsync)."""
    log = EventLog(home, redact=False, screen=False)  # generated lessons
    for i in range(count):
        log.append([
            Observed(
                name=f"Extra {round_no}-{i}",
                description=f"Extra lesson {round_no} {i} holds.",
                category="patterns",
                reasoning="Seen while benchmarking sync.",
            )
        ])  # fmt: skip


def join(a: Path, b: Path, remote: str) -> None:
    """B's ``sync --init``: with A's key when this memlog seals what it sends."""
    if "key" not in inspect.signature(sync).parameters:
        sync(Home(b), SPACE, remote, init=True)  # a memlog from before sealing
        return
    from memlog.sync.setup import print_key

    sync(Home(b), SPACE, remote, init=True, key=print_key(Home(a)))


def one_round(
    source: Path, work: Path, more: int, round_no: int, wire: Transfers
) -> dict[str, float]:
    a, b = work / "a", work / "b"
    shutil.copytree(source / "events", a / "events")
    remote = bare(work / "remote.git")
    size = segment_bytes(a)
    wire.take()
    figures: dict[str, float] = {}
    both(
        figures,
        "send (A: sync --init, 10k events)",
        lambda: sync(Home(a), SPACE, remote, init=True),
    )
    figures["pushed pack bytes / segment bytes"] = wire.take()[0] / size
    both(figures, "receive (B: sync --init)", lambda: join(a, b, remote))
    figures["fetched pack bytes / segment bytes"] = wire.take()[1] / size
    both(figures, "views rebuild alone (baseline)", lambda: rebuild(Home(b), SPACE))
    grown = segment_bytes(a)
    both(figures, f"append {more} events, one at a time", lambda: more_events(a, more, round_no))
    grown = segment_bytes(a) - grown
    a_before = tree_bytes(a / "sync.git")
    both(figures, f"send after {more} more events", lambda: sync(Home(a), SPACE))
    figures["pushed pack bytes / new segment bytes"] = wire.take()[0] / grown
    both(figures, f"receive after {more} more events", lambda: sync(Home(b), SPACE))
    figures["fetched pack bytes / new segment bytes"] = wire.take()[1] / grown
    figures["A's repository growth / new segment bytes"] = (
        tree_bytes(a / "sync.git") - a_before
    ) / grown
    figures["copytree of the segments (baseline)"] = timed(
        lambda: shutil.copytree(a / "events", work / "copy")
    )
    took, pushed = plain_git_push(a / "events", work)
    figures["plain git add+commit+push (baseline)"] = took
    figures["plain git: bare repo bytes / segment bytes"] = pushed / segment_bytes(a)
    return figures


def round_in_process(
    python: str, source: Path, work: Path, more: int, round_no: int
) -> dict[str, float]:
    """One round run by ``python`` (another memlog's interpreter) in a process of its own."""
    work.mkdir()
    argv = [python, __file__, "--round", str(source), str(work), str(more), str(round_no)]
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    shutil.rmtree(work)
    found: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
    return found


#: the syncs compared with the baseline
TIMED = [
    "send (A: sync --init, 10k events)", "receive (B: sync --init)",
    "send after {more} more events", "receive after {more} more events",
    "append {more} events, one at a time",
]  # fmt: skip


def report(rounds: list[dict[str, float]], baseline: list[dict[str, float]], more: int) -> None:
    print(f"\n  {'measure (median of ' + str(len(rounds)) + ')':<48} {'value':>10}", end="")
    print(f" {'baseline':>10} {'ratio':>7}" if baseline else "")
    for name in rounds[0]:
        value = statistics.median(r[name] for r in rounds)
        unit = "" if "/" in name and "(cpu)" not in name else " s"
        line = f"  {name:<48} {value:>10.3f}{unit}"
        if baseline and name in baseline[0]:
            before = statistics.median(r[name] for r in baseline)
            line += f" {before:>10.3f}{unit}"
            if name.removesuffix(" (cpu)") in [t.format(more=more) for t in TIMED]:
                ratios = [r[name] / b[name] for r, b in zip(rounds, baseline, strict=True)]
                line += f" {statistics.median(ratios):>6.2f}x"
        print(line)


def main() -> None:
    if sys.argv[1:2] == ["--round"]:
        source, work, more, round_no = sys.argv[2:6]
        wire = Transfers()
        wire.install()
        figures = one_round(Path(source), Path(work), int(more), int(round_no), wire)
        print(json.dumps(figures))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--entries", type=int, default=2_000)
    parser.add_argument("--more", type=int, default=100, help="events appended before round 2")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--baseline", metavar="PYTHON", help="another memlog's interpreter")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memlog-bench-sync-") as tmp:
        source = Path(tmp) / "source"
        count = generate(source, args.entries, args.events, args.seed)
        size = segment_bytes(source) / 1e6
        git = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip()
        python = f"python {sys.version.split()[0]}"
        print(f"log: {count} events, {size:.1f} MB of segments; {git}; {python}")
        rounds, baseline = [], []
        for repeat in range(args.repeats):
            work = Path(tmp) / f"round{repeat}"
            rounds.append(round_in_process(sys.executable, source, work, args.more, repeat))
            if args.baseline:
                baseline.append(round_in_process(args.baseline, source, work, args.more, repeat))
        report(rounds, baseline, args.more)


if __name__ == "__main__":
    main()
