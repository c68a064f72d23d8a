"""A BM25 of the benchmark's own, to vary one part of the lexical signal at a time.

With the default ``Recipe`` it gives the packed lexical index's scores (the
same terms: ``memlog.projections.terms``; the same weights: k1 1.2, b 0.75,
idf ``ln(1 + (n − df + 0.5) / (df + 0.5))``, each query term counted as often
as it occurs), which ``lexical.py`` checks on every set.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from memlog.projections.fold import Entry
from memlog.projections.sqlite_view.indexes import indexed_text
from memlog.projections.terms import STOPWORDS, _stemmer

_WORD = re.compile(r"[A-Za-z0-9]+")
#: words of the knowledge bank's own bookkeeping (metadata keys and their usual values)
BOOKKEEPING = frozenset(
    "feature features observed source used confidence cost instead benefit keywords "
    "promoted iter iteration iterations".split()
)


# -- a BM25 of our own, to vary one thing at a time ---------------------------------------------


@dataclass(frozen=True)
class Recipe:
    """How text becomes terms and terms become scores (the packed index's by default)."""

    split: bool = True  # camelCase and letter/digit parts too
    stem: bool = True
    numbers: bool = False
    stopwords: bool = True  # drop English function words
    bookkeeping: bool = False  # drop the bank's bookkeeping words too
    fields: str = "all"  # "all", "no-metadata", "metadata-values"
    k1: float = 1.2
    b: float = 0.75
    query_counts: str = "repeats"  # "repeats" or "once"
    first_words: int = 0  # 0: every word of the query


def words(text: str, recipe: Recipe) -> list[str]:
    found: list[str] = []
    for word in _WORD.findall(text):
        parts = re.sub(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Za-z])(?=[0-9])|(?<=[0-9])(?=[A-Za-z])", " ",
                       word).split() if recipe.split else [word]  # fmt: skip
        found += (p.lower() for p in parts)
        if len(parts) > 1:
            found.append(word.lower())
    kept = [w for w in found if len(w) > 1 and (recipe.numbers or not w.isdigit())]
    if recipe.stopwords:
        kept = [w for w in kept if w not in STOPWORDS]
    if recipe.bookkeeping:
        kept = [w for w in kept if w not in BOOKKEEPING]
    return kept


def tokens(text: str, recipe: Recipe) -> list[str]:
    found = words(text, recipe)
    return list(_stemmer().stemWords(found)) if recipe.stem and found else found


def fields_of(entry: Entry, recipe: Recipe) -> tuple[str, ...]:
    text = indexed_text(entry)
    if recipe.fields == "no-metadata":
        return text[:4]
    if recipe.fields == "metadata-values":
        return (*text[:4], *(d.split(":", 1)[-1] for d in text[4:]))
    return text


Documents = tuple[list[Counter[str]], np.ndarray]
_DOCUMENTS: dict[tuple[int, Recipe], Documents] = {}


def documents(entries: Sequence[Entry], recipe: Recipe) -> Documents:
    """Term counts of every entry and their lengths (kept per entry list and tokenizer)."""
    key = (id(entries), replace(recipe, k1=1.2, b=0.75, query_counts="repeats", first_words=0))
    if key not in _DOCUMENTS:
        counts = [
            Counter(t for f in fields_of(e, recipe) if f for t in tokens(f, recipe))
            for e in entries
        ]
        _DOCUMENTS[key] = (counts, np.array([float(sum(c.values())) for c in counts]))
    return _DOCUMENTS[key]


def bm25(entries: Sequence[Entry], query: str, recipe: Recipe) -> np.ndarray:
    """BM25 of every entry for ``query`` by ``recipe`` (the packed index's by default)."""
    docs, lengths = documents(entries, recipe)
    asked = tokens(query, recipe)
    if recipe.first_words:
        asked = [t for t in asked if t in set(list(dict.fromkeys(asked))[: recipe.first_words])]
    wanted = Counter(asked)
    if recipe.query_counts == "once":
        wanted = Counter(dict.fromkeys(wanted, 1))
    n, mean = len(docs), max(float(lengths.mean()), 1e-9)
    norm = recipe.k1 * (1 - recipe.b + recipe.b * lengths / mean)
    scores = np.zeros(n)
    for term, times in wanted.items():
        tf = np.array([d.get(term, 0) for d in docs], dtype=np.float64)
        df = int(np.count_nonzero(tf))
        if df:
            idf = math.log1p((n - df + 0.5) / (df + 0.5))
            scores += times * idf * tf * (recipe.k1 + 1) / (tf + norm)
    return scores
