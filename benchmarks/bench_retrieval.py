"""The retrieval benchmark: every candidate ranking on every label set, and defaults chosen
across sets.

    python benchmarks/bench_retrieval.py [--sets S …] [--cache DIR] [--json FILE]
                                         [--plateau 0.01] [--calibrate]

Label sets live in ``benchmarks/retrieval/sets/`` (their README says how
each was made): a corpus, queries (hook-shaped contexts or prompts) and
label files (``labels/<name>.jsonl``, grades 0/1/2).  Each query is ranked
as the hook and ``memlog search`` rank it (``retrieval/labelsets.py``,
``retrieval/rankers.py``); every candidate ranking scores every live entry,
read best first.

For every label file of every set: nDCG@10 with a bootstrap 95% interval
over queries, Recall@20, the difference to D3 with its paired interval,
the queries won and lost against D3, and judged@10, the share of a
ranking's first ten that carry a label (below 1 the figure is a lower
bound: unjudged entries count as irrelevant).  A set without labels says
so.  Then the fused recipe's weights are chosen by cross-validation, never
on the set they are scored on:

- **leave one set out**: for each set, the grid point best on the other
  sets (each set weighing the same) is scored on it;
- **leave one topic out** within a set (queries without topics: 6 folds);
- with ``--plateau D``, the plainest grid point within D of the best is
  taken instead of the best (no prominence, no neighbours, then the vector
  weight nearest the lexical one): a plain recipe on a plateau over a
  tuned peak.

One label file per set is used for the choice: its pooled labels when it
has them (``*-pooled``), else its only or first one.  ``--calibrate`` fits
the relevance floor's logistic model (``retrieval/relevance.py``) on every
judged (query, entry) pair and reports how it holds on each set left out.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent / "retrieval"))
import labelsets  # noqa: E402
import rankers  # noqa: E402

DEFAULT_CACHE = Path.home() / ".cache" / "memlog-bench-retrieval"
GRID = {
    "vector": (0.25, 0.5, 0.75, 1.0, 1.5, 2.0),
    "prominence": (0.0, 0.05),
    "neighbours": (0.0, 0.5, 1.0, 1.5),
    "lexical_signal": ("lexical", rankers.BEFORE, "fts5"),
}
FOLDS = 6
BASELINE = "d3"


@dataclass
class Judged:
    """A label file of a set with everything needed to score rankings on it."""

    labelset: labelsets.LabelSet
    label: str
    corpus: rankers.Corpus
    queries: list[labelsets.Query]
    signals: list[rankers.Signals]
    grades: list[dict[str, int]]

    @property
    def name(self) -> str:
        return f"{self.labelset.name} ({self.label})"

    @property
    def lists_zeros(self) -> bool:
        """Whether the labels say what was judged irrelevant (pooled labels do)."""
        return any(g == 0 for grades in self.grades for g in grades.values())

    def per_query(self, ranker: rankers.Ranker) -> np.ndarray:
        """nDCG@10, Recall@20 and judged@10 of every query."""
        rows = []
        for s, grades in zip(self.signals, self.grades, strict=True):
            top = rankers.ranked_ids(self.corpus, ranker(self.corpus, s), 20)
            rows.append((rankers.ndcg(top, grades), rankers.recall(top, grades),
                         rankers.judged(top, grades)))  # fmt: skip
        return np.array(rows)


# -- loading ------------------------------------------------------------------------------------


def load(sets: Sequence[labelsets.LabelSet], cache: Path) -> list[Judged]:
    found = []
    for labelset in sets:
        files = labelset.labels()
        queries = labelsets.queries(labelset)
        if not files:
            state = "pooled" if labelset.key_file.exists() else "not pooled yet (pool.py)"
            print(f"{labelset.name}: {len(queries)} {labelset.kind} queries, no labels yet: "
                  f"{state}, to be judged blind")  # fmt: skip
            continue
        corpus = rankers.prepare(labelset, cache)
        signals = rankers.signals(corpus, queries, cache)
        names = {(e.category, e.name): e.id for e in corpus.entries.values()}
        for label, path in files.items():
            graded = labelsets.read_labels(path, set(corpus.ids), names)
            kept = [(q, s) for q, s in zip(queries, signals, strict=True) if q.qid in graded]
            ordered = [q for q, _ in kept], [s for _, s in kept], [graded[q.qid] for q, _ in kept]
            found.append(Judged(labelset, label, corpus, *ordered))
    return found


# -- tables -------------------------------------------------------------------------------------


def table(judged: Judged) -> dict[str, object]:
    labels = sum(len(g) for g in judged.grades)
    relevant = sum(1 for g in judged.grades for v in g.values() if v > 0)
    print(f"\n{judged.name}: {len(judged.queries)} queries, {len(judged.corpus.ids)} entries, "
          f"{labels} labels ({relevant} relevant)\n")  # fmt: skip
    print(f"{'ranking':<34}{'nDCG@10':>8}  {'95% interval':<15}{'R@20':>6}  "
          f"{'vs d3':>6} {'95% interval':<17}{'W/L':>7}{'judged@10':>10}")  # fmt: skip
    base = judged.per_query(rankers.CANDIDATES[BASELINE])
    out: dict[str, object] = {}
    for name, ranker in rankers.CANDIDATES.items():
        rows = judged.per_query(ranker)
        if not judged.lists_zeros:
            rows[:, 2] = np.nan  # what was judged irrelevant is not known
        out[name] = row(name, rows, base)
    return out


def row(name: str, rows: np.ndarray, base: np.ndarray) -> dict[str, object]:
    ndcg, low_high = rows[:, 0], rankers.bootstrap(rows[:, 0])
    delta = rankers.paired_bootstrap(ndcg, base[:, 0])
    wins = int((ndcg > base[:, 0] + 1e-9).sum())
    losses = int((ndcg < base[:, 0] - 1e-9).sum())
    gain, judged = ndcg.mean() - base[:, 0].mean(), rows[:, 2].mean()
    print(f"{name[:33]:<34}{ndcg.mean():8.3f}  [{low_high[0]:.3f}, {low_high[1]:.3f}]"
          f"{rows[:, 1].mean():7.3f}  {gain:+6.3f} [{delta[0]:+.3f}, {delta[1]:+.3f}]"
          f"{wins:4d}/{losses:<3d}{judged:9.2f}")  # fmt: skip
    return {"ndcg@10": ndcg.mean(), "interval": low_high, "recall@20": rows[:, 1].mean(),
            "vs_d3": ndcg.mean() - base[:, 0].mean(), "vs_d3_interval": delta,
            "wins": wins, "losses": losses, "judged@10": rows[:, 2].mean()}  # fmt: skip


# -- cross-validation ---------------------------------------------------------------------------

Point = tuple[float, float, float, str]  # vector, prominence, neighbours, lexical signal


def grid() -> list[Point]:
    return list(itertools.product(*GRID.values()))  # type: ignore[arg-type]


def describe(point: Point) -> str:
    vector, prominence, neighbours, signal = point
    return f"lexical({signal}) 1, vector {vector}, prominence {prominence}, neighbours {neighbours}"


def plainness(point: Point) -> tuple[bool, int, bool, float, float]:
    """How far a grid point is from a plain recipe (smaller is plainer): the shipped lexical
    signal; fewest weights tuned (neither 0 nor the lexical weight, 1); no prominence;
    then the vector and neighbour weights nearest 1."""
    vector, prominence, neighbours, signal = point
    tuned = sum(w not in (0.0, 1.0) for w in (vector, prominence, neighbours))
    return (signal != "lexical", tuned, prominence != 0, abs(math.log(vector)),
            abs(neighbours - 1.0))  # fmt: skip


def scores(judged: Judged, points: list[Point]) -> np.ndarray:
    """nDCG@10 of every grid point on every query: points × queries."""
    return np.array(
        [judged.per_query(rankers.fused(1.0, v, p, n, s))[:, 0] for v, p, n, s in points]
    )


def choose(train: list[np.ndarray], points: list[Point], plateau: float | str) -> int:
    """The grid point best on the training folds, each fold weighing the same; with a
    plateau, the plainest within it of the best (``width``)."""
    means = np.mean([t.mean(axis=1) for t in train], axis=0)
    best = int(np.argmax(means))
    if plateau == 0:
        return best
    low = means[best] - width(train, best, plateau)
    near = [i for i in range(len(points)) if means[i] >= low]
    return min(near, key=lambda i: (plainness(points[i]), -means[i]))


def width(train: list[np.ndarray], best: int, plateau: float | str) -> float:
    """How far below the best a point may be and still be on the plateau: a number, or
    one standard error of the best point's mean (the sets weighing the same)."""
    if plateau != "se":
        return float(plateau)
    variances = [np.var(t[best], ddof=1) / t.shape[1] if t.shape[1] > 1 else 0.0 for t in train]
    return float(np.sqrt(np.sum(variances)) / len(train))


def leave_one_set_out(chosen: list[Judged], plateau: float | str) -> dict[str, object]:
    points = grid()
    tables = [scores(j, points) for j in chosen]
    out: dict[str, object] = {}
    print(f"\nleave one set out ({len(points)} grid points, plateau {plateau}):")
    if len(chosen) < 2:
        print("  needs labels on two sets at least")
        return out
    for n, judged in enumerate(chosen):
        train = [t for m, t in enumerate(tables) if m != n]
        pick = choose(train, points, plateau)
        held = tables[n][pick]
        base = judged.per_query(rankers.CANDIDATES[BASELINE])[:, 0]
        low, high = rankers.bootstrap(held)
        d_low, d_high = rankers.paired_bootstrap(held, base)
        print(f"  {judged.name}: {describe(points[pick])}\n    nDCG@10 {held.mean():.3f} "
              f"[{low:.3f}, {high:.3f}], d3 {base.mean():.3f}, difference [{d_low:+.3f}, "
              f"{d_high:+.3f}]")  # fmt: skip
        out[judged.name] = {"point": describe(points[pick]), "ndcg@10": held.mean(),
                            "interval": (low, high), "d3": base.mean(),
                            "difference_interval": (d_low, d_high)}  # fmt: skip
    everywhere = np.mean([t.mean(axis=1) for t in tables], axis=0)
    plain = points.index((1.0, 0.0, 0.0, "lexical"))
    best = describe(points[int(np.argmax(everywhere))])
    print(f"  on all sets at once (not cross-validated): best {best} {everywhere.max():.3f}; "
          f"plain 1:1 {everywhere[plain]:.3f}")  # fmt: skip
    pick = choose(tables, points, plateau)
    print(f"  chosen on all sets with this plateau (the default): {describe(points[pick])} "
          f"{everywhere[pick]:.3f}")  # fmt: skip
    out["on all sets"] = {"point": describe(points[pick]), "ndcg@10": everywhere[pick]}
    return out


def folds_of(queries: list[labelsets.Query]) -> list[np.ndarray]:
    topics = [q.topic for q in queries]
    if all(topics):
        return [np.flatnonzero([t == topic for t in topics]) for topic in dict.fromkeys(topics)]
    order = np.random.default_rng(0).permutation(len(queries))
    return [fold for fold in np.array_split(order, FOLDS) if fold.size]


def within_set(judged: Judged, plateau: float | str) -> dict[str, object]:
    points = grid()
    table_ = scores(judged, points)
    folds = folds_of(judged.queries)
    result = np.zeros(table_.shape[1])
    picks = []
    for fold in folds:
        rest = np.setdiff1d(np.arange(table_.shape[1]), fold)
        pick = choose([table_[:, rest]], points, plateau)
        result[fold] = table_[pick, fold]
        picks.append(describe(points[pick]))
    kind = "topic" if all(q.topic for q in judged.queries) else f"fold of {FOLDS}"
    low, high = rankers.bootstrap(result)
    print(f"  {judged.name}, leave one {kind} out: nDCG@10 {result.mean():.3f} "
          f"[{low:.3f}, {high:.3f}]")  # fmt: skip
    for pick, count in sorted({p: picks.count(p) for p in picks}.items(), key=lambda x: -x[1]):
        print(f"    chosen {count}×: {pick}")
    return {"ndcg@10": result.mean(), "interval": (low, high), "picks": picks}


def preferred(found: list[Judged]) -> list[Judged]:
    """One label file per set: its pooled labels when it has them."""
    by_set: dict[str, list[Judged]] = {}
    for judged in found:
        by_set.setdefault(judged.labelset.name, []).append(judged)
    return [next((j for j in js if j.label.endswith("-pooled")), js[0]) for js in by_set.values()]


# -- the relevance floor ------------------------------------------------------------------------


def calibrate(found: list[Judged]) -> dict[str, object]:
    """Fit the relevance model on the judged pairs, and hold each set out in turn."""
    import calibration  # noqa: PLC0415

    return calibration.report(found)


def plateau_of(text: str) -> float | str:
    return text if text == "se" else float(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="*", help="set names (default: every set)")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--plateau", type=plateau_of, default="se",
                        help="a width in nDCG@10, or 'se' (one standard error)")  # fmt: skip
    parser.add_argument("--calibrate", action="store_true")
    args = parser.parse_args()
    sets = ([labelsets.load_set(labelsets.SETS / s) for s in args.sets] if args.sets
            else labelsets.all_sets())  # fmt: skip
    found = load(sets, args.cache)
    figures: dict[str, object] = {j.name: table(j) for j in found}
    chosen = preferred(found)
    if chosen:
        figures["leave one set out"] = leave_one_set_out(chosen, args.plateau)
        print("\nwithin each set:")
        figures["within set"] = {j.name: within_set(j, args.plateau) for j in chosen}
    if args.calibrate and chosen:
        figures["relevance floor"] = calibrate(chosen)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1, default=float) + "\n")


if __name__ == "__main__":
    os.environ.setdefault("MEMLOG_KEYWORD_PROVIDER", "local")
    main()
