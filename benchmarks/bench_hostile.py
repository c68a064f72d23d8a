"""The session start hook in a folder holding the YAML "billion laughs" against the same
hook in a plain folder: wall time (median of alternating runs), peak memory, and whether
it gave its usual block.

    python benchmarks/bench_hostile.py [--runs N] [--fixtures DIR]

A home is filled by ``memlog import`` of the largest real knowledge bank (the default,
local embedding model), then ``memlog hook session-start`` runs as Claude Code starts it
(the SessionStart JSON on stdin) in three folders: ``plain`` (a repository holding
nothing but ``.git``), ``config`` (the same, plus ``.claude/iflow-dev.local.md`` with two
ordinary settings) and ``bomb`` (a ``.claude/iflow-dev.local.md`` whose front matter is
the bomb: nine anchors, each nine of the one before, under
``memory_injection_max_chars``).  The resident ranker is off, so every run pays a cold
start: the slowest case.  A run gave the usual block when its context starts with the
block's title and holds as many lessons as the plain folder's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from memlog.tests.support import FIXTURES
from memlog.tests.test_untrusted import BOMB, bomb_project

BANK = "knowledge-bank-08a38d02"
HEADER = "## Engineering Memory (from knowledge bank)"
BUDGET_S = 2.5
#: a folder's own settings, read as usual (the YAML reader's import is paid here too)
SETTINGS = "---\nmemory_semantic_enabled: true\nmemory_hook_budget_ms: 2500\n---\n"


def environment(home: Path, user_home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLOG_")}
    env.update(MEMLOG_HOME=str(home), MEMLOG_RESIDENT_MINUTES="0", HOME=str(user_home),
               MEMLOG_EXTRACTION_PROVIDER="off")  # fmt: skip
    if "MEMLOG_CACHE_DIR" in os.environ:  # the local model's files, when kept elsewhere
        env["MEMLOG_CACHE_DIR"] = os.environ["MEMLOG_CACHE_DIR"]
    return env


def hook(folder: Path, env: dict[str, str]) -> tuple[float, int, str]:
    """One run: seconds, peak resident KiB, the context given."""
    payload = json.dumps({"session_id": f"bench-{uuid.uuid4()}", "cwd": str(folder),
                          "transcript_path": str(folder / "t.jsonl"),
                          "hook_event_name": "SessionStart", "source": "startup"})  # fmt: skip
    began = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "memlog", "hook", "session-start"], cwd=folder, env=env,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(payload.encode())
    process.stdin.close()
    out = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)  # reaped here: its own peak memory
    took = time.perf_counter() - began
    process.returncode, peak = os.waitstatus_to_exitcode(status), usage.ru_maxrss
    process.stdout.close()
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"] if out.strip() else ""
    return took, peak, context


def lessons(context: str) -> int:
    return sum(1 for line in context.splitlines() if line.startswith("### "))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--fixtures", type=Path, default=Path(FIXTURES))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch)
        env = environment(base / "home", base / "user")
        (base / "user").mkdir()
        subprocess.run([sys.executable, "-m", "memlog", "import", str(args.fixtures / BANK)],
                       env=env, cwd=base, check=True, capture_output=True)  # fmt: skip
        plain = base / "plain"
        (plain / ".git").mkdir(parents=True)
        config = base / "config"
        (config / ".git").mkdir(parents=True)
        (config / ".claude").mkdir()
        (config / ".claude" / "iflow-dev.local.md").write_text(SETTINGS)
        folders = {"plain": plain, "config": config, "bomb": bomb_project(base)}
        runs: dict[str, list[tuple[float, int, str]]] = {name: [] for name in folders}
        for _ in range(args.runs):
            for name, folder in folders.items():
                runs[name].append(hook(folder, env))
        usual = lessons(runs["plain"][0][2])
        bomb = folders["bomb"] / ".claude" / "iflow-dev.local.md"
        print(
            f"bomb: {bomb.stat().st_size} bytes ({len(BOMB)} of YAML); budget {BUDGET_S} s; "
            f"resident off; {args.runs} runs each"
        )
        medians = {}
        for name, done in runs.items():
            medians[name] = statistics.median(t for t, _, _ in done)
            peak = max(p for _, p, _ in done) / 1024
            given = sum(c.startswith(HEADER) and lessons(c) == usual for _, _, c in done)
            print(f"  {name:<6} median {medians[name]:.3f} s, slowest "
                  f"{max(t for t, _, _ in done):.3f} s, peak {peak:.0f} MiB, "
                  f"usual block ({usual} lessons) {given}/{len(done)}")  # fmt: skip
        print(f"  bomb / plain: {medians['bomb'] / medians['plain']:.2f}×, "
              f"bomb / config: {medians['bomb'] / medians['config']:.2f}×")  # fmt: skip


if __name__ == "__main__":
    main()
