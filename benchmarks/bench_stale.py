"""Stale references: the marks on a real repository's history, and what they cost a start.

    python benchmarks/bench_stale.py [--per-commit 80] [--repeats 21] [--entries 10000]

**History.**  This repository's own git history (the clone it runs in).  At
four old commits (3, 7, 10 and 20% of the way through it) lessons are
written that cite the files of that commit, as lessons cite them: a path in
backticks, a path in prose, an ``Observed in:`` line naming the file and one of
its functions, a ``References`` list, two files at once; and lessons that cite
nothing.  The later commit (HEAD) is checked out as a worktree and memlog
checks every lesson there (``memlog stale``, the same code as the block).  The
truth is ``git ls-tree`` at HEAD: a lesson is truly stale when every file it
cites is gone.  Precision and recall of the marks, by commit and together;
counted apart, the truly stale lessons the check keeps by design: those whose
cited function is still in the tree (the file was renamed with it), and those
whose cited path still ends a tracked path (the file moved under a new folder:
``hooks/hooks.json`` is ``plugin/hooks/hooks.json``); and the gone files git
sees renamed rather than deleted (why the block marks a stale lesson instead of
ranking it down).

**Cost.**  The SessionStart hook at ``--entries`` entries in fresh processes
(``bench_hook.py``'s synthetic home and project, grown to ``--files`` tracked
files), limit 20, with 20 lessons of the project that cite its files ranked
first (a third of them stale): with the
check (its answers cached per commit, as every start but the first after a
commit finds them), with the check and no cache (every start the first after a
commit), and without it (``memory_stale_check: false``), interleaved in the same
rounds; medians, and the ratio to the start without the check.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_hook  # noqa: E402

from memlog.api import reading  # noqa: E402
from memlog.api.recall import inject  # noqa: E402
from memlog.citations import EXTENSIONS  # noqa: E402
from memlog.eventlog.events import EventBase, Observed  # noqa: E402
from memlog.eventlog.log import EventLog  # noqa: E402
from memlog.workspace import Workspace  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DEBUG = False
#: where the old commits lie in the history (this repository moved most of its files into
#: folders on its third day, about a tenth of the way)
SHARES = (0.03, 0.07, 0.10, 0.20)
_DEFINED = re.compile(r"^\s*(?:def|class)\s+([A-Za-z_][A-Za-z0-9_]*)", re.M)


def git(*args: str, cwd: Path = REPO) -> str:
    done = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True,
                          check=True)  # fmt: skip
    return done.stdout


def files_at(commit: str) -> list[str]:
    return git("ls-tree", "-r", "--name-only", commit).splitlines()


def symbol_of(commit: str, path: str, rng: random.Random) -> str:
    """A function or class the file defines at ``commit`` that looks like code (an
    underscore or camelCase), or ""."""
    if not path.endswith(".py"):
        return ""
    names = [n for n in _DEFINED.findall(git("show", f"{commit}:{path}"))
             if "_" in n.strip("_") or re.search(r"[a-z][A-Z]", n)]  # fmt: skip
    return rng.choice(names) if names else ""


def lessons_at(commit: str, count: int, seed: int) -> list[tuple[Observed, list[str]]]:
    """``count`` lessons citing files of ``commit`` in the ways lessons cite them, each with
    the files it was written to cite (the truth's side)."""
    rng = random.Random(f"{seed}-{commit}")
    files = [f for f in files_at(commit) if f.rsplit(".", 1)[-1].lower() in EXTENSIONS
             and "/" in f and not f.startswith("benchmarks/retrieval/sets/")]  # fmt: skip
    chosen = rng.sample(files, min(count, len(files)))
    made = []
    for n, path in enumerate(chosen):
        form = n % 6
        symbol = symbol_of(commit, path, rng)
        other = rng.choice(files)
        details: tuple[str, ...] = ()
        references: tuple[str, ...] = ()
        cites = [path]
        if form == 0:
            text = f"Keep `{path}` free of side effects at import time; tests import it bare."
        elif form == 1:
            text = f"The loader in {path} must stay pure: callers rely on it from two threads."
        elif form == 2:
            text = "Parse before validating; a bad line must name its number."
            details = (f"Observed in: {path} {symbol}".rstrip(),)
        elif form == 3:
            text = "Every writer takes the lock before it opens the segment."
            references = (path,)
        elif form == 4:
            text = f"`{path}` and `{other}` must change together: one reads what the other writes."
            cites = [path, other]
        else:
            text = "Read real samples before writing a parser, never the format description alone."
            cites = []
        text += f" (seen at {commit[:7]}, case {n})"  # each lesson its own entry
        event = Observed(name=f"Lesson {commit[:7]}-{n}", description=text, details=details,
                         references=references, category="patterns", project="")  # fmt: skip
        made.append((event, cites))
    return made


def history(per_commit: int, seed: int, work: Path) -> dict[str, object]:
    commits = git("rev-list", "--reverse", "HEAD").split()
    head = commits[-1]
    olds = [commits[int(len(commits) * share)] for share in SHARES]
    later = set(files_at(head))
    tree = work / "memlog-at-head"
    git("worktree", "add", "--detach", "-f", str(tree), head)
    try:
        return _judge(tree, head, olds, later, per_commit, seed, work)
    finally:
        git("worktree", "remove", "--force", str(tree))


def _judge(tree: Path, head: str, olds: list[str], later: set[str], per_commit: int,
           seed: int, work: Path) -> dict[str, object]:  # fmt: skip
    home = work / "history-home"
    written = {old: lessons_at(old, per_commit, seed) for old in olds}
    events: list[EventBase] = [
        Observed(**{**_fields(e), "project": tree.name}) for made in written.values()
        for e, _ in made
    ]  # fmt: skip
    EventLog(home, redact=False).append(events)
    ws = Workspace.open(tree, home=home)
    found = {s.entry.name: s.checked for s in reading.stale(ws, partly=True)}
    marked = {n for n, c in found.items() if c.stale}
    block = inject(ws, limit=-1)
    in_block = {c.name for c in block.chosen if c.stale}
    renames = _renames(olds, head)
    figures: dict[str, object] = {"head": head[:12], "by commit": {}}
    total = [0, 0, 0, 0, 0]  # right, marked, truly stale, kept by a symbol, moved deeper
    for old, made in written.items():
        truth = {e.name for e, cites in made if cites and all(c not in later for c in cites)}
        said = {e.name for e, _ in made} & marked
        kept = {n for n in truth - said if found.get(n) is not None and found[n].partly}
        deeper = {e.name for e, cites in made if e.name in truth - said - kept
                  and all(any(f.endswith("/" + c) for f in later) for c in cites)}  # fmt: skip
        if DEBUG:
            for e, cites in made:
                if e.name in truth - said:
                    print(
                        "missed",
                        cites,
                        e.description[:80],
                        e.details,
                        e.references,
                        found.get(e.name),
                        file=sys.stderr,
                    )
        row = [len(said & truth), len(said), len(truth), len(kept), len(deeper)]
        total = [a + b for a, b in zip(total, row, strict=True)]
        gone = {c for e, cites in made for c in cites if c not in later}
        moved = sum(1 for c in gone if c in renames[old])
        figures["by commit"][old[:12]] = {  # type: ignore[index]
            "lessons": len(made), "truly stale": len(truth), "marked": len(said),
            "right": len(said & truth), "kept by a symbol": len(kept),
            "found under a new folder": len(deeper),
            "gone files": len(gone), "of them renamed": moved,
        }  # fmt: skip
    right, said, truth, kept, deeper = total
    moved = truth - kept - deeper
    figures.update({
        "precision": right / said if said else float("nan"),
        "recall": right / truth if truth else float("nan"),
        "recall of the lessons whose files are gone under every name":
            right / moved if moved else float("nan"),
        "marked": said, "truly stale": truth, "kept by a symbol": kept,
        "found under a new folder": deeper,
        "block marks the same lessons": in_block <= marked,
    })  # fmt: skip
    return figures


def _fields(event: Observed) -> dict[str, object]:
    return {f: getattr(event, f) for f in ("name", "description", "details", "references",
                                           "category")}  # fmt: skip


def _renames(olds: list[str], head: str) -> dict[str, set[str]]:
    """The files of each old commit that git sees renamed (not deleted) by HEAD."""
    found = {}
    for old in olds:
        lines = git("diff", "--name-status", "-M", old, head).splitlines()
        found[old] = {ln.split("\t")[1] for ln in lines if ln.startswith("R")}
    return found


# -- the cost at a start ------------------------------------------------------------------------


def cost(entries: int, repeats: int, seed: int, work: Path, files: int) -> dict[str, object]:
    home = work / "cost-home"
    print(f"preparing {entries} entries …", file=sys.stderr)
    bench_hook.prepare_home(home, entries, 3 * entries, seed)
    settings = "memory_embedding_provider: hashing\nmemory_vector_weight: 0\n" \
               "memory_fusion_vector_weight: 0\n"  # fmt: skip
    on = bench_hook.prepare_project(work, "project-stale-on", settings)
    off = bench_hook.prepare_project(work, "project-stale-off",
                                     settings + "memory_stale_check: false\n")  # fmt: skip
    cold = bench_hook.prepare_project(work, "project-stale-cold", settings)
    for root in (on, off, cold):
        grow(root, files)
    EventLog(home, redact=False).append([e for root in (on, off, cold) for e in cited(root)])
    env = bench_hook.hook_env(home)
    caches = {name: work / f"cache-{name}" for name in ("on", "off", "cold")}
    for root, name in ((on, "on"), (off, "off"), (cold, "cold")):
        _start(home, root, {**env, "MEMLOG_CACHE_DIR": str(caches[name])})  # warm-up
    marks = _marks(home, on, {**env, "MEMLOG_CACHE_DIR": str(caches["on"])})
    wall: dict[str, list[float]] = {"on": [], "off": [], "cold": []}
    inside: dict[str, list[float]] = {"on": [], "cold": []}
    for _ in range(repeats):
        for name, root in (("on", on), ("off", off), ("cold", cold)):
            if name == "cold":
                shutil.rmtree(caches["cold"] / "stale", ignore_errors=True)
            wall[name].append(_start(home, root, {**env, "MEMLOG_CACHE_DIR": str(caches[name])}))
            if name in inside:
                timings = json.loads((home / ".last-injection.json").read_text())["timings_ms"]
                inside[name].append(float(timings.get("stale_ms", 0.0)))
    medians = {name: statistics.median(values) for name, values in wall.items()}
    return {
        "entries": entries, "tracked files": files + 4, "repeats": repeats,
        "stale lessons marked in the block": marks,
        "median ms": medians, "ratio with the check (cached)": medians["on"] / medians["off"],
        "ratio with the check (first start after a commit)": medians["cold"] / medians["off"],
        "the check's own median ms in the hook (stale_ms)":
            {name: statistics.median(v) for name, v in inside.items()},
    }  # fmt: skip


def grow(root: Path, files: int) -> None:
    """``files`` more tracked files of a few lines of code each, in a hundred folders."""
    for n in range(files):
        path = root / "pkg" / f"mod{n % 100}" / f"file_{n}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"def handler_{n}(rows):\n    return [r for r in rows if r]\n")
    bench_hook.git(root, "add", "-A")
    bench_hook.git(root, "commit", "-q", "-m", "grow")


def cited(root: Path) -> list[Observed]:
    """20 lessons of the project that rank first for its feature, each citing one of its
    files; a third of the files gone."""
    name = root.name
    files = ["src/importer.py", "src/retry.py", "tests/t.py", "README.md"]
    gone = ["src/legacy_csv.py", "src/old_retry.py", "lib/parse_rows.py"]
    made = []
    for n in range(20):
        path = gone[n % 3] if n % 3 == 0 else files[n % 4]
        text = (
            f"For the streaming CSV importer, `{path}` must validate inputs before database "
            f"writes and retry partial writes after a provider times out (case {n})."
        )
        made.append(Observed(name=f"{name} importer lesson {n}", description=text,
                             category=("anti-patterns", "heuristics", "patterns")[n % 3],
                             project=name, count=30))  # fmt: skip
    return made


def _start(home: Path, root: Path, env: dict[str, str]) -> float:
    took, _ = bench_hook.run_once(bench_hook.HOOK, bench_hook.payload(root, 1), root, env)
    return took


def _marks(home: Path, root: Path, env: dict[str, str]) -> int:
    stdin = bench_hook.fresh_session(bench_hook.payload(root, 0))
    done = subprocess.run(bench_hook.HOOK, input=stdin, capture_output=True, cwd=root, env=env,
                          check=True)  # fmt: skip
    bench_hook.settle(home)
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    return context.count("- Stale: ")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-commit", type=int, default=80)
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument("--files", type=int, default=5000, help="files each project tracks")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--skip-cost", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memlog-bench-stale-") as scratch:
        work = Path(scratch)
        started = time.perf_counter()
        figures: dict[str, object] = {"history": history(args.per_commit, args.seed, work)}
        print(json.dumps(figures["history"], indent=1, default=float))
        print(f"(history checked in {time.perf_counter() - started:.1f} s)", file=sys.stderr)
        if not args.skip_cost:
            figures["cost"] = cost(args.entries, args.repeats, args.seed, work, args.files)
            print(json.dumps(figures["cost"], indent=1, default=float))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1, default=float) + "\n")


if __name__ == "__main__":
    main()
