"""Why the lexical side ranks as it does: its parts compared one at a time, per query.

    python benchmarks/retrieval/lexical.py [--sets S …] [--labels NAME] [--cache DIR]
                                           [--per-query] [--json FILE]

The lexical signal alone is scored on every set that has labels (every
label file of a set, or ``--labels``), against the shipped one (the packed
index: BM25 over stemmed, identifier-split terms of name, description,
keywords, reasoning and metadata lines, of the query the hook asks for its
text).  Each variant changes one thing:

- **the tokenizer**: FTS5 as memory.db has it (``porter unicode61``) and
  without a stemmer (``unicode61``), both through SQLite; and in this
  module's BM25 (which reproduces the packed index exactly with the shipped
  settings): no identifier splitting, no stemming, numbers kept;
- **the boilerplate**: the metadata lines left out, or their ``Key:``
  labels left out, or the words of the bank's own bookkeeping (``feature``,
  ``observed``, ``source`` …) dropped from entries and queries;
- **the query**: D3's (slug, first paragraph, phase, files), prose cut to
  100 or 200 words, no title, no slug, the phase label kept, no path words,
  the paths' boilerplate words kept, each query term counted once (the
  packed index counts repeats), the first 64 distinct words only (as the
  FTS5 query takes them);
- **BM25's parameters**: k1 and b over a grid.

For each: mean nDCG@10 with its bootstrap 95% interval, Recall@20, and the
queries it wins and loses against the shipped signal (nDCG@10).
``--per-query`` also prints, query by query, the shipped signal beside
FTS5 with and without its stemmer.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from memlog.retrieval import spec_text
from memlog.retrieval.context import Feature, Signals, query_of

sys.path.insert(0, str(Path(__file__).resolve().parent))
import labelsets  # noqa: E402
import rankers  # noqa: E402
from bm25 import Recipe, bm25  # noqa: E402

# -- queries varied -----------------------------------------------------------------------------

QueryVariant = Callable[[labelsets.Query], str]


def hook_query(query: labelsets.Query) -> str:
    return query_of(query.text) or ""


def with_feature(change: Callable[[Feature], Feature], keep_phase: bool = False) -> QueryVariant:
    def build(query: labelsets.Query) -> str:
        if query.signals is None or query.signals.feature is None:
            return hook_query(query)
        signals = Signals(change(query.signals.feature), query.signals.files)
        text = query_of(signals.text("fused")) or ""
        return f"{text}. Phase: {signals.feature.phase}" if keep_phase else text  # type: ignore[union-attr]

    return build


def with_paths(raw: bool) -> QueryVariant:
    """The hook's query without its files' path words, or with every word of the paths
    (``src``, ``tests``, ``py`` … kept)."""

    def build(query: labelsets.Query) -> str:
        if query.signals is None or query.signals.feature is None:
            return hook_query(query)
        text = query_of(Signals(query.signals.feature, ()).text("fused")) or ""
        paths = " ".join(query.signals.files).replace("/", " ").replace(".", " ")
        return f"{text}. {paths}" if raw and paths else text

    return build


def prose_cut(words_kept: int) -> QueryVariant:
    return with_feature(
        lambda f: replace_feature(f, summary=spec_text.prose(f.summary, words_kept))
    )


def replace_feature(feature: Feature, **changes: str) -> Feature:
    fields = {name: getattr(feature, name) for name in Feature.__struct_fields__}
    return Feature(**{**fields, **changes})


QUERIES: dict[str, QueryVariant] = {
    "query: D3's (slug, first paragraph, phase, files)": lambda q: q.d3,
    "query: prose cut to 100 words": prose_cut(100),
    "query: prose cut to 200 words": prose_cut(200),
    "query: no title": with_feature(lambda f: replace_feature(f, title="")),
    "query: no slug words": with_feature(lambda f: replace_feature(f, slug="x")),
    "query: the phase label kept": with_feature(lambda f: f, keep_phase=True),
    "query: no path words": with_paths(raw=False),
    "query: path boilerplate kept (src, tests, py …)": with_paths(raw=True),
}


# -- the comparison -----------------------------------------------------------------------------


@dataclass
class Case:
    """One labelled query of one set, with its signals."""

    labelset: str
    corpus: rankers.Corpus
    query: labelsets.Query
    signals: rankers.Signals
    grades: dict[str, int]


def variants() -> dict[str, Callable[[Case], np.ndarray]]:
    base = Recipe()
    found: dict[str, Callable[[Case], np.ndarray]] = {
        "shipped: packed index": lambda c: c.signals.lexical,
        "same recipe, this module's BM25 (must equal the shipped)": lambda c: bm25(
            c.corpus.listed, hook_query(c.query), base
        ),
        "tokenizer: FTS5 porter unicode61 (memory.db)": lambda c: c.signals.fts5,
        "tokenizer: FTS5 unicode61, no stemmer": lambda c: c.signals.fts5_plain,
    }
    recipes = {
        "tokenizer: identifiers not split": replace(base, split=False),
        "tokenizer: no stemming": replace(base, stem=False),
        "tokenizer: numbers kept": replace(base, numbers=True),
        "tokenizer: function words kept": replace(base, stopwords=False),
        "boilerplate: metadata lines left out": replace(base, fields="no-metadata"),
        "boilerplate: metadata keys left out": replace(base, fields="metadata-values"),
        "boilerplate: bookkeeping words dropped": replace(base, bookkeeping=True),
        "query: identifiers' words apart (as before)": replace(base, groups=False),
        "query: repeats counted in full (as before)": replace(base, query_counts="repeats"),
        "query: both, the lexical signal as before": replace(
            base, groups=False, query_counts="repeats"
        ),
        "query: each term counted once": replace(base, query_counts="once"),
        "query: first 64 distinct terms (as FTS5 takes)": replace(base, first_words=64),
        "query: first 64 distinct terms, each once": replace(
            base, first_words=64, query_counts="once"
        ),
    }
    for name, recipe in recipes.items():
        found[name] = lambda c, r=recipe: bm25(c.corpus.listed, hook_query(c.query), r)  # type: ignore[misc]
    for name, variant in QUERIES.items():
        found[name] = lambda c, v=variant: bm25(c.corpus.listed, v(c.query), base)  # type: ignore[misc]
    for k1 in (0.6, 0.9, 1.2, 1.6, 2.0):
        for b in (0.3, 0.5, 0.75, 0.9):
            if (k1, b) != (1.2, 0.75):
                recipe = replace(base, k1=k1, b=b)
                found[f"bm25: k1 {k1}, b {b}"] = lambda c, r=recipe: bm25(
                    c.corpus.listed, hook_query(c.query), r
                )  # type: ignore[misc]
    return found


def figures(cases: list[Case], scores: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    ndcgs, recalls = [], []
    for case, score in zip(cases, scores, strict=True):
        top = rankers.ranked_ids(case.corpus, score, 20)
        ndcgs.append(rankers.ndcg(top, case.grades))
        recalls.append(rankers.recall(top, case.grades))
    return np.array(ndcgs), np.array(recalls)


def load_cases(
    sets: Iterable[labelsets.LabelSet], label: str | None, cache: Path
) -> dict[str, list[Case]]:
    found: dict[str, list[Case]] = {}
    for labelset in sets:
        files = labelset.labels()
        chosen = {label: files[label]} if label in files else ({} if label else files)
        if not chosen:
            continue
        corpus = rankers.prepare(labelset, cache)
        queries = labelsets.queries(labelset)
        sigs = rankers.signals(corpus, queries, cache)
        names = {(e.category, e.name): e.id for e in corpus.entries.values()}
        for name, path in chosen.items():
            grades = labelsets.read_labels(path, set(corpus.ids), names)
            found[f"{labelset.name} ({name})"] = [
                Case(labelset.name, corpus, q, s, grades[q.qid])
                for q, s in zip(queries, sigs, strict=True)
                if q.qid in grades
            ]
    return found


def report(name: str, cases: list[Case], per_query: bool) -> dict[str, object]:
    print(f"\n{name}: {len(cases)} queries\n")
    print(f"{'variant':<58}{'nDCG@10':>8}  {'95% interval':<15}{'R@20':>6}{'wins':>6}{'losses':>7}")
    shipped = None
    out: dict[str, object] = {}
    for label, scorer in variants().items():
        ndcg, rec = figures(cases, [scorer(c) for c in cases])
        shipped = ndcg if shipped is None else shipped
        low, high = rankers.bootstrap(ndcg)
        wins, losses = int((ndcg > shipped + 1e-9).sum()), int((ndcg < shipped - 1e-9).sum())
        print(f"{label[:57]:<58}{ndcg.mean():8.3f}  [{low:.3f}, {high:.3f}] {rec.mean():6.3f}"
              f"{wins:6d}{losses:7d}")  # fmt: skip
        out[label] = {"ndcg@10": ndcg.mean(), "interval": [low, high], "recall@20": rec.mean(),
                      "wins": wins, "losses": losses, "per_query": ndcg.tolist()}  # fmt: skip
    if per_query:
        print(f"\n{'query':<40}{'packed':>8}{'fts5':>8}{'fts5 plain':>11}")
        table = [figures(cases, [getattr(c.signals, s) for c in cases])[0]
                 for s in ("lexical", "fts5", "fts5_plain")]  # fmt: skip
        for n, case in enumerate(cases):
            print(
                f"{case.query.qid[:39]:<40}{table[0][n]:8.3f}{table[1][n]:8.3f}{table[2][n]:11.3f}"
            )
    return out


def short(name: str) -> str:
    """``s1-iflow-08a38d02 (s1-reading)`` → ``s1 reading``; a set's pooled labels: its name."""
    kind = name.split(" (")[-1].rstrip(")").split("-", 1)[-1]
    return name.split("-")[0] + ("" if kind == "pooled" else f" {kind}")


def summary(out: dict[str, dict[str, object]]) -> None:
    """Every variant on every set at once: its nDCG@10 minus the shipped signal's."""
    names = list(out)
    print("\nevery set: nDCG@10 of the variant minus the shipped signal's (shipped: its own)")
    print(f"{'variant':<58}" + "".join(f"{short(n):>12}" for n in names))
    shipped = {n: out[n]["shipped: packed index"]["ndcg@10"] for n in names}  # type: ignore[index]
    for label in next(iter(out.values())):
        cells = []
        for n in names:
            value = out[n][label]["ndcg@10"]  # type: ignore[index]
            cells.append(value if label.startswith("shipped") else value - shipped[n])  # type: ignore[operator]
        row = "".join(f"{c:12.3f}" if label.startswith("shipped") else f"{c:+12.3f}" for c in cells)
        print(f"{label[:57]:<58}{row}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="*", help="set names (default: every set with labels)")
    parser.add_argument("--labels", help="only this label file of each set (e.g. s1-reading)")
    parser.add_argument(
        "--cache", type=Path, default=Path.home() / ".cache" / "memlog-bench-retrieval"
    )
    parser.add_argument("--per-query", action="store_true")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    sets = (
        [labelsets.load_set(labelsets.SETS / s) for s in args.sets]
        if args.sets
        else labelsets.all_sets()
    )
    cases = load_cases(sets, args.labels, args.cache)
    if not cases:
        print("no set has labels yet: nothing to compare")
        return
    out = {name: report(name, found, args.per_query) for name, found in cases.items()}
    summary(out)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1, default=float) + "\n")


if __name__ == "__main__":
    os.environ.setdefault("MEMLOG_KEYWORD_PROVIDER", "local")
    main()
