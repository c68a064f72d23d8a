"""The retrieval benchmark: how well each ranking puts the relevant memories first.

    python benchmarks/bench_retrieval.py [--bank DIR] [--features DIR] [--qrels FILE]
                                         [--home DIR] [--json FILE]

Corpus: a knowledge bank (default ``../shared/fixtures/knowledge-bank-08a38d02``,
265 real entries) imported into a fresh memlog home with the configured
embedding model (``local``, all-MiniLM-L6-v2, unless ``MEMLOG_EMBEDDING_PROVIDER``
says otherwise).  Queries: one per feature folder named in the qrels
(``../shared/fixtures/iflow-features-08a38d02/<qid>/``), built by memlog's own
context code as the hook builds them for an active feature: the D3 query
(``slug: first paragraph. Phase: phase``) and the default one (slug words,
spec title and prose).  Labels: ``benchmarks/retrieval/qrels.jsonl`` (grades
1/2, everything else 0; see ``benchmarks/retrieval/LABELLING.md``).  Any other
qrels file of the same shape can be given, e.g. a held-out set.

Every ranking scores all live entries and is read best first (no category
balance).  nDCG@10 uses the grade as gain (``grade / log2(rank + 1)``),
Recall@20 counts entries of grade ≥ 1.  Rankings with weights chosen on the
labels are reported cross-validated: leave-one-query-out and 6-fold (the
grid is searched on the other queries, the held-out query is scored with the
weights they chose), beside the figure of the defaults.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

import numpy as np

from memlog.api.capturing import import_files
from memlog.config import Config
from memlog.projections.sqlite_view.reading import Candidates, Snapshot
from memlog.retrieval import fusion, ranking, spec_text
from memlog.retrieval.context import Signals, context_query, feature_of
from memlog.vocabulary import KB_CATEGORIES
from memlog.workspace import Workspace

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO.parent / "shared" / "fixtures"
DEFAULT_BANK = FIXTURES / "knowledge-bank-08a38d02"
DEFAULT_FEATURES = FIXTURES / "iflow-features-08a38d02"
DEFAULT_QRELS = REPO / "benchmarks" / "retrieval" / "qrels.jsonl"
#: words of spec prose tried by the cross-validation (the default is spec_text.PROSE_WORDS)
PROSE_CHOICES = (100, 200, 300)
GRID = {
    "vector": (0.25, 0.5, 1.0),
    "prominence": (0.0, 0.05, 0.1, 0.2),
    "neighbours": (0.0, 0.25, 0.5, 1.0),
}
FOLDS = 6

Floats = np.ndarray


class Query(NamedTuple):
    qid: str
    d3: str  # the D3 query, as memory_ranking: d3 builds it
    fused: dict[int, str]  # the default query with this many words of prose


class Signal(NamedTuple):
    fts_d3: Floats  # FTS5 bm25 of the D3 query
    vector_d3: Floats  # cosine with the D3 query's vector
    lexical: dict[int, Floats]  # packed-index BM25 of the default query
    vector: dict[int, Floats]  # cosine with the default query's vector


# -- data ---------------------------------------------------------------------------------------


def load_qrels(path: Path) -> dict[str, list[dict[str, object]]]:
    found: dict[str, list[dict[str, object]]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            found.setdefault(str(row["qid"]), []).append(row)
    return found


def resolve(
    rows: list[dict[str, object]], ids: set[str], names: dict[tuple[str, str], str]
) -> dict[str, int]:
    """Graded ids; a label whose id memlog's parser gives otherwise (inline HTML comments
    are dropped from descriptions) is found by category and name."""
    grades: dict[str, int] = {}
    for row in rows:
        entry = str(row["id"])
        if entry not in ids:
            entry = names.get((str(row.get("category")), str(row.get("entry_name"))), "")
        if entry:
            grades[entry] = max(int(row["grade"]), grades.get(entry, 0))  # type: ignore[call-overload]
    return grades


def build_queries(features: Path, qids: list[str]) -> list[Query]:
    queries = []
    for qid in qids:
        feature = feature_of(features / qid)
        text = (features / qid / "spec.md").read_text(encoding="utf-8", errors="replace")
        variants = {}
        for words in PROSE_CHOICES:
            shorter = feature.__class__(
                feature.slug, feature.phase, feature.description, feature.title,
                spec_text.prose(text, words),
            )  # fmt: skip
            variants[words] = context_query(Signals(shorter, ())) or ""
        queries.append(Query(qid, Signals(feature, ()).query or "", variants))
    return queries


def prepare_home(home: Path, bank: Path) -> Workspace:
    ws = Workspace.at(None, home=home)
    if not (home / "memory.db").exists():
        started = time.perf_counter()
        import_files(ws, [bank])
        print(f"imported {bank} in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    ws.catch_up()
    return ws


# -- signals ------------------------------------------------------------------------------------


def signals(
    ws: Workspace, queries: list[Query]
) -> tuple[Candidates, Floats, np.ndarray | None, list[Signal]]:
    provider = ws.provider()
    texts = [q.d3 for q in queries] + [q.fused[w] for q in queries for w in PROSE_CHOICES]
    vectors = iter(provider.embed_batch(texts, "query"))
    d3_vectors = [next(vectors) for _ in queries]
    found = []
    with Snapshot(ws.home) as view:
        candidates = view.candidates(KB_CATEGORIES, datetime.now(UTC))
        where = candidates.positions()
        days = candidates.days
        parts = ranking.prominence_parts(
            candidates.observation_count, candidates.confidence, days, candidates.recall_count
        )
        neighbours = view.neighbours(candidates.ids)
        for query, d3_vector in zip(queries, d3_vectors, strict=True):
            lexical, vector = {}, {}
            for words in PROSE_CHOICES:
                lexical[words] = view.lexical(query.fused[words], candidates.ids)
                vector[words] = view.cosines(ws.space, next(vectors), where)[0]
            fts = view.bm25(query.d3, view.rowid_positions(candidates.ids))
            found.append(Signal(fts, view.cosines(ws.space, d3_vector, where)[0], lexical, vector))
    prominence = (parts[0] + parts[1] + parts[2] + parts[3]) / 4.0
    return candidates, prominence, neighbours, found


# -- metrics ------------------------------------------------------------------------------------


def ndcg(order: np.ndarray, ids: list[str], grades: dict[str, int], k: int = 10) -> float:
    gains = [grades.get(ids[i], 0) for i in order[:k]]
    dcg = sum(g / math.log2(n + 2) for n, g in enumerate(gains))
    ideal = sorted(grades.values(), reverse=True)[:k]
    best = sum(g / math.log2(n + 2) for n, g in enumerate(ideal))
    return dcg / best if best else 0.0


def recall(order: np.ndarray, ids: list[str], grades: dict[str, int], k: int = 20) -> float:
    relevant = {i for i, g in grades.items() if g > 0}
    return len(relevant & {ids[i] for i in order[:k]}) / len(relevant) if relevant else 0.0


def measure(scores: Floats, ids: list[str], grades: dict[str, int]) -> tuple[float, float]:
    order = np.argsort(-scores, kind="stable")  # ties: id order, as memlog's selection
    return ndcg(order, ids, grades), recall(order, ids, grades)


# -- rankings -----------------------------------------------------------------------------------

Ranker = Callable[[int], Floats]  # query number -> a score per candidate


def rankings(
    candidates: Candidates, prominence: Floats, neighbours: np.ndarray | None, sig: list[Signal]
) -> dict[str, Ranker]:
    config = Config()
    words = spec_text.PROSE_WORDS
    d3w = ranking.Weights(
        config.memory_vector_weight, config.memory_keyword_weight, config.memory_prominence_weight
    )
    defaults = fusion.weights_of(config)
    parts = (
        candidates.observation_count, candidates.confidence,
        candidates.days, candidates.recall_count,
    )  # fmt: skip

    def d3(vector: Floats, keyword: Floats) -> Floats:
        return ranking.score(vector, keyword, *parts, d3w).final

    def fused(n: int, weights: fusion.FusionWeights = defaults, w: int = words) -> Floats:
        s = sig[n]
        return fusion.fuse(s.lexical[w], s.vector[w], prominence, neighbours, weights).final

    return {
        "d3 (as shipped: D3 query, FTS5)": lambda n: d3(sig[n].vector_d3, sig[n].fts_d3),
        "d3, default query": lambda n: d3(sig[n].vector[words], sig[n].lexical[words]),
        "fused (defaults)": fused,
        "fused without neighbours": lambda n: fused(n, defaults._replace(neighbours=0.0)),
        "fused without prominence": lambda n: fused(n, defaults._replace(prominence=0.0)),
        "alone: lexical (packed BM25)": lambda n: sig[n].lexical[words],
        "alone: vector (cosine)": lambda n: sig[n].vector[words],
        "alone: prominence": lambda n: prominence,
        "alone: FTS5 bm25, D3 query": lambda n: sig[n].fts_d3,
        "alone: vector, D3 query": lambda n: sig[n].vector_d3,
        "alone: neighbours of lexical": lambda n: fusion.neighbour_means(
            fusion.zscores(sig[n].lexical[words], len(prominence)), neighbours
        ),
    }


def grid_table(
    candidates: Candidates, prominence: Floats, neighbours: np.ndarray | None,
    sig: list[Signal], grades: list[dict[str, int]],
) -> tuple[list[tuple[int, fusion.FusionWeights]], np.ndarray]:  # fmt: skip
    """nDCG@10 and Recall@20 of every grid point (prose words × weights) on every query."""
    points = [
        (w, fusion.FusionWeights(1.0, v, p, nb))
        for w, v, p, nb in itertools.product(
            PROSE_CHOICES, GRID["vector"], GRID["prominence"], GRID["neighbours"]
        )
    ]
    table = np.zeros((len(points), len(sig), 2))
    for g, (w, weights) in enumerate(points):
        for n, s in enumerate(sig):
            final = fusion.fuse(s.lexical[w], s.vector[w], prominence, neighbours, weights).final
            table[g, n] = measure(final, candidates.ids, grades[n])
    return points, table


def cross_validated(table: np.ndarray, folds: list[np.ndarray]) -> tuple[np.ndarray, list[int]]:
    """Per-query figures when each fold is scored with the grid point best on the others."""
    result = np.zeros(table.shape[1:])
    chosen = []
    for fold in folds:
        rest = np.setdiff1d(np.arange(table.shape[1]), fold)
        best = int(np.argmax(table[:, rest, 0].mean(axis=1)))
        result[fold] = table[best, fold]
        chosen.append(best)
    return result, chosen


# -- main ---------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bank", type=Path, default=DEFAULT_BANK)
    parser.add_argument("--features", type=Path, default=DEFAULT_FEATURES)
    parser.add_argument("--qrels", type=Path, default=DEFAULT_QRELS)
    parser.add_argument("--home", type=Path, help="reuse this memlog home (imported once)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="memlog-bench-retrieval-") as scratch:
        home = args.home or Path(scratch) / "home"
        ws = prepare_home(home, args.bank)
        qrels = load_qrels(args.qrels)
        qids = [q for q in qrels if (args.features / q).is_dir()]
        queries = build_queries(args.features, qids)
        candidates, prominence, neighbours, sig = signals(ws, queries)
        known = set(candidates.ids)
        with Snapshot(ws.home) as view:
            entries = view.entries(candidates.ids)
        names = {(e.category, e.name): e.id for e in entries}
        grades = [resolve(qrels[q], known, names) for q in qids]
        report(candidates, prominence, neighbours, sig, grades, qids, args.json)


def report(
    candidates: Candidates, prominence: Floats, neighbours: np.ndarray | None,
    sig: list[Signal], grades: list[dict[str, int]], qids: list[str], out: Path | None,
) -> None:  # fmt: skip
    labels = sum(len(g) for g in grades)
    print(f"{len(qids)} queries, {len(candidates.ids)} entries, {labels} labels\n")
    figures: dict[str, object] = {}
    print(f"{'ranking':<40}{'nDCG@10':>9}{'R@20':>8}")
    for name, ranker in rankings(candidates, prominence, neighbours, sig).items():
        per = np.array([measure(ranker(n), candidates.ids, grades[n]) for n in range(len(qids))])
        figures[name] = {"ndcg@10": per[:, 0].mean(), "recall@20": per[:, 1].mean()}
        print(f"{name:<40}{per[:, 0].mean():9.3f}{per[:, 1].mean():8.3f}")
    points, table = grid_table(candidates, prominence, neighbours, sig, grades)
    loo, _ = cross_validated(table, [np.array([n]) for n in range(len(qids))])
    order = np.random.default_rng(0).permutation(len(qids))
    kfold, picks = cross_validated(table, np.array_split(order, FOLDS))
    best = int(np.argmax(table[:, :, 0].mean(axis=1)))
    print(f"\nfused, weights and prose length chosen on the other queries ({len(points)} points):")
    print(f"{'  leave-one-query-out':<40}{loo[:, 0].mean():9.3f}{loo[:, 1].mean():8.3f}")
    print(f"{f'  {FOLDS}-fold':<40}{kfold[:, 0].mean():9.3f}{kfold[:, 1].mean():8.3f}")
    print(f"  best on all queries (not cross-validated): {points[best]} "
          f"{table[best, :, 0].mean():.3f}")  # fmt: skip
    for pick in picks:
        print(f"  a fold chose {points[pick]}")
    figures["fused, leave-one-query-out"] = {
        "ndcg@10": loo[:, 0].mean(),
        "recall@20": loo[:, 1].mean(),
    }
    figures[f"fused, {FOLDS}-fold"] = {
        "ndcg@10": kfold[:, 0].mean(),
        "recall@20": kfold[:, 1].mean(),
    }
    if out is not None:
        out.write_text(json.dumps(figures, indent=2, default=float) + "\n")


if __name__ == "__main__":
    os.environ.setdefault("MEMLOG_KEYWORD_PROVIDER", "local")
    main()
