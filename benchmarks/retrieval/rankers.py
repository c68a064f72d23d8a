"""Every ranking the benchmark compares, its signals, and the figures it is judged by.

A corpus is imported into a memlog home with the configured embedding model
(``local``, all-MiniLM-L6-v2, unless ``MEMLOG_EMBEDDING_PROVIDER`` says
otherwise).  Every query's signals are read through memlog's own view, over
every live entry of the injected categories (the hook's candidates):

- ``lexical``: the packed BM25 index (stemmed, identifier-split; a query's
  identifiers read whole, its repeats saturated) of the query the hook asks
  for its text (``query_of``);
- ``vector``: cosine of that query's embedding with each entry's;
- ``fts5``: FTS5 bm25 (``porter unicode61``, memory.db's own table) of the same query;
- ``fts5_plain``: FTS5 bm25 with ``unicode61`` and no stemmer, built aside from the
  same columns (the tokenizer before any stemming or identifier splitting);
- ``fts5_d3`` / ``vector_d3``: the D3 query's FTS5 bm25 and cosine (``memory_ranking: d3``).

Rankings score every candidate and are read best first (no category
balance).  nDCG@10 takes the grade as gain (``grade / log2(rank + 1)``),
Recall@20 counts entries of grade ≥ 1.
"""

from __future__ import annotations

import hashlib
import math
import sqlite3
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from memlog.api.capturing import import_files
from memlog.config import Config
from memlog.home import Home
from memlog.projections.fold import Entry
from memlog.projections.sqlite_view.reading import Snapshot, fts_query
from memlog.retrieval import fusion, ranking
from memlog.retrieval.context import query_of
from memlog.vocabulary import KB_CATEGORIES
from memlog.workspace import Workspace

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bm25 import Recipe, bm25  # noqa: E402
from labelsets import LabelSet, Query, corpus_files  # noqa: E402

Floats = np.ndarray
POOL_DEPTH = 20


@dataclass
class Corpus:
    """A set's corpus as memlog holds it: the candidates and what ranks them."""

    home: Path
    ws: Workspace
    ids: list[str]
    categories: list[str]
    #: observation counts, confidence levels, days, recall counts (``ranking.score``'s)
    columns: tuple[Floats, list[str], Floats, Floats]
    parts: tuple[Floats, Floats, Floats, Floats]
    prominence: Floats
    neighbours: np.ndarray | None
    entries: dict[str, Entry]

    @property
    def listed(self) -> list[Entry]:
        """The candidates' entries in candidate order (one list, so tokens are kept once)."""
        if not hasattr(self, "_listed"):
            self._listed = [self.entries[i] for i in self.ids]
        return self._listed


@dataclass
class Signals:
    """One query's raw signals over the corpus's candidates."""

    query: str
    lexical: Floats
    vector: Floats
    fts5: Floats
    fts5_plain: Floats
    fts5_d3: Floats
    vector_d3: Floats
    #: the lexical variants pooled (``LEXICAL_VARIANTS``), by name
    variants: dict[str, Floats]


# -- corpus and signals -------------------------------------------------------------------------


def corpus_tag(labelset: LabelSet) -> str:
    digest = hashlib.sha256()
    for path in corpus_files(labelset.corpus):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return f"{labelset.corpus.name}-{digest.hexdigest()[:12]}"


def prepare(labelset: LabelSet, cache: Path) -> Corpus:
    """The corpus imported once into ``cache`` (reused while its files are unchanged)."""
    home = cache / corpus_tag(labelset)
    ws = Workspace.at(None, home=home)
    if not (home / "memory.db").exists():
        started = time.perf_counter()
        import_files(ws, corpus_files(labelset.corpus))
        took = time.perf_counter() - started
        print(f"imported {labelset.corpus} in {took:.1f} s", file=sys.stderr)
    ws.catch_up()
    with Snapshot(Home(home)) as view:
        found = view.candidates(KB_CATEGORIES, datetime.now(UTC))
        columns = (found.observation_count, found.confidence, found.days, found.recall_count)
        parts = ranking.prominence_parts(*columns)
        neighbours = view.neighbours(found.ids)
        entries = {e.id: e for e in view.entries(found.ids)}
    prominence = (parts[0] + parts[1] + parts[2] + parts[3]) / 4.0
    return Corpus(
        home, ws, found.ids, found.categories, columns, parts, prominence, neighbours, entries
    )  # fmt: skip


def embed(corpus: Corpus, texts: Sequence[str], cache: Path) -> dict[str, np.ndarray]:
    """Query vectors of ``texts``, kept in ``cache`` by the model and the text."""
    space = corpus.ws.space
    store = cache / f"queries-{space.provider}-{space.model.replace('/', '_')}.npz"
    known = dict(np.load(store)) if store.exists() else {}
    key = {t: hashlib.sha256(t.encode()).hexdigest() for t in texts}
    missing = sorted({t for t in texts if key[t] not in known})
    if missing:
        provider = corpus.ws.provider()
        try:
            for text, vector in zip(missing, provider.embed_batch(missing, "query"), strict=True):
                known[key[text]] = np.asarray(vector, dtype=np.float32)
        finally:
            provider.close()
        store.parent.mkdir(parents=True, exist_ok=True)
        np.savez(store, **known)
    return {t: known[key[t]] for t in texts}


def plain_fts(home: Path) -> sqlite3.Connection:
    """An FTS5 table of memory.db's columns with ``unicode61`` and no stemmer, rowids kept."""
    db = sqlite3.connect(":memory:")
    db.execute("ATTACH DATABASE ? AS view", (f"file:{home / 'memory.db'}?mode=ro",))
    db.execute(
        "CREATE VIRTUAL TABLE plain USING fts5(name, description, keywords, reasoning, "
        "tokenize='unicode61 remove_diacritics 2')"
    )
    db.execute(
        "INSERT INTO plain(rowid, name, description, keywords, reasoning) SELECT rowid, name, "
        "description, keywords, reasoning || ' ' || details FROM view.entries WHERE status = 'live'"
    )
    return db


def bm25_of(db: sqlite3.Connection, table: str, text: str, by_rowid: dict[int, int]) -> Floats:
    scores = np.zeros(len(by_rowid), dtype=np.float64)
    expression = fts_query(text)
    if expression is None:
        return scores
    sql = f"SELECT rowid, -bm25({table}) FROM {table} WHERE {table} MATCH ?"
    rows = db.execute(sql, (expression,))
    for rowid, score in rows:
        if rowid in by_rowid:
            scores[by_rowid[rowid]] = max(float(score), 0.0)
    return scores


def signals(corpus: Corpus, queries: list[Query], cache: Path) -> list[Signals]:
    """Every signal of every query (the query the hook asks for its text, and D3's)."""
    asked = [query_of(q.text) or "" for q in queries]
    vectors = embed(corpus, [t for t in asked + [q.d3 for q in queries] if t], cache)
    zeros = np.zeros(len(corpus.ids))
    found = []
    plain = plain_fts(corpus.home)
    with Snapshot(Home(corpus.home)) as view:
        where = {i: n for n, i in enumerate(corpus.ids)}
        rowids = view.rowid_positions(corpus.ids)

        def cosine(text: str) -> Floats:
            return view.cosines(corpus.ws.space, vectors[text], where)[0] if text else zeros

        for query, text in zip(queries, asked, strict=True):
            lexical = view.lexical(text, corpus.ids) if text else zeros
            found.append(
                Signals(
                    query=text,
                    lexical=np.asarray(lexical),
                    vector=cosine(text),
                    fts5=view.bm25(text, rowids),
                    fts5_plain=bm25_of(plain, "plain", text, rowids),
                    fts5_d3=view.bm25(query.d3, rowids),
                    vector_d3=cosine(query.d3),
                    variants={n: bm25(corpus.listed, text, r) for n, r in LEXICAL_VARIANTS.items()},
                )
            )
    plain.close()
    return found


# -- rankings -----------------------------------------------------------------------------------

Ranker = Callable[[Corpus, Signals], Floats]


def d3(corpus: Corpus, s: Signals) -> Floats:
    """D3 as shipped: its query, FTS5 bm25, cosine and prominence, weights 0.5 / 0.2 / 0.3."""
    config = Config()
    weights = ranking.Weights(
        config.memory_vector_weight, config.memory_keyword_weight, config.memory_prominence_weight
    )
    return ranking.score(s.vector_d3, s.fts5_d3, *corpus.columns, weights).final


def fused(
    lexical: float | None = None,
    vector: float | None = None,
    prominence: float | None = None,
    neighbours: float | None = None,
    lexical_signal: str = "lexical",
) -> Ranker:
    """The fused recipe with these weights (the configured defaults for those not given)."""
    shipped = fusion.weights_of(Config())
    weights = fusion.FusionWeights(
        shipped.lexical if lexical is None else lexical,
        shipped.vector if vector is None else vector,
        shipped.prominence if prominence is None else prominence,
        shipped.neighbours if neighbours is None else neighbours,
    )

    def rank(corpus: Corpus, s: Signals) -> Floats:
        lex = (
            s.variants[lexical_signal]
            if lexical_signal in s.variants
            else getattr(s, lexical_signal)
        )
        return fusion.fuse(lex, s.vector, corpus.prominence, corpus.neighbours, weights).final

    return rank


def alone(name: str) -> Ranker:
    return lambda corpus, s: getattr(s, name)


def variant(name: str) -> Ranker:
    return lambda corpus, s: s.variants[name]


#: the lexical signal before a query's identifiers were read whole and its repeats saturated
BEFORE = "lexical as before (words apart, repeats)"

#: lexical signals varied one part at a time (``lexical.py``) whose first 20 are pooled too
LEXICAL_VARIANTS = {
    "lexical, metadata keys left out": Recipe(fields="metadata-values"),
    "lexical, query terms once": Recipe(query_counts="once"),
    "lexical, no stemming": Recipe(stem=False),
    "lexical, identifiers not split": Recipe(split=False),
    "lexical, identifier words apart": Recipe(groups=False),
    "lexical, repeats counted": Recipe(query_counts="repeats"),
    BEFORE: Recipe(groups=False, query_counts="repeats"),
}


#: the candidates compared on every set; each one's top 20 was pooled for judging (those
#: added since, below, only where ``pool.py --extra`` pooled them)
CANDIDATES: dict[str, Ranker] = {
    "d3": d3,
    "fused": fused(),
    "lexical": alone("lexical"),
    "vector": alone("vector"),
    "fts5": alone("fts5"),
    "fts5-plain": alone("fts5_plain"),
    "fused as before (vector 0.25, prominence 0.05)": fused(1.0, 0.25, 0.05, 1.0, BEFORE),
    "z-1:1": fused(1.0, 1.0, 0.0, 0.0),
    "z-1:1+neighbours": fused(1.0, 1.0, 0.0, 1.0),
    "z-1:1+neighbours, lexical as before": fused(1.0, 1.0, 0.0, 1.0, BEFORE),
    "fused, vector 1, prominence 0.05": fused(1.0, 1.0, 0.05, 1.0),
    "z-1:1 fts5+neighbours": fused(1.0, 1.0, 0.0, 1.0, "fts5"),
    **{name: variant(name) for name in LEXICAL_VARIANTS},
}


# -- metrics ------------------------------------------------------------------------------------


def order_of(scores: Floats) -> np.ndarray:
    return np.argsort(-np.asarray(scores), kind="stable")  # ties: id order, as memlog's selection


def ndcg(top: Sequence[str], grades: dict[str, int], k: int = 10) -> float:
    gains = [grades.get(i, 0) for i in top[:k]]
    dcg = sum(g / math.log2(n + 2) for n, g in enumerate(gains))
    ideal = sorted(grades.values(), reverse=True)[:k]
    best = sum(g / math.log2(n + 2) for n, g in enumerate(ideal))
    return dcg / best if best else 0.0


def recall(top: Sequence[str], grades: dict[str, int], k: int = 20) -> float:
    relevant = {i for i, g in grades.items() if g > 0}
    return len(relevant & set(top[:k])) / len(relevant) if relevant else 0.0


def judged(top: Sequence[str], grades: dict[str, int], k: int = 10) -> float:
    """The share of the first ``k`` that carry a label (0 included): below 1, unjudged
    entries count as irrelevant and the figure is a lower bound."""
    return sum(1 for i in top[:k] if i in grades) / k


def ranked_ids(corpus: Corpus, scores: Floats, depth: int | None = None) -> list[str]:
    order = order_of(scores)
    return [corpus.ids[i] for i in (order if depth is None else order[:depth])]


def bootstrap(values: Sequence[float], rounds: int = 10_000, seed: int = 0) -> tuple[float, float]:
    """The 95% percentile interval of the mean, queries resampled."""
    data = np.asarray(values, dtype=np.float64)
    if data.size == 0:
        return (math.nan, math.nan)
    picks = np.random.default_rng(seed).integers(0, data.size, size=(rounds, data.size))
    means = data[picks].mean(axis=1)
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def paired_bootstrap(
    ours: Sequence[float], theirs: Sequence[float], rounds: int = 10_000, seed: int = 0
) -> tuple[float, float]:
    """The 95% interval of the mean difference ``ours − theirs``, queries resampled."""
    return bootstrap(np.asarray(ours) - np.asarray(theirs), rounds, seed)
