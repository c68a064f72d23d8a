"""What the Next session and Audits pages show, shaped for their tables: pure functions of
what the library returns, so the templates only lay them out.

Next session: the chosen entries best first, each signal of their score a labelled column
(its z-score, a bar scaled to the column's largest, the raw value beside), the weights in
force, and the block's size against Claude Code's inline cap.  Audits: each extraction
audit as a row of figures (operations by kind, tokens, cost) over a table of its operations.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from memlog.eventlog.events import MemoryEvolved
from memlog.retrieval.budget import size
from memlog.retrieval.request import Chosen, Injection
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


FUSED = (
    Signal("lexical", "lexical", "BM25 of the query's stems in the entry, z-scored", "lexical_raw"),
    Signal("vector", "vector", "cosine of the query's and the entry's vectors, z-scored",
           "vector_raw"),
    Signal("prominence", "prominence", "observations, confidence, recency and recalls, z-scored",
           "prominence_raw"),
    Signal("neighbours", "neighbours", "what the ten nearest neighbours' mean score adds"),
    Signal("usefulness", "usefulness",
           "sessions that applied it against those it was given to (0 until one is judged)"),
)  # fmt: skip
D3 = (
    Signal("vector", "vector", "cosine of the query's and the entry's vectors", "vector_raw"),
    Signal("keyword", "keyword", "FTS5 bm25, normalised", "keyword_raw"),
    Signal("prominence", "prominence", "observations, confidence, recency and recalls"),
)


class Cell(NamedTuple):
    value: float
    raw: float | None
    #: the bar's width in steps, 0 to ``BAR_STEPS``
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
    """The chosen entries best first, with a cell per signal; the block's size as Claude
    Code counts it, against its cap and memlog's ``budget``."""
    chosen = sorted(result.chosen, key=lambda c: (-c.score, c.name))
    kind = D3 if any("keyword" in c.components for c in chosen) else FUSED
    signals = [s for s in kind if any(s.key in c.components for c in chosen)]
    widest = {s.key: max((abs(c.components.get(s.key, 0.0)) for c in chosen), default=0.0)
              for s in signals}  # fmt: skip
    rows = [
        Row(n, c, [_cell(c, s, widest[s.key]) for s in signals]) for n, c in enumerate(chosen, 1)
    ]
    first = chosen[0].components if chosen else {}
    weights = {s.key: first[f"weight_{s.key}"] for s in signals if f"weight_{s.key}" in first}
    return Ranked(signals, rows, weights, size(result.text), budget=budget)


def _cell(chosen: Chosen, signal: Signal, widest: float) -> Cell:
    value = chosen.components.get(signal.key, 0.0)
    raw = chosen.components.get(signal.raw) if signal.raw else None
    width = round(BAR_STEPS * abs(value) / widest) if widest else 0
    return Cell(value, raw, width, value < 0)


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


OPERATIONS = ("add", "update", "remove", "keep")


def audits(events: Sequence[object], names: Mapping[str, str]) -> list[Audit]:
    """The ``memory.evolved`` events among ``events``, with their operations counted and
    the entries they name given their ``names``."""
    found = []
    for event in events:
        if isinstance(event, MemoryEvolved):
            kinds: Counter[str] = Counter(op.op for op in event.operations)
            counts = [(k, kinds[k]) for k in OPERATIONS if kinds[k]]
            found.append(Audit(event, counts, {i: names[i] for i in event.entry_ids if i in names}))
    return found
