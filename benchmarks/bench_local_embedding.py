"""Time the local embedding provider: cold start, warm query, batch throughput.

    python benchmarks/bench_local_embedding.py [--runs 7] [--model-path DIR]

Cold: a fresh interpreter imports the provider, finds and maps the model
(verification stamp already written) and embeds one query; the wall time
includes process start and is compared with ``python -c "import numpy"``
measured in the same run.  Warm: one 64-token query in a loaded process.
Batch: 500 sentences through ``embed_batch``.  Every figure is a median.
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from memlog.embeddings.local import LocalProvider

WORDS = (
    "the memory hook reads entries from the log and ranks them by vector keyword and "
    "prominence weights before the session starts parser database writer index query "
    "retry backoff token budget file path component test fixture deploy review"
).split()

COLD = """
import sys
from memlog.embeddings.local import LocalProvider
LocalProvider(sys.argv[1] or None, cache_dir=__import__("pathlib").Path(sys.argv[2])).embed(
    "which parser handles quoted hyphenated tokens in FTS5 queries?"
)
"""


def median_seconds(action: Callable[[], object], runs: int) -> float:
    """The median wall time of ``runs`` calls of ``action``."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def run_python(*args: str) -> None:
    """Run a fresh interpreter; fail loudly if it fails."""
    subprocess.run([sys.executable, *args], check=True)


def query_of(provider: LocalProvider, tokens: int) -> str:
    """A query that tokenises to exactly ``tokens`` tokens, [CLS] and [SEP] included."""
    provider.load()
    assert provider._model is not None
    tokenizer = provider._model.tokenizer
    words = [WORDS[i % len(WORDS)] for i in range(tokens)]
    while len(tokenizer.encode(" ".join(words)).ids) > tokens:
        words.pop()
    return " ".join(words)


def sentences(count: int, seed: int = 7) -> list[str]:
    """``count`` sentences of 8 to 30 words, the same every run."""
    rng = random.Random(seed)
    return [" ".join(rng.choices(WORDS, k=rng.randint(8, 30))) + "." for _ in range(count)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="runs per cold/warm figure")
    parser.add_argument("--batch-runs", type=int, default=3, help="runs of the 500 batch")
    parser.add_argument("--model-path", default="", help="explicit model directory")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        provider = LocalProvider(args.model_path or None, cache_dir=Path(cache))
        verify = median_seconds(lambda: run_python("-c", COLD, args.model_path, cache), 1)
        report_cold(args, cache, verify)
        report_warm(provider, args.runs)
        report_batch(provider, args.batch_runs)


def report_cold(args: argparse.Namespace, cache: str, first: float) -> None:
    cold = median_seconds(lambda: run_python("-c", COLD, args.model_path, cache), args.runs)
    numpy = median_seconds(lambda: run_python("-c", "import numpy"), args.runs)
    print(f"cold, first run (hashes the files): {first * 1000:7.1f} ms")
    print(f"cold load + one query (stamped):   {cold * 1000:7.1f} ms")
    print(f"python -c 'import numpy':          {numpy * 1000:7.1f} ms")
    print(f"ratio cold / numpy import:         {cold / numpy:7.2f}")


def report_warm(provider: LocalProvider, runs: int) -> None:
    query = query_of(provider, 64)
    provider.embed(query)
    warm = median_seconds(lambda: provider.embed(query), max(runs, 21))
    print(f"warm query, 64 tokens:             {warm * 1000:7.1f} ms")


def report_batch(provider: LocalProvider, runs: int) -> None:
    texts = sentences(500)
    batch = median_seconds(lambda: provider.embed_batch(texts), runs)
    print(f"batch of 500 sentences:            {500 / batch:7.1f} sentences/s")


if __name__ == "__main__":
    main()
