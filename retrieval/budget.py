"""Fitting an injection into a number of characters.

Claude Code hands a hook's ``additionalContext`` to the model inline only up
to 10,000 characters, counted as JavaScript counts a string (UTF-16 code
units: ``size``); past it the model sees a 2 KB preview and a file path.  So
everything memlog injects is held to ``memory_injection_max_chars``.

``fit`` fills the room in rank order, the category minimums first (the best
``MIN_PER_CATEGORY`` of each category, as the selection guarantees them),
then the rest by score.  An entry that does not fit whole is condensed (its
header, description and most useful metadata line: ``render.condensed_block``)
rather than left out, and every entry after it is condensed too, so a
lower-ranked entry never takes more room than a better one; one that does
not fit even condensed is left out, and a smaller one after it may still
fit.  The sizes are exact: the block is the header, the category sections (a
heading, then the entries, blank lines between) and a closing footer.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import NamedTuple

from memlog.vocabulary import BALANCE_FROM, MIN_PER_CATEGORY, SECTION_TITLES

#: between two parts of the block (sections, entries): a blank line
GAP = 2


def size(text: str) -> int:
    """``text``'s length as Claude Code measures it (JavaScript: UTF-16 code units)."""
    return len(text) + sum(1 for c in text if ord(c) > 0xFFFF)


class Block(NamedTuple):
    """One candidate entry: its id, category, and its text whole and condensed."""

    id: str
    category: str
    whole: str
    condensed: str


class Fitted(NamedTuple):
    """Which entries the block holds (in fill order) and which of them condensed, and
    which it leaves out for want of room."""

    kept: list[str]
    condensed: set[str]
    left: list[str]


def fill_order(categories: Sequence[str], scores: Sequence[float], balanced: bool) -> list[int]:
    """The places of the candidates in the order they get room: best first, the best
    ``MIN_PER_CATEGORY`` of each category ahead of the rest when ``balanced``."""
    best = sorted(range(len(scores)), key=lambda i: -scores[i])  # stable: ties keep order
    if not balanced:
        return best
    seen: Counter[str] = Counter()
    first = []
    for i in best:
        if seen[categories[i]] < MIN_PER_CATEGORY:
            seen[categories[i]] += 1
            first.append(i)
    taken = set(first)
    return first + [i for i in best if i not in taken]


def balanced(limit: int, search: bool) -> bool:
    """Whether the selection kept category minimums (as ``ranking.select`` does)."""
    return not search and (limit < 0 or limit >= BALANCE_FROM)


def fit(blocks: Sequence[Block], fixed: int, room: int) -> Fitted:
    """Fill ``room`` characters with ``blocks`` (in fill order), ``fixed`` of them taken
    by the header and the footer."""
    used, sections = fixed, set[str]()
    kept: list[str] = []
    condensed: set[str] = set()
    left: list[str] = []
    for block in blocks:
        extra = GAP + (0 if block.category in sections else _heading(block.category))
        if not condensed and used + extra + size(block.whole) <= room:
            used += extra + size(block.whole)
        elif used + extra + size(block.condensed) <= room:
            used += extra + size(block.condensed)
            condensed.add(block.id)
        else:
            left.append(block.id)
            continue
        kept.append(block.id)
        sections.add(block.category)
    return Fitted(kept, condensed, left)


def _heading(category: str) -> int:
    """A section's heading and the newline after it, added before its first entry."""
    return size(SECTION_TITLES.get(category, "")) + 1


def framing(header: str, footer: str) -> int:
    """What the block takes besides its sections: the header, ``---`` and the footer."""
    return size(header) + size("\n\n---\n") + size(footer) + 1
