"""Concurrent ``memlog observe`` writers killed at random: does ``memlog verify`` stay clean?

    python benchmarks/bench_writers.py [--writers 6] [--seconds 40] [--runs 10]
                                       [--kill-every 1.0] [--no-kill] [--seed N]
                                       [--memlog PATH]

Each run makes a fresh home and keeps ``--writers`` ``memlog observe`` processes
going at once for ``--seconds`` (each one started as the one before it in its
slot ends), about a third of them observing a lesson another writer observed
before (so counts add up), the rest new ones.  A killer sends SIGKILL to one of
the running writers at random moments (``--kill-every`` seconds apart on
average), wherever it is: appending, embedding, catching the views up, patching
the packed files.  Then ``memlog verify`` (which catches the views up and
compares them with a rebuild from the log) must exit 0, and every observation a
writer acknowledged (exit 0) must be in the log.  Each run prints its seed, and
``--seed`` runs one again.  Vectors come from the ``hashing`` provider (no
model to load), as in the test suite.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CATEGORIES = ("patterns", "anti-patterns", "heuristics")


def environment(home: Path) -> dict[str, str]:
    env = {**os.environ, "MEMLOG_HOME": str(home), "MEMLOG_EMBEDDING_PROVIDER": "hashing"}
    env.update(MEMLOG_EXTRACTION_PROVIDER="off", MEMLOG_RESIDENT_MINUTES="0")
    return env


class Writers:
    """The writer slots of one run, and what each acknowledged."""

    def __init__(self, memlog: str, home: Path, rng: random.Random) -> None:
        self.memlog, self.home, self.rng = memlog, home, rng
        self.env = environment(home)
        self.running: dict[subprocess.Popen[bytes], str] = {}
        self.said: list[str] = []
        self.acknowledged: set[str] = set()
        self.killed = 0
        self.started = 0

    def start(self) -> None:
        if self.said and self.rng.random() < 0.35:
            description = self.rng.choice(self.said)
        else:
            description = f"Lesson {self.started} of a writer: keep {self.rng.random():.6f} apart."
            self.said.append(description)
        category = self.rng.choice(CATEGORIES)
        args = [self.memlog, "observe", "--name", description[:28], "--description", description,
                "--category", category]  # fmt: skip
        process = subprocess.Popen(
            args, env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        self.running[process] = description
        self.started += 1

    def reap(self) -> list[str]:
        """Forget the writers that ended; what the failed ones said."""
        failures = []
        for process in [p for p in self.running if p.poll() is not None]:
            description = self.running.pop(process)
            err = process.stderr.read().decode() if process.stderr else ""
            if process.stderr:
                process.stderr.close()
            if process.returncode == 0:
                self.acknowledged.add(description)
            elif process.returncode != -signal.SIGKILL:
                failures.append(f"exit {process.returncode}: {err.strip()[:300]}")
        return failures

    def kill_one(self) -> None:
        alive = [p for p in self.running if p.poll() is None]
        if alive:
            victim = self.rng.choice(alive)
            time.sleep(self.rng.random() * 0.3)  # somewhere inside its work
            if victim.poll() is None:
                victim.send_signal(signal.SIGKILL)
                self.killed += 1


def one_run(args: argparse.Namespace, seed: int) -> bool:
    rng = random.Random(seed)
    folder = Path(tempfile.mkdtemp(prefix="memlog-writers-"))
    home = folder / "home"
    writers = Writers(args.memlog, home, rng)
    failures: list[str] = []
    began = time.monotonic()
    next_kill = began + rng.expovariate(1 / args.kill_every)
    while time.monotonic() - began < args.seconds:
        failures += writers.reap()
        while len(writers.running) < args.writers:
            writers.start()
        if not args.no_kill and time.monotonic() >= next_kill:
            writers.kill_one()
            next_kill = time.monotonic() + rng.expovariate(1 / args.kill_every)
        time.sleep(0.02)
    for process in list(writers.running):
        process.wait()
    failures += writers.reap()
    verify = subprocess.run(
        [args.memlog, "verify"], env=writers.env, capture_output=True, text=True
    )
    missing = lost(args.memlog, writers)
    ok = verify.returncode == 0 and not missing and not failures
    print(
        f"seed {seed}: {writers.started} observes, {writers.killed} killed, "
        f"{len(writers.acknowledged)} lessons acknowledged; verify exit {verify.returncode}"
        f"{'' if not missing else f'; {len(missing)} acknowledged lessons missing'}"
        f"{'' if not failures else f'; {len(failures)} writers failed'}",
        flush=True,
    )
    if not ok:
        print((verify.stdout + verify.stderr).strip(), flush=True)
        for line in failures[:5]:
            print(f"  failed: {line}", flush=True)
        print(f"  the home is kept: {home}", flush=True)
    else:
        shutil.rmtree(folder, ignore_errors=True)
    return ok


def lost(memlog: str, writers: Writers) -> list[str]:
    """Acknowledged lessons the log does not hold."""
    done = subprocess.run(
        [memlog, "log", "--type", "entry.observed", "--json"],
        env=writers.env, capture_output=True, text=True,
    )  # fmt: skip
    return [d for d in writers.acknowledged if d not in done.stdout]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writers", type=int, default=6)
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--kill-every", type=float, default=1.0)
    parser.add_argument("--no-kill", action="store_true")
    parser.add_argument("--seed", type=int, default=None)
    found = shutil.which("memlog") or str(Path(sys.executable).with_name("memlog"))
    parser.add_argument("--memlog", default=found)
    args = parser.parse_args()
    seeds = [args.seed] if args.seed is not None else [random.randrange(1 << 30)
                                                        for _ in range(args.runs)]  # fmt: skip
    clean = sum(one_run(args, seed) for seed in seeds)
    print(f"{clean} of {len(seeds)} runs clean")
    sys.exit(0 if clean == len(seeds) else 1)


if __name__ == "__main__":
    main()
