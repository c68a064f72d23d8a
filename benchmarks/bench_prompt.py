"""Recall at the prompt: how long the UserPromptSubmit hook takes, how often it speaks and
how often what it says is useful.

    python benchmarks/bench_prompt.py [--entries 10000] [--repeats 15] [--labels-root DIR]

Latency: the hook (``memlog hook user-prompt``) in fresh processes at
``--entries`` synthetic entries with local-space vectors, the default
configuration (the local MiniLM query embedding), each run a session of its
own; ranked in its own process (``memory_resident_minutes: 0``) and answered
by a warm resident, each interleaved with ``python -c "import numpy"`` in the
same rounds.  Run it with memlog installed as users install it (``pip install
.`` into a scratch venv, not editable): imports are most of a fresh process.

How often it speaks: every prompt of the prompt sets of the retrieval benchmark
(``benchmarks/retrieval/sets/*p-*``; ``s1p`` is made from the real feature
specs of ``iflow-features-08a38d02`` by ``make_prompts.py``), each the first
prompt of a session of its own, against its set's corpus imported with the
default configuration; ``s1p`` also as the first prompt after the session
start of the feature's own project (whose block the prompt must not repeat).
The recall is ``api.recall.for_prompt``, the hook's own, given time enough
that the query vector is always there, as the resident gives it.  What it
injects is graded with the set's blind labels (``labels/*.jsonl``, or those of
``--labels-root``): precision is the share of injected entries graded useful
(1 or 2) among those judged, with a 95% interval over the prompts that spoke;
unjudged entries are counted apart.  Nothing here is tuned: the floor is the
configured one (``--floor`` shows another).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE / "retrieval")]
import bench_hook  # noqa: E402
import labelsets  # noqa: E402
import synthetic  # noqa: E402

from memlog.api import recall  # noqa: E402
from memlog.api.capturing import import_files  # noqa: E402
from memlog.home import Home  # noqa: E402
from memlog.projections.runner import catch_up  # noqa: E402
from memlog.vocabulary import DEFAULT_SPACE  # noqa: E402
from memlog.workspace import Workspace  # noqa: E402

PROMPT_HOOK = [sys.executable, "-m", "memlog", "hook", "user-prompt"]
#: a prompt on the synthetic corpus's topics (it speaks there) for the latency runs
LATENCY_PROMPT = (
    "Webhook retries fail when a provider times out: how do we keep retries idempotent?"
)


# -- latency ------------------------------------------------------------------------------------


class Prompts:
    """Prompt hook payloads, each a session of its own."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.n = 0

    def next(self) -> bytes:
        self.n += 1
        return json.dumps({
            "session_id": f"bench-prompt-{self.n}-{time.time_ns()}", "cwd": str(self.root),
            "prompt": LATENCY_PROMPT, "hook_event_name": "UserPromptSubmit",
        }).encode()  # fmt: skip


def timed(argv: list[str], stdin: bytes, cwd: Path, env: dict[str, str]) -> tuple[float, bool]:
    """Wall milliseconds of one run, and whether it printed anything; its recorder (the
    recall, written after the output) is waited for, untimed."""
    import subprocess

    from memlog.hooks.recorder import settled

    started = time.perf_counter()
    done = subprocess.run(argv, input=stdin, capture_output=True, cwd=cwd, env=env, check=False)
    took = (time.perf_counter() - started) * 1000
    if done.returncode != 0:
        raise SystemExit(f"{argv} failed: {done.stderr.decode()}")
    if argv == PROMPT_HOOK and not settled(Home(Path(env["MEMLOG_HOME"])), 60):
        raise SystemExit("the prompt hook's recorder did not finish")
    return took, bool(done.stdout.strip())


def rounds(
    runs: dict[str, tuple[list[str], Any, Path, dict[str, str]]], repeats: int
) -> dict[str, list[tuple[float, bool]]]:
    """Each run ``repeats`` times, round-robin (``Any``: bytes, or what makes them)."""
    found: dict[str, list[tuple[float, bool]]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, (argv, stdin, cwd, env) in runs.items():
            given = stdin.next() if isinstance(stdin, Prompts) else stdin
            found[name].append(timed(argv, given, cwd, env))
    return found


def report(found: dict[str, list[tuple[float, bool]]], base: str) -> None:
    floor = statistics.median(t for t, _ in found[base])
    for name, values in found.items():
        times = [t for t, _ in values]
        median = statistics.median(times)
        spoke = sum(s for _, s in values)
        said = "" if name == base else f", spoke {spoke}/{len(values)}"
        print(f"  {name:<34} {median:7.1f} ms [min {min(times):6.1f}]  "
              f"×{median / floor:.2f} of import numpy{said}")  # fmt: skip


def latency(entries: int, repeats: int, work: Path) -> None:
    from memlog.hooks import resident

    bench = bench_hook
    home = work / "home"
    synthetic.generate(home, entries=entries, events=3 * entries, seed=1)
    catch_up(home, DEFAULT_SPACE)
    project = bench.prepare_project(work, "project", "memory_embedding_provider: local\n")
    env = bench.hook_env(home)  # no resident
    numpy = (bench.NUMPY, b"", work, env)
    print(f"prompt hook at {entries} entries, {repeats} rounds (medians):")
    report(rounds({"python -c 'import numpy'": numpy,
                   "prompt hook, own process": (PROMPT_HOOK, Prompts(project), project, env)},
                  repeats), "python -c 'import numpy'")  # fmt: skip
    warm = {**env, "MEMLOG_RESIDENT_MINUTES": "30"}
    timed(PROMPT_HOOK, Prompts(project).next(), project, warm)  # ranks, then starts it
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and resident.call(Home(home), "status") is None:
        time.sleep(0.1)
    try:
        found = rounds({"python -c 'import numpy'": (bench.NUMPY, b"", work, warm),
                        "prompt hook, resident": (PROMPT_HOOK, Prompts(project), project, warm)},
                       repeats)  # fmt: skip
        status = resident.call(Home(home), "status") or {}
    finally:
        resident.call(Home(home), "stop")
    print(f"  (the resident served {status.get('served', 0)} of {repeats + 1} prompts)")
    report(found, "python -c 'import numpy'")


# -- speaking and precision ---------------------------------------------------------------------


def wilson(hits: int, n: int) -> tuple[float, float]:
    """The 95% Wilson interval of a proportion."""
    if n == 0:
        return (math.nan, math.nan)
    z, p = 1.96, hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def corpus_home(labelset: labelsets.LabelSet, cache: Path) -> Path:
    """The set's corpus imported with the default configuration (kept for the next run)."""
    home = cache / labelset.corpus.name
    if not (home / "memory.db").exists():
        started = time.perf_counter()
        import_files(Workspace.at(None, home=home), labelsets.corpus_files(labelset.corpus))
        print(f"imported {labelset.corpus.name} in {time.perf_counter() - started:.0f} s")
    return home


def grades_of(
    labelset: labelsets.LabelSet, root: Path | None, home: Path
) -> dict[str, dict[str, int]]:
    """The set's blind labels, graded ids per prompt (every label file, the best grade)."""
    folder = (root / labelset.name) if root is not None else labelset.folder
    files = sorted((folder / "labels").glob("*.jsonl")) if (folder / "labels").is_dir() else []
    from memlog.projections.sqlite_view import queries

    known = queries.entries(Home(home), vectors=False)
    names = {(e.category, e.name): e.id for e in known}
    found: dict[str, dict[str, int]] = {}
    for path in files:
        for qid, graded in labelsets.read_labels(path, {e.id for e in known}, names).items():
            mine = found.setdefault(qid, {})
            for entry, grade in graded.items():
                mine[entry] = max(grade, mine.get(entry, 0))
    return found


class Tally:
    """What the recall said over a set's prompts."""

    def __init__(self) -> None:
        self.prompts = 0
        self.spoke = 0
        self.entries = 0
        self.unjudged = 0
        #: per prompt that spoke and had judged entries: the share useful, and directly so
        self.useful: list[float] = []
        self.direct: list[float] = []

    def add(self, chosen: list[str], grades: dict[str, int] | None) -> None:
        self.prompts += 1
        if not chosen:
            return
        self.spoke += 1
        self.entries += len(chosen)
        if grades is None:
            return
        judged = [grades[i] for i in chosen if i in grades]
        self.unjudged += len(chosen) - len(judged)
        if judged:
            self.useful.append(sum(g >= 1 for g in judged) / len(judged))
            self.direct.append(sum(g >= 2 for g in judged) / len(judged))

    def line(self, name: str) -> str:
        from rankers import bootstrap

        low, high = wilson(self.spoke, self.prompts)
        said = (f"{name:<34} spoke on {self.spoke}/{self.prompts} prompts "
                f"({self.spoke / max(self.prompts, 1):.0%}, 95% {low:.0%}–{high:.0%}), "
                f"{self.entries} entries")  # fmt: skip
        if not self.useful:
            return said + ("; no labels" if not self.unjudged else "")
        u_low, u_high = bootstrap(self.useful)
        d_low, d_high = bootstrap(self.direct)
        return (f"{said}; precision: useful {statistics.mean(self.useful):.2f} "
                f"[{u_low:.2f}, {u_high:.2f}], directly {statistics.mean(self.direct):.2f} "
                f"[{d_low:.2f}, {d_high:.2f}], {self.unjudged} unjudged")  # fmt: skip


def recalled(ws: Workspace, prompt: str, session: str, cwd: str | None = None) -> list[str]:
    found = recall.for_prompt(ws, prompt, time.monotonic() + 60, session, cwd, keep=lambda _: None)
    return [c.id for c in found.chosen]


def speaking(labels_root: Path | None, floor: float | None, cache: Path, work: Path) -> None:
    if floor is not None:
        os.environ["MEMLOG_RELEVANCE_FLOOR"] = str(floor)
    sets = [s for s in labelsets.all_sets() if s.kind == "prompt"]
    print("\nhow often it speaks (each prompt the first of its session):")
    for labelset in sets:
        home = corpus_home(labelset, cache)
        ws = Workspace.at(None, home=home)
        grades = grades_of(labelset, labels_root, home)
        tally = Tally()
        for n, query in enumerate(labelsets.queries(labelset)):
            chosen = recalled(ws, query.text, f"{labelset.name}-{n}-{time.time_ns()}")
            tally.add(chosen, grades.get(query.qid) if grades else None)
        print("  " + tally.line(labelset.name))
        if labelset.name.startswith("s1p-"):
            print(
                "  " + after_start(labelset, ws, grades, work).line(labelset.name + " after start")
            )


def after_start(
    labelset: labelsets.LabelSet, ws: Workspace, grades: dict[str, dict[str, int]], work: Path
) -> Tally:
    """Each s1p prompt after the session start of its feature's project."""
    features = labelsets.FIXTURES / "iflow-features-08a38d02"
    tally = Tally()
    for n, query in enumerate(labelsets.queries(labelset)):
        name = query.qid.removeprefix("p-")
        project = work / "features" / name
        if not project.exists():
            target = project / "docs" / "features" / name
            shutil.copytree(features / name, target)
            (project / ".git").mkdir()
            meta = {"slug": name.split("-", 1)[1], "status": "active"}
            (target / ".meta.json").write_text(json.dumps(meta))
        here = Workspace(ws.home, project, ws.config)
        session = f"after-{n}-{time.time_ns()}"
        recall.for_hook(here, time.monotonic() + 60, session, keep=lambda _: None, cwd=str(project))
        tally.add(recalled(here, query.text, session, str(project)), grades.get(query.qid) or None)
    return tally


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--labels-root", type=Path, help="a sets/ folder holding labels/")
    parser.add_argument("--floor", type=float, help="another relevance floor than configured")
    parser.add_argument(
        "--cache", type=Path, default=Path(tempfile.gettempdir()) / "memlog-bench-prompt"
    )
    parser.add_argument("--skip-latency", action="store_true")
    parser.add_argument("--skip-speaking", action="store_true")
    args = parser.parse_args()
    for name in [k for k in os.environ if k.startswith("MEMLOG_") and k != "MEMLOG_CACHE_DIR"]:
        del os.environ[name]  # the default configuration
    work = Path(tempfile.mkdtemp(prefix="memlog-bench-prompt-"))
    os.environ["MEMLOG_HOME"] = str(work / "unused-home")
    os.environ["CLAUDE_CONFIG_DIR"] = str(work / "claude")  # no CLAUDE.md, no auto memory
    try:
        if not args.skip_latency:
            latency(args.entries, args.repeats, work)
        if not args.skip_speaking:
            speaking(args.labels_root, args.floor, args.cache, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
