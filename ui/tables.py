"""What the Next session and Audits pages show, shaped for their tables: pure functions of
what the library returns, so the templates only lay them out.

Next session: the chosen entries best first, each term of their score a labelled column:
the signal's value times its weight, which is what the score adds up (a signal weighed 0
adds nothing and shows no bar), with a bar on one scale for every column and the signal
before weighing beside it; and the block's size against Claude Code's inline cap.
Audits: each extraction audit as a row of figures (operations by kind, tokens, cost) over
a table of its operations.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from memlog.eventlog.events import MemoryEvolved
from memlog.retrieval.budget import size
from memlog.retrieval.request import Chosen, Injection
from memlog.ui.words import operations_by_kind
from memlog.vocabulary import CONTEXT_CAP_CHARS, INJECTION_MAX_CHARS

#: the widest bar, in steps (the stylesheet has a class for each)
BAR_STEPS = 10


class Signal(NamedTuple):
    key: str
    label: str
    #: what the column measures, shown as the heading's title
    meaning: str
    #: the component holding the raw value ("" when there is none)
    raw: str = ""
    #: what the signal is before weighing, as its cell names it
    before: str = "z"


FUSED = (
    Signal("lexical", "lexical", "BM25 of the query's stems in the entry, z-scored over the "
           "candidates, times its weight", "lexical_raw"),
    Signal("vector", "vector", "cosine of the query's and the entry's vectors, z-scored, times "
           "its weight", "vector_raw"),
    Signal("prominence", "prominence", "observations, confidence, recency and recalls, "
           "z-scored, times its weight", "prominence_raw"),
    Signal("neighbours", "neighbours", "the mean score of the entry's ten nearest neighbours "
           "when above zero, times its weight", before="mean"),
    Signal("usefulness", "usefulness", "sessions that applied it against those it was given "
           "to (0 until one is judged), times its weight", before="rate"),
)  # fmt: skip
D3 = (
    Signal("vector", "vector", "cosine of the query's and the entry's vectors, times its weight",
           "vector_raw", before="value"),
    Signal("keyword", "keyword", "FTS5 bm25, normalised, times its weight", "keyword_raw",
           before="value"),
    Signal("prominence", "prominence", "observations, confidence, recency and recalls, times "
           "its weight", before="value"),
)  # fmt: skip


class Cell(NamedTuple):
    """One term of an entry's score."""

    #: what the term adds to the score: the signal's value times its weight
    term: float
    #: the signal before weighing (a z-score; the neighbours' mean), and its raw measure
    value: float
    raw: float | None
    #: the bar's width in steps, 0 to ``BAR_STEPS``, on one scale for every column
    width: int
    negative: bool


class Row(NamedTuple):
    rank: int
    entry: Chosen
    cells: list[Cell]


class Ranked(NamedTuple):
    """The Next session page's table and the block's size."""

    signals: Sequence[Signal]
    rows: list[Row]
    #: the weight of each signal (``weight_<key>`` components), as the heading shows it
    weights: dict[str, float]
    size: int
    cap: int = CONTEXT_CAP_CHARS
    #: what ``memory_injection_max_chars`` lets memlog inject (the block stays within it)
    budget: int = INJECTION_MAX_CHARS

    @property
    def over(self) -> bool:
        return self.size > self.cap

    @property
    def share(self) -> int:
        """The block's size in percent of the cap."""
        return round(100 * self.size / self.cap)


def ranked(result: Injection, budget: int = INJECTION_MAX_CHARS) -> Ranked:
    """The chosen entries best first, with a cell per term of their score; the block's
    size as Claude Code counts it, against its cap and memlog's ``budget``."""
    chosen = sorted(result.chosen, key=lambda c: (-c.score, c.name))
    kind = D3 if any("keyword" in c.components for c in chosen) else FUSED
    signals = [s for s in kind if any(s.key in c.components for c in chosen)]
    first = chosen[0].components if chosen else {}
    weights = {s.key: first.get(f"weight_{s.key}", 1.0) for s in signals}
    widest = max((abs(term(c, s.key, weights[s.key])) for c in chosen for s in signals),
                 default=0.0)  # fmt: skip
    rows = [
        Row(n, c, [_cell(c, s, weights[s.key], widest) for s in signals])
        for n, c in enumerate(chosen, 1)
    ]
    return Ranked(signals, rows, weights, size(result.text), budget=budget)


def term(chosen: Chosen, key: str, weight: float) -> float:
    """What signal ``key`` adds to ``chosen``'s score (its value times its weight)."""
    return weight * chosen.components.get(key, 0.0) + 0.0  # (a weight of 0 adds 0, not -0)


def _cell(chosen: Chosen, signal: Signal, weight: float, widest: float) -> Cell:
    value = chosen.components.get(signal.key, 0.0)
    raw = chosen.components.get(signal.raw) if signal.raw else None
    added = term(chosen, signal.key, weight)
    width = round(BAR_STEPS * abs(added) / widest) if widest else 0
    return Cell(added, value, raw, width, added < 0)


class Audit(NamedTuple):
    """One extraction audit: its figures and its operations."""

    event: MemoryEvolved
    #: operations by kind, in the order add, update, remove, keep
    counts: list[tuple[str, int]]
    #: the names of the entries its operations name, where the view knows them
    names: Mapping[str, str]

    @property
    def cost_usd(self) -> float:
        return self.event.usage.cost_micros / 1_000_000


def audits(events: Sequence[object], names: Mapping[str, str]) -> list[Audit]:
    """The ``memory.evolved`` events among ``events``, with their operations counted and
    the entries they name given their ``names``."""
    return [
        Audit(
            event,
            operations_by_kind(event.operations),
            {i: names[i] for i in event.entry_ids if i in names},
        )
        for event in events
        if isinstance(event, MemoryEvolved)
    ]
