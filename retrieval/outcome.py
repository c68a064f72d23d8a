"""From a ranking to an injection: the chosen entries, every component of their scores,
the mode and the rendered block.  Shared by the numpy ranking (``semantic``) and the
plain one (``light``); scores may be numpy arrays or lists."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any, NamedTuple

from memlog.eventlog.devices import known_device_id
from memlog.projections.fold import Entry
from memlog.projections.holds import foreign
from memlog.retrieval import budget, relevance
from memlog.retrieval.render import (
    INJECTED_HEADER,
    condensed_block,
    diagnostic,
    entry_block,
    render_semantic,
)
from memlog.retrieval.request import Chosen, Injection, LeftOut, Request, counted
from memlog.vocabulary import LESSONS_NOTE, PROMPT_RECALL_ENTRIES

COMPONENTS = (
    "vector_raw", "vector", "keyword_raw", "keyword", "observations", "confidence", "recency",
    "recall", "prominence", "final",
)  # fmt: skip
FUSED_COMPONENTS = (
    "lexical_raw", "lexical", "vector_raw", "vector", "prominence_raw", "prominence", "fused",
    "neighbours", "usefulness", "final",
)  # fmt: skip
PARTS = ("observations", "confidence", "recency", "recall")
#: a block's header, and what gives its last line for the entries chosen
Framing = tuple[str, Callable[[Injection], str]]
#: the heading of a prompt's recall
PROMPT_HEADER = "## Engineering Memory (recalled for this prompt)"
#: a prompt recall's first lines: its title, and what its lessons are
PROMPT_HEADING = f"{PROMPT_HEADER}\n{LESSONS_NOTE}"
#: why a chosen entry is not in the block
NO_ROOM = "no room: the block is at memory_injection_max_chars"


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
    total = len(ids) if ranked.shown is None else counted(ranked.shown)
    result = Injection(
        text="", mode=mode, chosen=chosen, query=query, total=total, vector_matches=matches,
        fts_matches=fts, model=request.ws.space.model, timings=timings, notes=notes,
        context=text,
    )  # fmt: skip
    if request.floor is not None:
        result.chosen = passing(result.chosen, request.floor)
    others = foreign(entries, known_device_id(request.home))
    if request.max_chars is not None:  # a block: never two lessons that contradict
        drop_contradicting(result, by_id)  # each other, the stale ones marked
        mark_stale(request, result, by_id)
    if request.max_chars is None:
        result.chosen = unreceived(result.chosen, request.received)
        shown = [by_id[c.id] for c in result.chosen]
        result.text = render_semantic(shown, result, foreign=others)
        return result
    floor = request.floor
    if floor is not None:
        framing: Framing = (PROMPT_HEADING, lambda r: prompt_line(len(r.chosen), floor, r))
    else:
        framing = (INJECTED_HEADER, diagnostic)
    balanced = budget.balanced(request.effective_limit, request.query is not None)
    fit_into(result, by_id, request.max_chars, balanced, framing, others)
    if request.received:  # a resumed session: what a fresh start gives now, less what it has
        result.chosen = unreceived(result.chosen, request.received)
        fit_into(result, by_id, request.max_chars, balanced, framing, others)
    result.more = more(ranked, {c.id for c in result.chosen}, query is not None)
    return result


def drop_contradicting(result: Injection, by_id: dict[str, Entry]) -> None:
    """Of two chosen lessons that say opposite things, only the newer stays
    (``contradiction.clashes``); the other is left out, saying why."""
    from memlog.projections.stance import clashes

    found = clashes([by_id[c.id] for c in result.chosen])
    if not found:
        return
    dropped = {clash.dropped: clash.kept for clash in found}
    result.left_out += [
        LeftOut(c.id, c.name, c.category, f"contradicted by a newer lesson in the block: "
                f"{by_id[dropped[c.id]].name}")
        for c in result.chosen if c.id in dropped
    ]  # fmt: skip
    result.chosen = [c for c in result.chosen if c.id not in dropped]


def mark_stale(request: Request, result: Injection, by_id: dict[str, Entry]) -> None:
    """Give each chosen lesson of the project whose cited files are gone its mark."""
    from memlog.retrieval import stale

    started = time.perf_counter()
    marks = stale.marked(request.ws, [by_id[c.id] for c in result.chosen], request.deadline)
    for pick in result.chosen:
        if pick.id in marks:
            pick.stale = marks[pick.id]
            by_id[pick.id] = stale.with_mark(by_id[pick.id], marks[pick.id])
    result.timings["stale_ms"] = round((time.perf_counter() - started) * 1000, 3)


def unreceived(chosen: list[Chosen], received: frozenset[str]) -> list[Chosen]:
    """What a resumed session has not received: the rest keep their places, unrepeated
    (a fresh start's picks, not the next-best ones: its transcript holds what it got)."""
    return [c for c in chosen if c.id not in received]


def passing(chosen: list[Chosen], floor: float) -> list[Chosen]:
    """The best entries whose relevance reaches ``floor``: a prompt's recall."""
    return [c for c in chosen if relevance.passes(c, floor)][:PROMPT_RECALL_ENTRIES]


def prompt_line(count: int, floor: float, result: Injection) -> str:
    """The last line of a prompt's recall."""
    return (
        f"*Memory: {count} entries recalled for this prompt (relevance ≥ {floor:.2f}) | "
        f"model: {result.model}*"
    )


def fit_into(
    result: Injection,
    by_id: dict[str, Entry],
    room: int,
    balanced: bool,
    framing: Framing = (INJECTED_HEADER, diagnostic),
    foreign: Collection[str] = (),
) -> None:
    """Hold ``result``'s block to ``room`` characters (``budget.fit``): its chosen entries
    become those the block holds, condensed ones marked, the others left out.
    ``framing``: its header and what gives its last line; ``foreign``: the entries another
    device recorded (marked so)."""
    chosen, (header, last_line) = result.chosen, framing
    order = budget.fill_order([c.category for c in chosen], [c.score for c in chosen], balanced)
    blocks = [
        budget.Block(
            c.id, c.category, entry_block(by_id[c.id], c.id in foreign),
            condensed_block(by_id[c.id], c.id in foreign),
        )
        for c in (chosen[i] for i in order)
    ]  # fmt: skip
    # with every pick counted, the last line is never shorter than the final one
    fitted = budget.fit(blocks, budget.framing(header, last_line(result)), room)
    kept = set(fitted.kept)
    result.chosen = [c for c in chosen if c.id in kept]
    for pick in result.chosen:
        pick.condensed = pick.id in fitted.condensed
    result.left_out += [
        LeftOut(c.id, c.name, c.category, NO_ROOM) for c in chosen if c.id in set(fitted.left)
    ]
    entries = [by_id[c.id] for c in result.chosen]
    result.text = render_semantic(
        entries, result, fitted.condensed, header, last_line(result), foreign
    )


def _nonzero(raw: Any, count: int) -> Iterable[int]:
    """The places of the first ``count`` scores that are not 0 (a numpy array's at once)."""
    if hasattr(raw, "nonzero"):
        places: list[int] = raw[:count].nonzero()[0].tolist()
        return places
    return (i for i, v in zip(range(count), raw, strict=False) if v)


def more(ranked: Ranked, injected: set[str], query: bool) -> int:
    """Candidates that matched (the query's words, or any without a query), may be
    chosen and were not injected."""
    scores = ranked.scores
    raw = scores.lexical_raw if hasattr(scores, "lexical_raw") else scores.keyword_raw
    allowed = ranked.shown
    count = len(ranked.ids)
    matched = _nonzero(raw, count) if query else range(count)
    # the injected by their place: among the picks (every id is decoded only when one is not)
    at = {ranked.ids[i]: i for i in ranked.picked}
    if not injected <= at.keys():
        at = {entry_id: i for i, entry_id in enumerate(ranked.ids)}
    skip = {at[entry_id] for entry_id in injected if entry_id in at}
    if not query and allowed is None:
        return count - len(skip)
    return sum(1 for i in matched if (allowed is None or allowed[i]) and i not in skip)
