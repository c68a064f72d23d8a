"""The SessionStart hook end to end at 10k entries, the ranking core, and peak memory.

    python benchmarks/bench_hook.py [--entries 10000] [--events 30000] [--repeats 21]

Measured, each as a median over ``--repeats`` fresh processes (stdin JSON in,
envelope out), in a git project with an active feature so a real query is
composed:

(a) the hook ranking by FTS5 + prominence only (``memory_vector_weight: 0``);
(b) the hook with 384-d vectors in the configured space and the ``hashing``
    query embedder (vectors seeded for hashing/blake2b-words/384);
both against ``python -c "import numpy"`` measured in the same run (the
floor any numpy-using hook pays).  Then the ranking core (``ranking.score`` +
``ranking.select``) and the cosine product at 10k × 768 in this process, and
the hook's peak RSS (``getrusage(RUSAGE_CHILDREN)`` of a one-hook parent).

Goals: hook (a) median ≤ 1.2× ``import numpy``; ranking core ≤ 10 ms;
peak RSS ≤ 200 MB.  After each hook run its recorder (a detached process
that records the recall and catches the views up) is waited for, untimed,
as the next start would find it finished; its time is reported apart.  The log is
it is there, else by a small generator here; views are caught up before
timing, since a session-start hook only ever catches up the last few events.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from memlog.config import Config
from memlog.eventlog.events import EventBase, Observed, Reembedded
from memlog.eventlog.log import EventLog
from memlog.home import Home
from memlog.hooks.recorder import settled
from memlog.projections.runner import catch_up
from memlog.retrieval import ranking

HASHING = ("hashing", "blake2b-words", 384)
#: the hook ranking by FTS + prominence, against ``python -c "import numpy"`` in the same run
GOAL_RATIO = 1.2
GOAL_RANK_MS = 10.0
GOAL_RSS_MB = 200.0
SPEC = (
    "Build a streaming CSV importer for the ledger service. It must parse large files with "
    "unicode text, validate inputs before database writes, retry partial writes after a "
    "provider times out and keep memory flat with more than ten thousand rows."
)
CONFIGS = {
    "a": (
        "memory_embedding_provider: hashing\nmemory_vector_weight: 0\n"
        "memory_fusion_vector_weight: 0\n"
    ),
    "b": "memory_embedding_provider: hashing\n",
}


# -- the log -------------------------------------------------------------------------------


def load_synthetic() -> Callable[..., int] | None:
    path = Path(__file__).with_name("synthetic.py")
    if not path.exists():
        return None
    spec = importlib.util.spec_from_file_location("memlog_bench_synthetic", path)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    generate: Callable[..., int] = module.generate
    return generate


def simple_log(home: Path, entries: int, seed: int) -> int:
    """Entries across the categories, a tenth of them observed again: no vectors."""
    rng = random.Random(seed)
    words = SPEC.lower().replace(".", "").replace(",", "").split() + [
        "cache", "lock", "retry", "schema", "hook", "index", "token", "deploy", "review",
    ]  # fmt: skip
    categories = ("anti-patterns", "heuristics", "patterns", "facts")
    log = EventLog(home, redact=False, screen=False)  # generated lessons: no scan
    events: list[EventBase] = []
    for i in range(entries):
        text = " ".join(rng.choices(words, k=18))
        events.append(
            Observed(
                name=" ".join(rng.choices(words, k=4)).capitalize(),
                description=f"{text.capitalize()} (lesson {i}).",
                category=rng.choice(categories),  # type: ignore[arg-type]
                confidence=rng.choice(("high", "medium", "low")),  # type: ignore[arg-type]
                keywords=tuple(rng.sample(words, 5)),
                project=f"project-{i % 20}",
                count=rng.randint(1, 12),
            )
        )
    total = 0
    for start in range(0, len(events), 5000):
        total += len(log.append(events[start : start + 5000]))
    return total


def live_ids(home: Path) -> list[str]:
    from memlog.projections.sqlite_view import store

    db = store.connect(home / "memory.db", readonly=True)
    try:
        return [r[0] for r in db.execute("SELECT id FROM entries WHERE status = 'live'")]
    finally:
        db.close()


def seed_hashing_vectors(home: Path, seed: int) -> int:
    """A unit vector in the hashing space for every live entry."""
    ids = live_ids(home)
    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((len(ids), HASHING[2])).astype("<f4")
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    log = EventLog(home, redact=False, screen=False)  # generated lessons: no scan
    events = [
        Reembedded(
            entry_id=entry_id,
            provider=HASHING[0],
            model=HASHING[1],
            dimensions=HASHING[2],
            vector=matrix[i].astype("<f4").tobytes(),
        )
        for i, entry_id in enumerate(ids)
    ]
    for start in range(0, len(events), 5000):
        log.append(events[start : start + 5000])
    return len(events)


def prepare_home(home: Path, entries: int, events: int, seed: int) -> str:
    generate = load_synthetic()
    if generate is not None:
        count = generate(home, entries=entries, events=max(events, 3 * entries), seed=seed)
        source = f"benchmarks/synthetic.py: {count} events"
    else:
        count = simple_log(home, entries, seed)
        source = f"built-in generator: {count} events"
    space = Config(memory_embedding_provider="hashing").space
    catch_up(home, space)
    seeded = seed_hashing_vectors(home, seed)
    catch_up(home, space)
    return f"{source}, {len(live_ids(home))} live entries, {seeded} hashing vectors"


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.com", "-C", str(root)]
        + list(args),
        check=True,
        capture_output=True,
    )


def prepare_project(parent: Path, name: str, settings: str) -> Path:
    """A git project with four commits and an active feature with a spec."""
    root = parent / name
    feature = root / "docs" / "features" / "031-csv-importer"
    feature.mkdir(parents=True)
    (root / ".claude").mkdir()
    (root / ".claude" / "iflow-dev.local.md").write_text(f"---\n{settings}---\n")
    meta = {"slug": "csv-importer", "status": "active", "lastCompletedPhase": "design"}
    (feature / ".meta.json").write_text(json.dumps(meta))
    (feature / "spec.md").write_text(f"# Spec: CSV importer\n\n{SPEC}\n\n## Scope\n\nAll of it.\n")
    git(root, "init", "-q")
    for n, files in enumerate(
        (["README.md"], ["src/importer.py"], ["src/retry.py"], ["tests/t.py"])
    ):
        for rel in files:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(f"# {n}\n")
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", f"step {n}")
    return root


# -- timing ------------------------------------------------------------------------------------


def hook_env(home: Path) -> dict[str, str]:
    """The environment of a fresh-process start: no resident ranker answers it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLOG_")}
    env["MEMLOG_HOME"] = str(home)
    env["MEMLOG_RESIDENT_MINUTES"] = "0"
    return env


def payload(root: Path, n: int) -> bytes:
    return json.dumps(
        {
            "session_id": f"bench-{n}",
            "transcript_path": str(root / "t.jsonl"),
            "cwd": str(root),
            "hook_event_name": "SessionStart",
            "source": "startup",
        }
    ).encode()


HOOK = [sys.executable, "-m", "memlog", "hook", "session-start"]
NUMPY = [sys.executable, "-c", "import numpy"]


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


_RUNS = itertools.count()


def fresh_session(stdin: bytes) -> bytes:
    """The payload under a session id of its own: the hook injects (and records) once per
    session start, so a second run for the same one would measure an injection refused."""
    unique = f'"session_id": "bench-{next(_RUNS)}-'.encode()
    return stdin.replace(b'"session_id": "bench-', unique, 1)


AFTER: list[float] = []


def run_once(
    argv: Sequence[str], stdin: bytes, cwd: Path, env: dict[str, str]
) -> tuple[float, float]:
    """Wall and CPU (user + system) milliseconds of one run.

    After a hook, its recorder (detached: it writes the recall and catches the
    views up after the hook has exited) is waited for, untimed, as the next
    start would find it done; how long it took is kept in ``AFTER``.
    """
    stdin = fresh_session(stdin)
    cpu = cpu_seconds()
    started = time.perf_counter()
    done = subprocess.run(argv, input=stdin, capture_output=True, cwd=cwd, env=env, check=False)
    took = (time.perf_counter() - started) * 1000
    if done.returncode != 0:
        raise SystemExit(f"{argv} failed: {done.stderr.decode()}")
    used = (cpu_seconds() - cpu) * 1000
    if argv == HOOK:
        settle(Path(env["MEMLOG_HOME"]))
        AFTER.append((time.perf_counter() - started) * 1000 - took)
    return took, used


def settle(home: Path) -> None:
    if not settled(Home(home), timeout=60):
        raise SystemExit(f"the hook's recorder did not finish; see {home / 'hook-errors.log'}")


def check_hook_output(home: Path, root: Path) -> dict[str, object]:
    stdin = fresh_session(payload(root, 0))
    done = subprocess.run(HOOK, input=stdin, capture_output=True, cwd=root, env=hook_env(home),
                          check=True)  # fmt: skip
    settle(home)
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    if not context:
        raise SystemExit(f"the hook injected nothing; see {home / 'hook-errors.log'}")
    tracking = json.loads((home / ".last-injection.json").read_text())
    return {"mode": tracking["mode"], "timings_ms": tracking["timings_ms"]}


def interleaved(
    runs: dict[str, tuple[Sequence[str], bytes, Path, dict[str, str]]], repeats: int
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Each command ``repeats`` times, round-robin, so drift hits all alike."""
    wall: dict[str, list[float]] = {name: [] for name in runs}
    cpu: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, (argv, stdin, cwd, env) in runs.items():
            took, used = run_once(argv, stdin, cwd, env)
            wall[name].append(took)
            cpu[name].append(used)
    return wall, cpu


def against(work: Path, checkout: Path, env: dict[str, str]) -> dict[str, str]:
    """The environment that runs ``checkout``'s memlog (its root is the package).  Both
    trees are compiled first, as an install compiles them: a tree left to compile its
    modules at each start (``PYTHONDONTWRITEBYTECODE``) would be measured compiling."""
    import compileall

    for tree in (checkout, Path(__file__).resolve().parents[1]):
        compileall.compile_dir(tree, quiet=1, rx=re.compile(r"/(tests|benchmarks|\.venv)/"))
    shadow = work / "against"
    shadow.mkdir(exist_ok=True)
    link = shadow / "memlog"
    if not link.exists():
        link.symlink_to(checkout.resolve(), target_is_directory=True)
    return {**env, "PYTHONPATH": str(shadow)}


def p90_of(values: list[float]) -> float:
    return sorted(values)[int(0.9 * (len(values) - 1))]


def peak_rss_mb(argv: Sequence[str], stdin: bytes, cwd: Path, env: dict[str, str]) -> float:
    """Peak RSS of one run of ``argv``, read by a parent that has no other child."""
    probe = (
        "import resource, subprocess, sys\n"
        "subprocess.run(sys.argv[1:], input=sys.stdin.buffer.read(), capture_output=True)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe, *argv], input=fresh_session(stdin),
                          cwd=cwd, env=env, capture_output=True, check=True)  # fmt: skip
    return int(done.stdout) / 1024


def ranking_core(n: int, dims: int, repeats: int, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((n, dims)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    query = matrix[0].copy()
    categories = [("anti-patterns", "heuristics", "patterns", "facts")[i % 4] for i in range(n)]
    observations = rng.integers(1, 30, n).astype(np.float64)
    confidence = list(rng.choice(["high", "medium", "low"], n))
    days = rng.uniform(0, 365, n)
    recalls = rng.integers(0, 20, n).astype(np.float64)
    keyword = np.where(rng.random(n) < 0.05, rng.uniform(0, 12, n), 0.0)
    weights = ranking.Weights(0.5, 0.2, 0.3)
    cosine: list[float] = []
    core: list[float] = []
    for _ in range(repeats):
        started = time.perf_counter()
        vector = (matrix @ query).astype(np.float64)
        middle = time.perf_counter()
        scores = ranking.score(vector, keyword, observations, confidence, days, recalls, weights)
        chosen = ranking.select(categories, scores.final, 20)
        done = time.perf_counter()
        assert len(chosen) == 20 and 0 in chosen
        cosine.append((middle - started) * 1000)
        core.append((done - middle) * 1000)
    return {
        "cosine_ms": statistics.median(cosine),
        "core_ms": statistics.median(core),
        "core_min_ms": min(core),
    }


def import_breakdown(root: Path, env: dict[str, str], runs: int) -> dict[str, float]:
    """Median self time (ms) of the imports of one hook process, by who owns the module."""
    groups: dict[str, list[float]] = {}
    for n in range(runs):
        done = subprocess.run([sys.executable, "-X", "importtime", *HOOK[1:]],
                              input=fresh_session(payload(root, 100 + n)), capture_output=True,
                              cwd=root, env=env, check=True)  # fmt: skip
        settle(Path(env["MEMLOG_HOME"]))
        totals: dict[str, float] = {}
        for line in done.stderr.decode().splitlines():
            parts = line.split("|")
            if len(parts) != 3 or not parts[0].startswith("import time:") or "self" in parts[0]:
                continue
            top = parts[2].strip().split(".")[0]
            owner = top if top in ("numpy", "memlog", "msgspec", "sqlite3", "Stemmer") else "other"
            totals[owner] = totals.get(owner, 0.0) + int(parts[0].split(":")[1]) / 1000
        for owner, ms in totals.items():
            groups.setdefault(owner, []).append(ms)
    return {owner: statistics.median(values) for owner, values in sorted(groups.items())}


# -- main --------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--events", type=int, default=30_000, help="events in the synthetic log")
    parser.add_argument("--repeats", type=int, default=21, help="runs per measurement")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--work", type=Path, help="working directory (default: a temporary one)")
    parser.add_argument(
        "--against",
        type=Path,
        help="a checkout of another commit whose hook runs in the same rounds",
    )
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(
        prefix="memlog-bench-hook-", ignore_cleanup_errors=True
    ) as scratch:
        work = args.work or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        home = work / "home"
        started = time.perf_counter()
        print(f"preparing {args.entries} entries in {home} …", file=sys.stderr)
        described = prepare_home(home, args.entries, args.events, args.seed)
        print(f"log: {described} ({time.perf_counter() - started:.1f} s)")
        projects = {
            name: prepare_project(work, f"project-{name}", s) for name, s in CONFIGS.items()
        }
        env = hook_env(home)
        for name, root in projects.items():
            info = check_hook_output(home, root)  # also the warm-up (space switch, caches)
            check_hook_output(home, root)
            print(f"({name}) mode {info['mode']}, in-process timings {info['timings_ms']}")

        runs = {
            "numpy": (NUMPY, b"", work, env),
            **{name: (HOOK, payload(root, 1), root, env) for name, root in projects.items()},
        }
        if args.against is not None:
            other = against(work, args.against, env)
            runs |= {f"{n}@": (HOOK, payload(r, 1), r, other) for n, r in projects.items()}
        times, cpu = interleaved(runs, args.repeats)
        floor = statistics.median(times["numpy"])
        cpu_floor = statistics.median(cpu["numpy"])
        print(
            f"\nfresh processes, {args.repeats} runs: median wall [min, p90] and median CPU "
            "(user+sys); min is the least disturbed by other load"
        )
        rows = {"numpy": "python -c 'import numpy'"} | {
            "a": "hook (a) FTS + prominence",
            "b": "hook (b) + hashing query vector",
        }
        if args.against is not None:
            rows |= {f"{n}@": f"{rows[n][:8]} of {args.against.name}" for n in ("a", "b")}
        for name, label in rows.items():
            median = statistics.median(times[name])
            used = statistics.median(cpu[name])
            line = (
                f"  {label:<34}{median:7.1f} ms [{min(times[name]):6.1f}, "
                f"{p90_of(times[name]):6.1f}]  cpu {used:6.1f} ms"
            )
            if name != "numpy":
                line += f"  ×{median / floor:4.2f} numpy (cpu ×{used / cpu_floor:4.2f})"
            if name.endswith("@"):
                line += f"  (this tree ×{statistics.median(times[name[:-1]]) / median:4.2f})"
            if name == "a":
                verdict = "ok" if median <= GOAL_RATIO * floor else "MISSES"
                line += f"  goal ≤{GOAL_RATIO}× numpy: {verdict}"
            print(line)
        print(
            f"  then, detached: the hook's recorder  {statistics.median(AFTER):7.1f} ms "
            "(recall, start, views caught up; not waited for by Claude Code)"
        )

        print("\nwhere a hook process spends its time (median of 5; imports by self time):")
        for name, root in projects.items():
            spent = import_breakdown(root, env, 5)
            listed = ", ".join(f"{k} {v:.1f}" for k, v in spent.items())
            print(f"  ({name}) imports ms: {listed}; total {sum(spent.values()):.1f}")
            timings = json.loads((home / ".last-injection.json").read_text())["timings_ms"]
            print(f"  ({name}) work in process ms: {timings}")

        core = ranking_core(10_000, 768, args.repeats, args.seed)
        verdict = "ok" if core["core_ms"] <= GOAL_RANK_MS else "MISSES"
        print("\nranking core at 10k × 768 (in process, median):")
        print(f"  cosine (matrix @ query)           {core['cosine_ms']:7.2f} ms")
        print(
            f"  score + select                    {core['core_ms']:7.2f} ms"
            f" [min {core['core_min_ms']:.2f}]  goal ≤{GOAL_RANK_MS:.0f} ms: {verdict}"
        )

        print("\npeak RSS of one hook process:")
        for name, root in projects.items():
            rss = peak_rss_mb(HOOK, payload(root, 2), root, env)
            verdict = "ok" if rss <= GOAL_RSS_MB else "MISSES"
            print(f"  {rows[name]:<34}{rss:7.1f} MB  goal ≤{GOAL_RSS_MB:.0f} MB: {verdict}")
        numpy_rss = peak_rss_mb(NUMPY, b"", work, env)
        print(f"  python -c 'import numpy'          {numpy_rss:7.1f} MB")


if __name__ == "__main__":
    main()
