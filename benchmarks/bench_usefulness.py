"""Usefulness in the ranking: the six label sets with simulated histories of use.

    python benchmarks/bench_usefulness.py [--seeds 5] [--json FILE]

A lesson's usefulness (``retrieval/plain.py: usefulness``) is its rate of use
(sessions that applied it over those judged), drawn toward the home's rate by
five sessions' worth of it, less that rate, over its spread; it joins the fused
score with ``memory_usefulness_weight``.  With no history it is left out and
the ranking is exactly the default's.

Histories are simulated on each label set (``retrieval/sets``), never from the
query being scored: for a query held out, each *other* query of its set is a
session that is given the first ``GIVEN`` entries of the default ranking for
it (the hook's block holds 11 to 17), and applies each lesson it is given with
probability ``APPLY`` by its grade for that query (directly useful 0.6,
somewhat 0.3, judged not useful or not judged 0.05: sessions ignore good
advice and stumble on unrelated lessons, and judges err); every session is
judged.  ``--rounds`` says how many sessions each other query makes (the
history's length); each figure is the mean over ``--seeds`` draws.

The weight is chosen as the other weights were (``bench_retrieval.py``): by
leaving one set out, the plainest weight within one standard error of the best
on the other five (no usefulness is the plainest, then the weight nearest 1),
at the middle history length; chosen on all six at once it is the default.
Reported: nDCG@10 of each set with no history (the default ranking, to the bit)
and with histories of each length, each against no usefulness by a paired 95%
bootstrap interval over queries.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent / "retrieval"))
import bench_retrieval  # noqa: E402
import labelsets  # noqa: E402
import rankers  # noqa: E402

from memlog.projections.sqlite_view.plain import History  # noqa: E402
from memlog.retrieval import plain  # noqa: E402

GIVEN = 15
APPLY = {2: 0.6, 1: 0.3, 0: 0.05}
WEIGHTS = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0)
ROUNDS = (1, 3, 10)


def base_scores(judged: bench_retrieval.Judged) -> list[np.ndarray]:
    """The default ranking's final scores for every query of a set."""
    ranker = rankers.fused()
    return [np.asarray(ranker(judged.corpus, s), dtype=np.float64) for s in judged.signals]


def with_use(scores: np.ndarray, useful: list[float] | None, weight: float) -> np.ndarray:
    """``scores`` with usefulness added at ``weight`` (unchanged without a history)."""
    if useful is None or weight == 0:
        return scores
    return scores + weight * np.asarray(useful)


def simulate(
    judged: bench_retrieval.Judged,
    base: list[np.ndarray],
    weight: float,
    rounds: int,
    rng: np.random.Generator,
    left_out: int = -1,
) -> History | None:
    """A history of ``rounds`` sessions of every query of the set (but ``left_out``): in
    each round every query's session is given the first ``GIVEN`` of its ranking with the
    history so far (at ``weight``) and applies each with the chance its grade gives."""
    size = len(judged.corpus.ids)
    applied = np.zeros(size, dtype=np.int64)
    seen = np.zeros(size, dtype=np.int64)
    history: History | None = None
    for _ in range(rounds):
        useful = plain.usefulness(history, size)
        for other, (scores, grades) in enumerate(zip(base, judged.grades, strict=True)):
            if other == left_out:
                continue
            given = rankers.order_of(with_use(scores, useful, weight))[:GIVEN]
            chance = np.array([APPLY[grades.get(judged.corpus.ids[i], 0)] for i in given])
            applied[given] += rng.random(len(given)) < chance
            seen[given] += 1
        places = np.flatnonzero(seen).tolist()
        history = History(places, applied[places].tolist(), seen[places].tolist(),
                          int(applied.sum()), int(seen.sum()))  # fmt: skip
    return history


def ndcgs(
    judged: bench_retrieval.Judged,
    base: list[np.ndarray],
    rounds: int,
    seeds: int,
    others_only: bool,
) -> np.ndarray:
    """nDCG@10 of every weight on every query (weights × queries, the mean over draws),
    each query ranked with the history simulated for that weight: of every query, its own
    included, or (``others_only``) of the others alone."""
    size = len(judged.corpus.ids)
    found = np.zeros((len(WEIGHTS), len(base)))
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        for w, weight in enumerate(WEIGHTS):
            shared = None if others_only else simulate(judged, base, weight, rounds, rng)
            for q, (scores, grades) in enumerate(zip(base, judged.grades, strict=True)):
                history = simulate(judged, base, weight, rounds, rng, q) if others_only else shared
                final = with_use(scores, plain.usefulness(history, size), weight)
                top = rankers.ranked_ids(judged.corpus, final, 20)
                found[w, q] += rankers.ndcg(top, grades) / seeds
    return found


def plainness(index: int) -> tuple[bool, float]:
    weight = WEIGHTS[index]
    return weight != 0.0, abs(math.log(weight)) if weight else 0.0


def choose(train: list[np.ndarray]) -> int:
    """The plainest weight within one standard error of the best on ``train``."""
    means = np.mean([t.mean(axis=1) for t in train], axis=0)
    best = int(np.argmax(means))
    low = means[best] - bench_retrieval.width(train, best, "se")
    return min((i for i in range(len(WEIGHTS)) if means[i] >= low), key=plainness)


HISTORIES = {
    "own": "every query worked on again (its own sessions among the others')",
    "others": "the other queries' sessions alone",
}


def report_weights(
    found: list[bench_retrieval.Judged], tables: dict[str, dict[int, list[np.ndarray]]]
) -> dict[str, object]:
    print(f"\nnDCG@10 by weight {WEIGHTS}:")
    out: dict[str, object] = {}
    for kind, by_rounds in tables.items():
        for r in ROUNDS:
            for judged, table in zip(found, by_rounds[r], strict=True):
                means = " ".join(f"{m:.3f}" for m in table.mean(axis=1))
                print(f"  {kind:>6}, {r:>2} sessions per query, {judged.labelset.name}: {means}")
                out[f"{kind} {r} {judged.name}"] = table.mean(axis=1).tolist()
    return out


def choose_across(
    found: list[bench_retrieval.Judged], tables: dict[str, dict[int, list[np.ndarray]]]
) -> dict[str, object]:
    """Leave one set out, each set's tables of both histories (middle length) training."""
    middle = ROUNDS[len(ROUNDS) // 2]
    kinds = list(tables)
    print(f"\nleave one set out (histories of {middle} sessions per query, both kinds):")
    picks: dict[str, object] = {}
    for n, judged in enumerate(found):
        train = [tables[k][middle][m] for k in kinds for m in range(len(found)) if m != n]
        pick = choose(train)
        cells = []
        for kind in kinds:
            held = tables[kind][middle][n]
            low, high = rankers.paired_bootstrap(held[pick], held[0])
            cells.append(f"{kind}: {held[pick].mean():.3f} against {held[0].mean():.3f}, "
                         f"[{low:+.3f}, {high:+.3f}]")  # fmt: skip
        picks[judged.name] = WEIGHTS[pick]
        print(f"  {judged.name}: weight {WEIGHTS[pick]}; " + "; ".join(cells))
    default = choose([tables[k][middle][m] for k in kinds for m in range(len(found))])
    print(f"  chosen on all six: weight {WEIGHTS[default]}")
    return {"leave one set out": picks, "default": WEIGHTS[default], "index": default}


def as_history_grows(
    found: list[bench_retrieval.Judged],
    bases: list[list[np.ndarray]],
    tables: dict[str, dict[int, list[np.ndarray]]],
    default: int,
) -> dict[str, object]:
    print(f"\nthe default weight {WEIGHTS[default]} as history grows (nDCG@10; the paired "
          "difference against no usefulness [95%]):")  # fmt: skip
    rows: dict[str, object] = {}
    for n, judged in enumerate(found):
        none = np.array([rankers.ndcg(rankers.ranked_ids(judged.corpus, s, 20), g)
                         for s, g in zip(bases[n], judged.grades, strict=True)])  # fmt: skip
        print(f"  {judged.labelset.name}: no history {none.mean():.3f}")
        row: dict[str, object] = {"no history": none.mean()}
        for kind, by_rounds in tables.items():
            cells = []
            for r in ROUNDS:
                held = by_rounds[r][n]
                low, high = rankers.paired_bootstrap(held[default], held[0])
                cells.append(f"{r}× {held[default].mean():.3f} [{low:+.3f}, {high:+.3f}]")
                row[f"{kind}, {r} sessions per query"] = (held[default].mean(), (low, high))
            print(f"    {HISTORIES[kind]}: " + "; ".join(cells))
        rows[judged.name] = row
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--cache", type=Path, default=bench_retrieval.DEFAULT_CACHE)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    found = bench_retrieval.preferred(bench_retrieval.load(labelsets.all_sets(), args.cache))
    bases = [base_scores(j) for j in found]
    tables = {
        kind: {r: [ndcgs(j, b, r, args.seeds, kind == "others")
                   for j, b in zip(found, bases, strict=True)] for r in ROUNDS}
        for kind in HISTORIES
    }  # fmt: skip
    figures: dict[str, object] = {"weights": WEIGHTS, "rounds": ROUNDS, "given": GIVEN,
                                  "apply": APPLY, "seeds": args.seeds}  # fmt: skip
    figures["by weight"] = report_weights(found, tables)
    chosen = choose_across(found, tables)
    figures["choice"] = chosen
    figures["as history grows"] = as_history_grows(found, bases, tables, int(chosen["index"]))  # type: ignore[call-overload]
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1, default=float) + "\n")


if __name__ == "__main__":
    os.environ.setdefault("MEMLOG_KEYWORD_PROVIDER", "local")
    main()
