"""Does the ranking hold when a context reaches ``memlog search`` in another form?

    python benchmarks/retrieval/forms.py [--sets S …] [--cache DIR]

A context set's contexts written as other texts a caller might pass to
``memlog search`` (the labels stay those of the context):

- ``hook``: the text the hook makes (``slug: Title. prose``, ``Phase:`` and
  ``Files:`` lines), the benchmark's own;
- ``one line, prose``: ``slug: prose. Phase: p. Files: a b`` (D3's form, the
  whole prose);
- ``one line, first paragraph``: the D3 query itself (at most 100 words);
- ``whole spec, labelled``: ``slug:`` then the spec's markdown as written
  (headings, lists), then the ``Phase:`` and ``Files:`` lines;
- ``whole spec, no labels``: the slug, the spec, the phase and the files on
  lines of their own, no ``Phase:``/``Files:`` labels;
- ``prose alone``: the spec's prose, nothing else.

Each form is ranked by D3 (which ranks the text as given), the default fused
recipe, and its lexical and vector signals alone; nDCG@10 per form with the
share of the first ten that were judged (below 1 the figure is a lower
bound: the pool was made from the hook's form).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

from memlog.retrieval import spec_text

sys.path.insert(0, str(Path(__file__).resolve().parent))
import labelsets  # noqa: E402
import rankers  # noqa: E402

Row = dict[str, object]
FORMS: dict[str, Callable[[Row, labelsets.Query], str]] = {
    "hook": lambda row, query: query.text,
    "one line, prose": lambda row, query: (
        f"{row['slug']}: {spec_text.prose(str(row['spec']))}. Phase: {row['phase']}. "
        f"Files: {' '.join(sorted(map(str, row.get('changed_files') or [])))}"  # type: ignore[call-overload]
    ),
    "one line, first paragraph": lambda row, query: query.d3,
    "whole spec, labelled": lambda row, query: (
        f"{row['slug']}: {row['spec']}\nPhase: {row['phase']}\n"
        f"Files: {' '.join(sorted(map(str, row.get('changed_files') or [])))}"  # type: ignore[call-overload]
    ),
    "whole spec, no labels": lambda row, query: (
        f"{row['slug']}\n\n{row['spec']}\n\n{row['phase']}\n"
        f"{' '.join(sorted(map(str, row.get('changed_files') or [])))}"  # type: ignore[call-overload]
    ),
    "prose alone": lambda row, query: spec_text.prose(str(row["spec"])),
}
RANKINGS = ("d3", "fused", "lexical", "vector")


def run(labelset: labelsets.LabelSet, cache: Path) -> None:
    files = labelset.labels()
    label = next((n for n in files if n.endswith("-pooled")), None)
    rows = {str(r["qid"]): r for r in labelsets.read_jsonl(labelset.queries_file)}
    if label is None or labelset.kind != "context" or any("spec" not in r for r in rows.values()):
        print(f"{labelset.name}: no pooled labels of contexts given field by field")
        return
    corpus = rankers.prepare(labelset, cache)
    names = {(e.category, e.name): e.id for e in corpus.entries.values()}
    grades = labelsets.read_labels(files[label], set(corpus.ids), names)
    queries = [q for q in labelsets.queries(labelset) if q.qid in grades]
    print(f"\n{labelset.name} ({label}), {len(queries)} contexts: nDCG@10 (judged@10)\n")
    print(f"{'form':<28}" + "".join(f"{r:>16}" for r in RANKINGS))
    for form, make in FORMS.items():
        texts = [make(rows[q.qid], q) for q in queries]
        asked = [dataclasses.replace(q, text=t, d3=t) for q, t in zip(queries, texts, strict=True)]
        signals = rankers.signals(corpus, asked, cache)
        cells = []
        for name in RANKINGS:
            figures = []
            for query, signal in zip(asked, signals, strict=True):
                top = rankers.ranked_ids(corpus, rankers.CANDIDATES[name](corpus, signal), 10)
                figures.append((rankers.ndcg(top, grades[query.qid]),
                                rankers.judged(top, grades[query.qid])))  # fmt: skip
            ndcg, judged = np.mean(figures, axis=0)
            cells.append(f"{ndcg:.3f} ({judged:.2f})")
        print(f"{form:<28}" + "".join(f"{c:>16}" for c in cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="*", default=["s4-tentopics-150", "s2-iflow-6bb5ea25"])
    parser.add_argument(
        "--cache", type=Path, default=Path.home() / ".cache" / "memlog-bench-retrieval"
    )
    args = parser.parse_args()
    for name in args.sets:
        run(labelsets.load_set(labelsets.SETS / name), args.cache)


if __name__ == "__main__":
    os.environ.setdefault("MEMLOG_KEYWORD_PROVIDER", "local")
    main()
