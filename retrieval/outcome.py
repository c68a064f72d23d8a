"""From a ranking to an injection: the chosen entries, every component of their scores,
the mode and the rendered block.  Shared by the numpy ranking (``semantic``) and the
plain one (``light``); scores may be numpy arrays or lists."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from memlog.projections.fold import Entry
from memlog.retrieval.render import render_semantic
from memlog.retrieval.request import Chosen, Injection, Request

COMPONENTS = (
    "vector_raw", "vector", "keyword_raw", "keyword", "observations", "confidence", "recency",
    "recall", "prominence", "final",
)  # fmt: skip
FUSED_COMPONENTS = (
    "lexical_raw", "lexical", "vector_raw", "vector", "prominence_raw", "prominence", "fused",
    "neighbours", "final",
)  # fmt: skip
PARTS = ("observations", "confidence", "recency", "recall")


class Ranked(NamedTuple):
    """One ranking's candidates (ids and categories), what it picked and how it scored."""

    ids: Sequence[str]
    categories: Sequence[str]
    picked: list[int]
    #: ``ranking.Scores``, ``fusion.Fused`` or ``plain.Fused``
    scores: Any
    #: the prominence parts of the fused recipe (empty for D3, which has them in ``scores``)
    parts: tuple[Any, ...]
    #: candidates with a keyword or lexical score, and with a vector
    keyword_matches: int
    vector_matches: int
    #: which candidates a search may show (None: all); the others only set the statistics
    shown: Sequence[bool] | None = None
    #: for a search, each pick's relevance components (``relevance.of_picked``)
    relevance: Sequence[dict[str, float]] | None = None


def components(scores: Any, i: int, parts: tuple[Any, ...] = ()) -> dict[str, float]:
    """Every component of candidate ``i``'s score, and the weights in force."""
    d3 = "keyword_raw" in scores._fields
    found = {
        n: round(float(getattr(scores, n)[i]), 6) for n in (COMPONENTS if d3 else FUSED_COMPONENTS)
    }
    if not d3:
        found.update({k: round(float(p[i]), 6) for k, p in zip(PARTS, parts, strict=True)})
    found.update({f"weight_{k}": round(v, 6) for k, v in scores.weights._asdict().items()})
    return found


def injection(
    request: Request,
    ranked: Ranked,
    entries: list[Entry],
    query: str | None,
    timings: dict[str, float],
    notes: list[str],
    text: str | None = None,
) -> Injection:
    """The injection of ``ranked``'s picks, rendered; ``text``: what was ranked (the
    hook's context text or the searcher's), ``query`` what the ranking asked for it."""
    by_id = {e.id: e for e in entries}
    project, ids = request.ws.project, ranked.ids
    chosen = [
        Chosen(
            id=ids[i],
            name=by_id[ids[i]].name,
            category=ranked.categories[i],
            origin="local" if by_id[ids[i]].source_project == project else "global",
            score=float(ranked.scores.final[i]),
            components=components(ranked.scores, i, ranked.parts),
        )  # fmt: skip
        for i in ranked.picked
    ]
    for pick, extra in zip(chosen, ranked.relevance or (), strict=False):
        pick.components.update(extra)
    fts, matches = ranked.keyword_matches, ranked.vector_matches
    mode = "semantic" if matches else ("keyword" if fts else "prominence")
    total = len(ids) if ranked.shown is None else sum(ranked.shown)
    result = Injection(
        text="", mode=mode, chosen=chosen, query=query, total=total, vector_matches=matches,
        fts_matches=fts, model=request.ws.space.model, timings=timings, notes=notes,
        context=text,
    )  # fmt: skip
    result.text = render_semantic([by_id[c.id] for c in chosen], result)
    return result
