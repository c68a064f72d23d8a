"""A label set ranked the way a user's memlog ranks it: through the command line.

    python benchmarks/retrieval/through_cli.py SET [SET …] [--labels NAME] [--home DIR]

For each set, the corpus is imported into a scratch home with ``memlog
import`` (whose catch-up embeds it with the configured model, the local one
by default; ``memlog reembed`` then has nothing left to do), and every query
is ranked with ``memlog search QUERY --json``: a context as the hook-shaped
text the hook makes of it, a prompt as typed.  The first ten results are
scored against the set's labels (nDCG@10, Recall@20 from a second search
of 20) and compared, query by query, with the benchmark's own ``fused``
ranking (``rankers.py``), which must choose the same entries in the same
order: one ranking for one text.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import labelsets  # noqa: E402
import rankers  # noqa: E402


def memlog(home: Path, *args: str) -> str:
    """Run the memlog next to this interpreter (as installed) in ``home``; its stdout."""
    command = shutil.which("memlog", path=str(Path(sys.executable).parent)) or "memlog"
    env = {**os.environ, "MEMLOG_HOME": str(home)}
    done = subprocess.run(
        [command, *args], env=env, capture_output=True, text=True, check=True, cwd=home.parent
    )
    return done.stdout


def searched(home: Path, text: str, limit: int) -> list[str]:
    """The ids ``memlog search`` gives for ``text``, best first."""
    found = json.loads(memlog(home, "search", text, "--json", "--limit", str(limit)))
    return [str(r["id"]) for r in found]


def run(labelset: labelsets.LabelSet, label: str | None, home: Path, cache: Path) -> None:
    files = labelset.labels()
    name = label or next((n for n in files if n.endswith("-pooled")), next(iter(files), ""))
    if name not in files:
        print(f"{labelset.name}: no labels {name!r}")
        return
    memlog(home, "import", *map(str, labelsets.corpus_files(labelset.corpus)))
    left = json.loads(memlog(home, "reembed", "--json"))
    queries = labelsets.queries(labelset)
    corpus = rankers.prepare(labelset, cache)
    names = {(e.category, e.name): e.id for e in corpus.entries.values()}
    grades = labelsets.read_labels(files[name], set(corpus.ids), names)
    signals = rankers.signals(corpus, queries, cache)
    ndcg, recall, same = [], [], 0
    for query, signal in zip(queries, signals, strict=True):
        if query.qid not in grades:
            continue
        top = searched(home, query.text, 20)
        ndcg.append(rankers.ndcg(top[:10], grades[query.qid]))
        recall.append(rankers.recall(top, grades[query.qid]))
        ours = rankers.ranked_ids(corpus, rankers.CANDIDATES["fused"](corpus, signal), 10)
        same += ours == top[:10]
    low, high = rankers.bootstrap(ndcg)
    print(f"{labelset.name} ({name}), {len(ndcg)} queries through `memlog search --json` "
          f"({left['model']}, {left['embedded']} left to embed after import): nDCG@10 "
          f"{np.mean(ndcg):.3f} [{low:.3f}, {high:.3f}], R@20 {np.mean(recall):.3f}; "
          f"the benchmark's fused ranking chose the same ten, in order, for {same}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sets", nargs="+")
    parser.add_argument("--labels", help="label file name (default: the set's pooled labels)")
    parser.add_argument("--home", type=Path, help="scratch folder (default: a temporary one)")
    parser.add_argument(
        "--cache", type=Path, default=Path.home() / ".cache" / "memlog-bench-retrieval"
    )
    args = parser.parse_args()
    for name in args.sets:
        labelset = labelsets.load_set(labelsets.SETS / name)
        with tempfile.TemporaryDirectory(prefix="memlog-cli-", dir=args.home) as scratch:
            run(labelset, args.labels, Path(scratch) / "home", args.cache)


if __name__ == "__main__":
    main()
