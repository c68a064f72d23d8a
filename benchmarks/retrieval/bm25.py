"""A BM25 of the benchmark's own, to vary one part of the lexical signal at a time.

With the default ``Recipe`` it gives the packed lexical index's scores (the
same terms: ``memlog.projections.terms``; the same weights: k1 1.2, b 0.75,
idf ``ln(1 + (n − df + 0.5) / (df + 0.5))``; the same query units: an
identifier's terms together, repeats saturated by k3), which ``lexical.py``
checks on every set.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from memlog.projections.fold import Entry
from memlog.projections.sqlite_view.indexed import indexed_text
from memlog.projections.terms import _IDENTIFIER, QUERY_K3, STOPWORDS, _stemmer

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
    fields: str = "all"  # "all", "no-metadata", "metadata-values", "name×<n>", "no-keywords"
    k1: float = 1.2
    b: float = 0.75
    query_counts: str = f"k3:{QUERY_K3}"  # "repeats", "once" or "k3:<k3>" (saturated)
    groups: bool = True  # an identifier's terms one unit that an entry must hold whole
    first_words: int = 0  # 0: every word of the query
    idf: str = "plus-one"  # "plus-one": ln(1 + (n − df + .5)/(df + .5)); "classic": FTS5's


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
    if recipe.fields.startswith("name×"):  # the name's terms counted that many times
        return (text[0],) * int(recipe.fields.removeprefix("name×")) + text[1:]
    if recipe.fields == "no-keywords":
        return (*text[:2], *text[3:])
    return text


Documents = tuple[list[Counter[str]], np.ndarray]
_DOCUMENTS: dict[tuple[int, Recipe], Documents] = {}


def documents(entries: Sequence[Entry], recipe: Recipe) -> Documents:
    """Term counts of every entry and their lengths (kept per entry list and tokenizer)."""
    # only the tokenizer and the fields shape the documents: the query's side is left out
    plain = replace(recipe, k1=1.2, b=0.75, query_counts="", first_words=0, idf="")
    key = (id(entries), replace(plain, groups=True))
    if key not in _DOCUMENTS:
        counts = [
            Counter(t for f in fields_of(e, recipe) if f for t in tokens(f, recipe))
            for e in entries
        ]
        _DOCUMENTS[key] = (counts, np.array([float(sum(c.values())) for c in counts]))
    return _DOCUMENTS[key]


def query_weight(times: int, counts: str) -> float:
    """How much a term found ``times`` in the query counts: ``repeats`` (as often as it
    occurs), ``once``, or saturated as BM25's k3 does (``k3:8``: (k3 + 1)·q / (k3 + q))."""
    if counts == "once":
        return 1.0
    if counts.startswith("k3:"):
        k3 = float(counts.removeprefix("k3:"))
        return (k3 + 1.0) * times / (k3 + times)
    return float(times)


def idf_of(n: int, df: int, kind: str) -> float:
    """A term's idf: the packed index's (never below 0), or FTS5's, ``ln((n − df + .5) /
    (df + .5))``, floored at 1e-6 (a term in more than half the entries says nearly
    nothing)."""
    if kind == "classic":
        return max(math.log((n - df + 0.5) / (df + 0.5)), 1e-6)
    return math.log1p((n - df + 0.5) / (df + 0.5))


def units(query: str, recipe: Recipe) -> dict[tuple[str, ...], float]:
    """The query's units by ``recipe``, each with its weight: an identifier's terms as one
    unit (``terms.query_units``), or each term alone (``groups=False``)."""
    found: list[tuple[str, ...]] = []
    for token in _IDENTIFIER.findall(query):
        stems = tuple(dict.fromkeys(tokens(token, recipe)))
        if recipe.groups and len(stems) > 1:
            found.append(stems)
        else:
            found += [(t,) for t in tokens(token, recipe)]
    if recipe.first_words:
        kept = set(list(dict.fromkeys(t for u in found for t in u))[: recipe.first_words])
        found = [u for u in found if set(u) <= kept]
    return {u: query_weight(n, recipe.query_counts) for u, n in Counter(found).items()}


def bm25(entries: Sequence[Entry], query: str, recipe: Recipe) -> np.ndarray:
    """BM25 of every entry for ``query`` by ``recipe`` (the packed index's by default)."""
    docs, lengths = documents(entries, recipe)
    n, mean = len(docs), max(float(lengths.mean()), 1e-9)
    norm = recipe.k1 * (1 - recipe.b + recipe.b * lengths / mean)
    scores = np.zeros(n)
    for unit, times in units(query, recipe).items():
        part, held = np.zeros(n), np.ones(n, dtype=bool)
        for term in unit:
            tf = np.array([d.get(term, 0) for d in docs], dtype=np.float64)
            df = int(np.count_nonzero(tf))
            if not df:
                held[:] = False
                break
            part += idf_of(n, df, recipe.idf) * tf * (recipe.k1 + 1) / (tf + norm)
            held &= tf > 0
        scores += times * np.where(held, part, 0.0)
    return scores
