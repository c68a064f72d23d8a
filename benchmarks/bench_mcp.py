"""How soon ``memlog serve-mcp`` answers, as Claude Code starts it.

    python benchmarks/bench_mcp.py [--repeats 21] [--venv DIR]

memlog is installed as users install it, not editable (``pip install .`` into
``--venv``, made when it does not hold a memlog yet).  Each round starts
``memlog serve-mcp`` in a fresh process with an empty home and a project
folder, writes ``initialize`` at once, and times, from just before the
process is started:

* the ``initialize`` response (the goal: within 0.3 s, so the tools are there
  for a session's first turn);
* the ``tools/list`` response that follows it;
* the first ``tools/call`` (``list_memories``), which waits for the workspace
  and the tools' modules, loaded meanwhile in a thread;

interleaved, in the same rounds, with ``python -c pass`` of the same
interpreter (the floor of any Python process).  Medians, and the ratio of the
``initialize`` median to the floor's.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GOAL_SECONDS = 0.3
INIT = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "bench", "version": "0"}},
}  # fmt: skip
AFTER = [
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
     "params": {"name": "list_memories", "arguments": {}}},
]  # fmt: skip


def installed(venv: Path) -> Path:
    """``venv``'s memlog, installed from this checkout (not editable) when missing."""
    memlog = venv / "bin" / "memlog"
    if not memlog.exists():
        system = shutil.which("python3") or sys.executable  # the README's way: the system's pip
        subprocess.run([system, "-m", "venv", "--without-pip", str(venv)], check=True)
        pip = [system, "-m", "pip", "--python", str(venv / "bin" / "python")]
        subprocess.run([*pip, "install", "-q", str(REPO)], check=True)
    return memlog


def line(message: dict[str, object]) -> bytes:
    return json.dumps(message).encode() + b"\n"


def one_server(memlog: Path, home: Path, project: Path) -> tuple[float, float, float]:
    """Seconds from the start to the answers of initialize, tools/list and the first call."""
    env = {"MEMLOG_HOME": str(home), "MEMLOG_RESIDENT_MINUTES": "0", "PATH": "/usr/bin:/bin"}
    started = time.perf_counter()
    proc = subprocess.Popen(
        [str(memlog), "serve-mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, cwd=project, env=env,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(line(INIT))
    proc.stdin.flush()
    times = [_answered(proc.stdout, 1, started)]
    proc.stdin.write(b"".join(line(m) for m in AFTER))
    proc.stdin.flush()
    times += [_answered(proc.stdout, 2, started), _answered(proc.stdout, 3, started)]
    proc.stdin.close()
    proc.wait(timeout=60)
    return times[0], times[1], times[2]


def _answered(stdout: object, request_id: int, started: float) -> float:
    reply = json.loads(stdout.readline())  # type: ignore[attr-defined]
    assert reply.get("id") == request_id and "result" in reply, reply
    return time.perf_counter() - started


def floor(python: Path) -> float:
    started = time.perf_counter()
    subprocess.run([str(python), "-c", "pass"], check=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument(
        "--venv", type=Path, default=Path(tempfile.gettempdir()) / "memlog-bench-venv"
    )
    args = parser.parse_args()
    memlog = installed(args.venv)
    python = args.venv / "bin" / "python"
    rows: dict[str, list[float]] = {"initialize": [], "tools/list": [], "first tools/call": []}
    floors: list[float] = []
    with tempfile.TemporaryDirectory() as scratch:
        for n in range(args.repeats + 1):
            home, project = Path(scratch) / f"home-{n}", Path(scratch) / f"project-{n}"
            (project / ".git").mkdir(parents=True)
            times = one_server(memlog, home, project)
            floor_seconds = floor(python)
            if n == 0:
                continue  # the first round warms the page cache
            for name, seconds in zip(rows, times, strict=True):
                rows[name].append(seconds)
            floors.append(floor_seconds)
    base = statistics.median(floors)
    print(f"memlog serve-mcp, {args.repeats} rounds, memlog installed in {args.venv}")
    print(f"{'answer':<18} {'median':>9} {'p90':>9} {'× python -c pass':>17}")
    for name, values in [*rows.items(), ("python -c pass", floors)]:
        median = statistics.median(values)
        p90 = sorted(values)[int(0.9 * (len(values) - 1))]
        print(f"{name:<18} {median * 1000:>7.1f}ms {p90 * 1000:>7.1f}ms {median / base:>16.2f}×")
    initialize = statistics.median(rows["initialize"])
    verdict = "met" if initialize <= GOAL_SECONDS else "NOT met"
    print(f"goal: initialize within {GOAL_SECONDS * 1000:.0f} ms: {verdict}")


if __name__ == "__main__":
    main()
