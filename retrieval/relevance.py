"""How relevant an entry is to a text on its own, and the floor under which it is not recalled.

The fused ranking's scores are z-scores over the candidates: they say which
entry is better than the others for this query, never whether the best is
any good, so no threshold on them means the same thing from one query to
the next.  A floor needs evidence that does not depend on the other
candidates:

- **cosine**: the raw cosine of the query's vector with the entry's (the
  embedding model's own scale, the same for every query);
- **coverage**: the share of the query's terms the entry holds, each term
  weighted by its idf (``ln(1 + (n − df + 0.5) / (df + 0.5))``, the lexical
  index's); 1 when the entry holds every term of the query, 0 when none.

``relevance`` maps them to one number in [0, 1] with a logistic model
(``WITH_VECTOR``, or ``LEXICAL_ONLY`` when no query vector was compared):
an estimate of the chance that the entry is relevant.  Its coefficients and
the floor (``memory_relevance_floor``) are calibrated on the retrieval
benchmark's blind labels of prompts (``benchmarks/bench_retrieval.py
--calibrate``); an entry passes when its relevance reaches the floor.  The
default floor, 0.5, passes an entry the model finds more likely useful than
not: of the entries a prompt's recall then shows (at most 3 of the first 10),
72-85% were judged useful on each prompt set left out of the fit.  Computed for
searches (a caller's text: the CLI, MCP, the page, a prompt), not for the
session start, which injects the best entries whatever their level.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

from memlog.config import Config
from memlog.projections.fold import Entry
from memlog.projections.sqlite_view.indexed import indexed_text
from memlog.projections.sqlite_view.plain import View
from memlog.projections.terms import term_counts
from memlog.retrieval.request import Chosen

#: logistic coefficients (intercept, cosine, coverage) with a query vector, and (intercept,
#: coverage) without one: the chance that an entry is graded useful (1 or 2), fitted on every
#: blindly judged (prompt, entry) pair of the benchmark's three prompt sets (4031 pairs, 506
#: useful; ``bench_retrieval.py --calibrate``)
WITH_VECTOR = (-4.173, 4.712, 10.407)
LEXICAL_ONLY = (-3.062, 11.825)


class Evidence(NamedTuple):
    """What says, on its own scale, that an entry is relevant to a query."""

    #: raw cosine of the query's vector with the entry's (None: no query vector)
    cosine: float | None
    #: idf-weighted share of the query's terms the entry holds, in [0, 1]
    coverage: float


def floor_of(config: Config) -> float:
    """The configured floor: the least relevance an entry recalled for a prompt has."""
    return config.memory_relevance_floor


def idf(documents: int, frequency: int) -> float:
    """A term's idf, as the lexical index weighs it."""
    return math.log1p((documents - frequency + 0.5) / (frequency + 0.5))


def coverage(weights: dict[str, float], held: set[str]) -> float:
    """The share of the query terms' weight (``weights``: term → idf) in ``held``."""
    total = math.fsum(weights.values())
    if total <= 0.0:
        return 0.0
    return math.fsum(w for t, w in weights.items() if t in held) / total


def relevance(evidence: Evidence) -> float:
    """The estimated chance, in [0, 1], that an entry with this evidence is relevant."""
    if evidence.cosine is None:
        intercept, lexical = LEXICAL_ONLY
        z = intercept + lexical * evidence.coverage
    else:
        intercept, semantic, lexical = WITH_VECTOR
        z = intercept + semantic * evidence.cosine + lexical * evidence.coverage
    return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0


def passes(chosen: Chosen, floor: float) -> bool:
    """Whether a ranked entry reaches the floor (an entry without evidence never does)."""
    return chosen.components.get("relevance", -1.0) >= floor


def query_weights(view: View, query: str | None) -> dict[str, float]:
    """Each distinct term of ``query`` with its idf in the view (empty without an index)."""
    terms = list(term_counts([query or ""]))
    found = view.document_frequencies(terms) if terms else None
    if found is None:
        return {}
    documents, frequencies = found
    return {t: idf(documents, f) for t, f in zip(terms, frequencies, strict=True)}


def judge(
    view: View, query: str | None, entries: Sequence[Entry], cosines: Sequence[float] | None
) -> list[Evidence]:
    """The evidence for each of ``entries`` (``cosines``: theirs, None without a vector)."""
    weights = query_weights(view, query)
    found = []
    for n, entry in enumerate(entries):
        held = set(term_counts(indexed_text(entry))) if weights else set()
        cosine = float(cosines[n]) if cosines is not None else None
        found.append(Evidence(cosine, coverage(weights, held)))
    return found


def of_picked(
    view: View,
    query: str | None,
    entries: Sequence[Entry],
    picked: Sequence[str],
    cosines: Sequence[float] | None,
) -> list[dict[str, float]]:
    """The relevance components of the entries ``picked`` (ids, in order; ``entries``
    holds them in any order; ``cosines``: theirs in that order, None without a vector)."""
    by_id = {e.id: e for e in entries}
    judged = judge(view, query, [by_id[i] for i in picked], cosines)
    return [components(evidence) for evidence in judged]


def components(evidence: Evidence) -> dict[str, float]:
    """The evidence and the relevance, as components of a chosen entry's score."""
    found = {"coverage": round(evidence.coverage, 6), "relevance": round(relevance(evidence), 6)}
    if evidence.cosine is not None:
        found["cosine"] = round(evidence.cosine, 6)
    return found
