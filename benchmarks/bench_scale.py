"""What each command costs as the store grows: 1k, 10k, 30k (and 100k) entries.

    python benchmarks/bench_scale.py [--sizes 1000,10000,30000] [--with-100k] [--repeats 9]
                                     [--keep DIR]

(``--sizes 100000`` alone measures 100k; ``--keep DIR`` builds each home in
DIR once and measures it again on the next run.)

For each size a synthetic home (``synthetic.py``: three events per entry,
384-d vectors in the ``hashing`` space, the provider the commands embed
with, so no model runs) is built and replayed once.  Then, in fresh
processes, each figure's command runs ``--repeats`` times interleaved with
``python -c "import numpy"`` (the baseline, in the same rounds, so drift and
load hit both alike), the resident ranker off unless said:

* ``observe``: appends one new entry (with its vector) and catches the
  views up; ``catch-up`` with nothing new;
* ``memlog log | head -5``, ``memlog log --limit 5``, ``memlog show``;
* ``memlog replay`` (once per size: it is the longest);
* the SessionStart hook in its own process (and its peak RSS), and answered
  by the resident ranker: in a project with an active feature (a query is
  composed and embedded) and in one without (no query); ``memlog search``;
* the page's search and list (in process, through Starlette's test client);
* the home on disk, per entry.

Every figure is a median in milliseconds with its ratio to the baseline of
its size (``×numpy``) and to the same figure at the smallest size
(``×first``); the load average is printed with each size.  Run it with
memlog installed as users install it (``pip install .``): import time is
part of every figure.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import NamedTuple

from memlog.home import Home

HERE = Path(__file__).resolve().parent
MEMLOG = [sys.executable, "-m", "memlog"]
QUERY = "retry partial writes when the provider times out"


def sibling(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"memlog_bench_{name}", HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


BENCH = sibling("bench_hook")
SYNTHETIC = sibling("synthetic")


class Figure(NamedTuple):
    ms: float
    numpy: float | None  # the baseline of the same rounds (None: in process, no baseline)
    extra: str = ""


def load() -> str:
    return "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def environment(home: Path, resident: bool = False) -> dict[str, str]:
    env = BENCH.hook_env(home)
    env["MEMLOG_EMBEDDING_PROVIDER"] = "hashing"
    env["MEMLOG_KEYWORD_PROVIDER"] = "off"
    env["MEMLOG_RESIDENT_MINUTES"] = "30" if resident else "0"
    return env


def run(argv: Sequence[str], env: dict[str, str], cwd: Path, shell: bool = False) -> float:
    started = time.perf_counter()
    done = subprocess.run(list(argv) if not shell else argv[0], shell=shell, env=env, cwd=cwd,
                          capture_output=True, check=False)  # fmt: skip
    took = (time.perf_counter() - started) * 1000
    if done.returncode != 0:
        raise SystemExit(f"{argv} failed: {done.stderr.decode()[-2000:]}")
    return took


def interleaved(cases: dict[str, Callable[[], float]], repeats: int) -> dict[str, list[float]]:
    """Each case ``repeats`` times, round-robin with ``import numpy``."""
    times: dict[str, list[float]] = {name: [] for name in ["numpy", *cases]}
    for _ in range(repeats):
        times["numpy"].append(run(BENCH.NUMPY, os.environ.copy(), HERE))
        for name, case in cases.items():
            times[name].append(case())
    return times


def build(home: Path, entries: int) -> tuple[float, float]:
    """The synthetic log written and replayed; seconds to write it, milliseconds to replay."""
    started = time.perf_counter()
    SYNTHETIC.generate(home, entries=entries, events=3 * entries, seed=1,
                       space=SYNTHETIC.DEFAULT_SPACES["hashing"])  # fmt: skip
    written = time.perf_counter() - started
    return written, run([*MEMLOG, "replay"], environment(home), home)


def disk_per_entry(home: Path, entries: int) -> tuple[float, str]:
    sizes: dict[str, int] = {}
    for path in home.rglob("*"):
        if path.is_file():
            top = path.relative_to(home).parts[0]
            part = top if top in ("events", "index", "projects") else "db" if top.startswith(
                "memory.db") else "other"  # fmt: skip
            sizes[part] = sizes.get(part, 0) + path.stat().st_size
    total = sum(sizes.values())
    parts = ", ".join(f"{k} {v / entries:.0f}" for k, v in sorted(sizes.items()))
    return total / entries, f"{total / 1e6:.1f} MB; B/entry: {parts}"


def command_figures(home: Path, work: Path, repeats: int) -> dict[str, Figure]:
    env = environment(home)
    counter = iter(range(10**9))
    some = subprocess.run([*MEMLOG, "log", "--limit", "1", "--type", "entry.observed"],
                          env=env, capture_output=True, check=True).stdout.split()[3]  # fmt: skip
    head = f"{sys.executable} -m memlog log | head -5"

    def observe() -> float:
        n = next(counter)
        return run([*MEMLOG, "observe", "--name", f"Scale lesson {n}", "--category", "patterns",
                    "--description", f"Scale lesson {n}: keep retry loop {n} bounded and logged.",
                    "--keyword", "retry"], env, work)  # fmt: skip

    cases = {
        "observe (one new event, caught up)": observe,
        "catch-up with nothing new": lambda: run([*MEMLOG, "catch-up"], env, work),
        "memlog log, first 5 lines (head -5)": lambda: run([head], env, work, shell=True),
        "memlog log --limit 5": lambda: run([*MEMLOG, "log", "--limit", "5"], env, work),
        "memlog show ID": lambda: run([*MEMLOG, "show", some.decode()], env, work),
        "memlog search": lambda: run([*MEMLOG, "search", QUERY], env, work),
    }
    times = interleaved(cases, repeats)
    base = statistics.median(times["numpy"])
    return {name: Figure(statistics.median(times[name]), base) for name in cases}


def hook_figures(home: Path, work: Path, repeats: int) -> dict[str, Figure]:
    """The start in a project with an active feature (a query is composed and embedded)
    and in one without (no query: prominence alone), each in its own process and
    answered by the resident."""
    settings = "memory_embedding_provider: hashing\n"
    projects = {
        "with a query": BENCH.prepare_project(work, "project", settings),
        "no query": bare_project(work / "bare", settings),
    }
    own = environment(home)
    figures: dict[str, Figure] = {}
    for label, project in projects.items():
        stdin = BENCH.payload(project, 0)
        mode = BENCH.check_hook_output(home, project)["mode"]
        cases = {label: lambda: BENCH.run_once(BENCH.HOOK, stdin, project, own)[0]}  # noqa: B023
        times = interleaved(cases, repeats)
        base = statistics.median(times["numpy"])
        rss = BENCH.peak_rss_mb(BENCH.HOOK, stdin, project, own)
        figures[f"hook {label}, own process"] = Figure(
            statistics.median(times[label]), base, f"RSS {rss:.0f} MB, mode {mode}"
        )
        figures[f"hook {label}, resident"] = resident_figure(home, project, repeats)
    return figures


def bare_project(root: Path, settings: str) -> Path:
    """A project with no active feature: the start composes no query."""
    (root / ".claude").mkdir(parents=True)
    (root / ".claude" / "iflow-dev.local.md").write_text(f"---\n{settings}---\n")
    return root


def resident_figure(home: Path, project: Path, repeats: int) -> Figure:
    from memlog.hooks import resident

    env = environment(home, resident=True)
    stdin = BENCH.payload(project, 1)
    BENCH.run_once(BENCH.HOOK, stdin, project, env)  # starts it
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and resident.call(Home(home), "status") is None:
        time.sleep(0.1)
    try:
        BENCH.run_once(BENCH.HOOK, stdin, project, env)  # warm
        cases = {"resident": lambda: BENCH.run_once(BENCH.HOOK, stdin, project, env)[0]}
        times = interleaved(cases, repeats)
        status = resident.call(Home(home), "status") or {}
        rss = resident_rss(int(status.get("pid", 0) or 0))
    finally:
        resident.call(Home(home), "stop")
    base = statistics.median(times["numpy"])
    served = f"served {status.get('served', 0)}, RSS {rss}"
    return Figure(statistics.median(times["resident"]), base, served)


def resident_rss(pid: int) -> str:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return f"{int(line.split()[1]) / 1024:.0f} MB"
    except (OSError, ValueError):
        pass
    return "?"


def page_figures(home: Path, work: Path, repeats: int) -> dict[str, Figure]:
    from starlette.testclient import TestClient

    from memlog.ui.app import create_app
    from memlog.workspace import Workspace

    os.environ.update({"MEMLOG_EMBEDDING_PROVIDER": "hashing", "MEMLOG_KEYWORD_PROVIDER": "off"})
    ws = Workspace.open(work, home=home)
    port, token = 40998, "bench"
    client = TestClient(create_app(ws, token, port, work / "snapshots"),
                        base_url=f"http://127.0.0.1:{port}")  # fmt: skip
    client.cookies.set(f"memlog_ui_{port}", token)
    cases = {
        "page search": lambda: client.get("/", params={"q": QUERY}),
        "page list": lambda: client.get("/"),
        "page log": lambda: client.get("/log"),
    }
    figures = {}
    for name, case in cases.items():
        assert case().status_code == 200, name
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            case()
            times.append((time.perf_counter() - started) * 1000)
        figures[name] = Figure(statistics.median(times), None)
    return figures


def measure(entries: int, repeats: int, root: Path, keep: Path | None = None) -> dict[str, Figure]:
    """Every figure at ``entries``; with ``keep``, the home is built there once and used
    again by the next runs (no replay figure then: it is measured when it is built)."""
    home = (keep or root) / f"home-{entries}"
    work = root / f"work-{entries}"
    work.mkdir(parents=True)
    print(f"\n{entries} entries ({load()})", flush=True)
    figures: dict[str, Figure] = {}
    if keep is None or not (home / "memory.db").exists():
        shutil.rmtree(home, ignore_errors=True)
        written, replay_ms = build(home, entries)
        print(f"  log written in {written:.1f} s; replayed in {replay_ms / 1000:.1f} s")
        figures["replay"] = Figure(replay_ms, None, load())
    else:
        print(f"  the home kept in {home}", flush=True)
        figures["replay"] = Figure(float("nan"), None, "(a kept home: not replayed)")
    figures.update(command_figures(home, work, repeats))
    print(f"  commands done ({load()})", flush=True)
    figures.update(hook_figures(home, work, repeats))
    print(f"  hooks done ({load()})", flush=True)
    figures.update(page_figures(home, work, repeats))
    per_entry, detail = disk_per_entry(home, entries)
    figures["disk per entry (bytes)"] = Figure(per_entry, None, detail)
    for name, figure in figures.items():
        print(f"  {name:<36} {cell(figure)}  {figure.extra}", flush=True)
    if keep is None:
        shutil.rmtree(home, ignore_errors=True)
    return figures


def cell(figure: Figure, first: Figure | None = None) -> str:
    if figure.ms != figure.ms:  # not measured (NaN)
        return "—"
    text = f"{figure.ms:,.0f}"
    if figure.numpy:
        text += f" (×{figure.ms / figure.numpy:.2f} numpy)"
    if first is not None and first.ms:
        text += f" [×{figure.ms / first.ms:.2f}]"
    return text


def table(results: dict[int, dict[str, Figure]]) -> None:
    sizes = sorted(results)
    smallest = results[sizes[0]]
    print("\nmedians in ms (disk: bytes per entry); (×numpy): the same rounds' "
          "`python -c \"import numpy\"`; [×first]: the same figure at", sizes[0])  # fmt: skip
    print("| | " + " | ".join(f"{n:,}" for n in sizes) + " |")
    print("|---|" + "---|" * len(sizes))
    for name in smallest:
        cells = [cell(results[n][name], smallest[name]) for n in sizes]
        print(f"| {name} | " + " | ".join(cells) + " |")
    for n in sizes:
        base = results[n]["observe (one new event, caught up)"].numpy
        print(f"import numpy at {n:,}: {base:.0f} ms" if base else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,30000", help="entries, comma-separated")
    parser.add_argument("--with-100k", action="store_true", help="also 100,000 entries")
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--keep", type=Path, help="build the homes in this folder once and "
                        "use them again (each run's observe adds a few entries)")  # fmt: skip
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    sizes += [100_000] if args.with_100k else []
    root = Path(tempfile.mkdtemp(prefix="memlog-bench-scale-"))
    try:
        results = {n: measure(n, args.repeats, root, args.keep) for n in sizes}
    finally:
        shutil.rmtree(root, ignore_errors=True)
    table(results)


if __name__ == "__main__":
    main()
