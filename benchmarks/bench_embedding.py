"""Embedding throughput on the real knowledge bank: entries per second.

    python benchmarks/bench_embedding.py [--bank DIR] [--runs 3]

The knowledge bank (default ``tests/fixtures/knowledge-bank-08a38d02``,
265 real entries) is embedded with the bundled all-MiniLM-L6-v2 as memlog
embeds entries (name, description, reasoning and metadata lines):

* in process: ``LocalProvider.embed_batch`` over all entries (the core of
  every bulk path), and the same texts one at a time (a single capture);
* ``memlog import`` into a fresh home, against the same import with
  embedding unavailable (the difference is the embedding's share);
* ``memlog reembed --all`` on that home;
* ``memlog observe --json`` of the same entries as one batch (write-time
  embedding of a batch capture).

Each figure is the median of ``--runs``; CPU seconds (user + system) are
reported beside wall time, since other load on the machine slows the wall
clock but not the CPU the work needs.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

from memlog.api.capturing import import_files
from memlog.capture.embed import embedding_text
from memlog.embeddings.local import LocalProvider
from memlog.projections.sqlite_view import queries
from memlog.workspace import Workspace

REPO = Path(__file__).resolve().parents[1]
DEFAULT_BANK = REPO / "tests" / "fixtures" / "knowledge-bank-08a38d02"


def cpu() -> float:
    own, children = (
        resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(action) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    started, used = time.perf_counter(), cpu()
    action()
    return time.perf_counter() - started, cpu() - used


def memlog(home: Path, *args: str, provider: str = "local", stdin: bytes | None = None) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLOG_")}
    env |= {"MEMLOG_HOME": str(home), "MEMLOG_EMBEDDING_PROVIDER": provider}
    env["MEMLOG_KEYWORD_PROVIDER"] = "local"
    done = subprocess.run([sys.executable, "-m", "memlog", *args], env=env, input=stdin,
                          capture_output=True, check=False)  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"memlog {' '.join(args)} failed: {done.stderr.decode()}")


def one_by_one(provider: LocalProvider, texts: list[str]) -> None:
    for text in texts:
        provider.embed(text)


def report(name: str, count: int, runs: list[tuple[float, float]]) -> None:
    wall = statistics.median(r[0] for r in runs)
    used = statistics.median(r[1] for r in runs)
    print(f"  {name:<36}{count / wall:8.1f} entries/s  ({wall:6.2f} s wall, {used:6.2f} s cpu)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bank", type=Path, default=DEFAULT_BANK)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="memlog-bench-embedding-"))
    ws = Workspace.at(None, home=work / "texts")
    os.environ["MEMLOG_KEYWORD_PROVIDER"] = "off"
    import_files(Workspace.at(None, home=work / "texts"), [args.bank])
    entries = queries.entries(ws.home)
    texts = [embedding_text(e) for e in entries]
    provider = LocalProvider(cache_dir=work)
    provider.load()
    tokens = [len(t) for t in provider._model.tokenizer.encode_batch(texts)]  # type: ignore[union-attr]
    print(f"{len(texts)} entries, {statistics.mean(tokens):.0f} tokens on average "
          f"(median {statistics.median(tokens):.0f}, max {max(tokens)}); "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")  # fmt: skip
    batch = [timed(partial(provider.embed_batch, texts)) for _ in range(args.runs)]
    report("in process, one batch", len(texts), batch)
    single = [timed(partial(one_by_one, provider, texts)) for _ in range(args.runs)]
    report("in process, one at a time", len(texts), single)
    rows = [{"name": e.name, "description": e.description, "category": e.category} for e in entries]
    lines = "".join(json.dumps(row) + "\n" for row in rows).encode()
    imports, bare, reembeds, observes = [], [], [], []
    for n in range(args.runs):
        bank = str(args.bank)
        imports.append(timed(partial(memlog, work / f"i{n}", "import", bank)))
        bare.append(timed(partial(memlog, work / f"b{n}", "import", bank, provider="openai")))
        reembeds.append(timed(partial(memlog, work / f"i{n}", "reembed", "--all")))
        observes.append(
            timed(partial(memlog, work / f"o{n}", "observe", "--json", "-", stdin=lines))
        )
    report("memlog import (all of it)", len(texts), imports)
    embedding_only = [(a[0] - b[0], a[1] - b[1]) for a, b in zip(imports, bare, strict=True)]
    report("memlog import, embedding's share", len(texts), embedding_only)
    report("memlog reembed --all", len(texts), reembeds)
    report("memlog observe --json (one batch)", len(texts), observes)


if __name__ == "__main__":
    main()
