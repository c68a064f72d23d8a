"""Extraction: the SessionEnd hook's cost, reading a long transcript, tokens per session.

1. ``memlog hook session-end`` (the installed console script, as Claude Code
   runs it) against ``python -c pass`` in the same run, fresh processes,
   interleaved, with a pause so the detached extractor each hook starts
   (here with extraction off, so it leaves at once) does not overlap the
   next measurement.  Median wall time and the ratio.
2. Reading and truncating a synthetic 5,000-line transcript (streamed
   assistant blocks with thinking, text and tool use, tool results of a few
   hundred to a few thousand characters, some side-chain and meta lines):
   ``prepare`` = read from offset 0 + Puffin's truncation + the prompt.
3. Tokens and estimated cost of extracting each transcript fixture (the
   public ones and our own) and the synthetic one, at Claude Haiku 4.5 prices ($1 / $5
   per million tokens).  Input tokens are estimated as characters / 3 (the
   estimate the daily budget uses: conservative for English and code); output
   as 300 tokens (an answer of about eight items).  With ``claude-cli`` the
   CLI adds its own short system blocks and the StructuredOutput tool
   definition (about 150 tokens).

    python benchmarks/bench_extraction.py --repeats 30
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from memlog.capture.extraction import prompts
from memlog.capture.extraction.session import Request, prepare
from memlog.llm.base import cost_micros
from memlog.projections.fold import Session

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SHARED = REPO / "tests" / "fixtures" / "claude-code-transcripts"
OURS = REPO / "tests" / "capture" / "extraction" / "fixtures"
TYPICAL_ANSWER_TOKENS = 300
WORDS = ("parser importer cache header column encoding retry session branch config schema "
         "migration index vector token budget worker lock deadline transcript").split()  # fmt: skip


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


BASE = {
    "isSidechain": False, "userType": "external", "entrypoint": "cli", "cwd": "/w/shop",
    "sessionId": "bench", "version": "2.1.197", "gitBranch": "feature/x",
}  # fmt: skip


def user(uid: str, parent: str | None, content: object, **more: object) -> dict[str, object]:
    message = {"role": "user", "content": content}
    return {**BASE, "type": "user", "uuid": uid, "parentUuid": parent, "message": message, **more}


def assistant(uid: str, parent: str, mid: str, block: dict[str, object]) -> dict[str, object]:
    message = {"id": mid, "role": "assistant", "model": "claude-sonnet-5", "content": [block]}
    return {**BASE, "type": "assistant", "uuid": uid, "parentUuid": parent, "message": message}


def blocks(rng: random.Random, tool_id: str) -> list[dict[str, object]]:
    command = {"command": f"grep -rn {rng.choice(WORDS)} .", "description": "look"}
    return [
        {"type": "thinking", "thinking": sentence(rng, 40)},
        {"type": "text", "text": sentence(rng, rng.randint(10, 120))},
        {"type": "tool_use", "id": tool_id, "name": "Bash", "input": command},
    ]


def synthetic_transcript(path: Path, lines: int = 5000, seed: int = 7) -> None:
    """A long session in Claude Code 2.1's shape, ``lines`` lines."""
    rng = random.Random(seed)
    out: list[dict[str, object]] = []
    parent: str | None = None
    n = 0
    while len(out) < lines:
        n += 1
        out.append(user(f"u{n}", parent, sentence(rng, rng.randint(8, 60))))
        parent = f"u{n}"
        for step in range(rng.randint(1, 4)):
            tool_id = f"t{n}_{step}"
            for k, block in enumerate(blocks(rng, tool_id)):
                out.append(assistant(f"a{n}_{step}_{k}", parent, f"msg_{n}_{step}", block))
                parent = f"a{n}_{step}_{k}"
            result = "\n".join(sentence(rng, 12) for _ in range(rng.randint(3, 40)))
            content = [{"type": "tool_result", "tool_use_id": tool_id, "content": result}]
            out.append(user(f"r{n}_{step}", parent, content, toolUseResult={"stdout": result}))
            parent = f"r{n}_{step}"
        if n % 25 == 0:  # a meta line and a side chain now and then
            out.append(user(f"m{n}", parent, "<local-command-caveat>x</local-command-caveat>",
                            isMeta=True))  # fmt: skip
            side = assistant(f"s{n}", parent, f"side{n}", {"type": "text", "text": "side"})
            out.append({**side, "isSidechain": True})
    path.write_text("".join(json.dumps(line) + "\n" for line in out[:lines]))


def wall(command: list[str], env: dict[str, str], stdin: bytes, cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run(command, input=stdin, env=env, cwd=cwd, capture_output=True, check=True)
    return time.perf_counter() - started


def hook_ratio(work: Path, transcript: Path, repeats: int, pause: float) -> None:
    memlog = shutil.which("memlog", path=str(Path(sys.executable).parent)) or "memlog"
    home = work / "home"
    env = {**os.environ, "MEMLOG_HOME": str(home), "MEMLOG_EXTRACTION_PROVIDER": "off"}
    env.pop("MEMLOG_EXTRACTING", None)
    project = work / "shop"
    (project / ".git").mkdir(parents=True)
    (project / ".git" / "HEAD").write_text("ref: refs/heads/feature/x\n")
    runs: dict[str, list[float]] = {"python -c pass": [], "memlog hook session-end": []}
    for n in range(repeats + 2):
        payload = json.dumps({"session_id": f"s{n}", "transcript_path": str(transcript),
                              "cwd": str(project), "hook_event_name": "SessionEnd",
                              "reason": "other"}).encode()  # fmt: skip
        floor = wall([sys.executable, "-c", "pass"], env, b"", work)
        hook = wall([memlog, "hook", "session-end"], env, payload, project)
        if n >= 2:  # the first two warm the page cache
            runs["python -c pass"].append(floor)
            runs["memlog hook session-end"].append(hook)
        time.sleep(pause)
    floor_ms = statistics.median(runs["python -c pass"]) * 1000
    hook_ms = statistics.median(runs["memlog hook session-end"]) * 1000
    print(f"1. session-end hook, {repeats} fresh processes each, interleaved (median):")
    print(f"   python -c pass            {floor_ms:7.1f} ms")
    print(f"   memlog hook session-end   {hook_ms:7.1f} ms   ratio {hook_ms / floor_ms:.2f}x"
          f"   (max {max(runs['memlog hook session-end']) * 1000:.0f} ms)")  # fmt: skip


def parse_only(transcript: Path) -> float:
    """The baseline: read the file and ``json.loads`` every line, nothing else."""
    started = time.perf_counter()
    for line in transcript.read_bytes().splitlines():
        json.loads(line)
    return time.perf_counter() - started


def reading(transcript: Path, repeats: int) -> None:
    session = Session(id="bench", transcript=str(transcript), project="shop", branch="feature/x")
    times, baseline = [], []
    for _ in range(repeats):
        baseline.append(parse_only(transcript))
        started = time.perf_counter()
        request = prepare(session)
        times.append(time.perf_counter() - started)
    assert isinstance(request, Request)
    count = sum(1 for _ in open(transcript))
    size = transcript.stat().st_size / 1e6
    turns, chars = len(request.transcript.turns), len(request.prompt)
    ours, floor = statistics.median(times) * 1000, statistics.median(baseline) * 1000
    print(f"2. read + truncate a {count}-line transcript ({size:.1f} MB), {len(times)} runs: "
          f"median {ours:.0f} ms ({turns} turns, prompt {chars} characters); "
          f"json.loads of every line alone: {floor:.0f} ms (ratio {ours / floor:.2f})")  # fmt: skip


def costs(paths: list[Path]) -> None:
    print("3. extraction cost per session at Haiku 4.5 prices (input estimated as chars/3):")
    print(f"   {'transcript':36} {'turns':>5} {'tokens in':>9} {'typical':>9} {'worst':>9}")
    for path in paths:
        request = prepare(Session(id=path.stem, transcript=str(path), project="shop"))
        if not isinstance(request, Request):
            print(f"   {path.name:36} skipped: {request.reason}")
            continue
        typical = cost_micros("claude-haiku-4-5", request.tokens, TYPICAL_ANSWER_TOKENS) / 1e6
        worst = cost_micros("claude-haiku-4-5", request.tokens, prompts.ANSWER_TOKENS) / 1e6
        print(f"   {path.name:36} {len(request.transcript.turns):5} {request.tokens:9} "
              f"${typical:8.4f} ${worst:8.4f}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--pause", type=float, default=0.5, help="seconds between hook runs")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="memlog-bench-extract-"))
    try:
        long = work / "long.jsonl"
        synthetic_transcript(long)
        hook_ratio(work, long, args.repeats, args.pause)
        reading(long, max(5, args.repeats // 3))
        fixtures = sorted(SHARED.glob("*.jsonl")) + sorted(OURS.glob("*.jsonl"))
        costs([*fixtures, long])
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
