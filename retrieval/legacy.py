"""The #023 markdown pipeline: choose knowledge-bank entries and render the block.

``markdown_injection`` reads the project's knowledge bank and the global
store files (never SQLite); the rest are pure functions.  ``select_legacy``
reproduces memory.py of the cross-project memory design:

1. the files are read as memory.py reads them: the project's
   ``anti-patterns.md``, ``patterns.md``, ``heuristics.md``, then the global
   store's in the same order; entries are deduplicated by content hash in
   the order first seen, a later copy with a strictly higher observation
   count taking the first one's place (empty descriptions share one hash);
2. each category is sorted, stably, on observation count (desc), confidence
   (high > medium > low) and recency (desc): the POSIX time of an ISO
   ``Last observed`` (naive times are local, as Python reads them), else
   the entry's position in its file; entries equal on all three keep the
   order they were first seen in;
3. when ``limit >= 3 * non-empty categories``, each non-empty category first
   gets ``min(3, size)`` entries; the rest of the budget goes by category
   priority: anti-patterns, heuristics, patterns;
4. ``limit`` 0 selects nothing, a negative limit (-1) selects everything.

``render_legacy_block`` prints the selection under
``## Engineering Memory (from knowledge bank)`` with one section per
category and a closing ``---``, each entry as it stands in its file.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path

from memlog.projections.markdown_view.kb_parser import ParsedEntry, parse_file
from memlog.retrieval.render import diagnostic
from memlog.retrieval.request import Chosen, Injection, Request
from memlog.vocabulary import (
    BLOCK_HEADER,
    CONFIDENCE_RANK,
    KB_CATEGORIES,
    MIN_PER_CATEGORY,
    SECTION_TITLES,
    KbCategory,
)

CATEGORY_PRIORITY = KB_CATEGORIES

PriorityKey = tuple[int, int, float]
#: the order memory.py reads the files in (its first-seen order breaks ties)
READ_ORDER: tuple[KbCategory, ...] = ("anti-patterns", "patterns", "heuristics")


def select_legacy(
    local: list[ParsedEntry], global_: list[ParsedEntry], limit: int
) -> list[ParsedEntry]:
    """The entries to inject, grouped by category priority, best first in each."""
    if limit == 0:
        return []
    buckets = sort_into_categories(deduplicate([*local, *global_]))
    taken = allocate({category: len(bucket) for category, bucket in buckets.items()}, limit)
    return [
        entry for category in CATEGORY_PRIORITY for entry in buckets[category][: taken[category]]
    ]


def deduplicate(entries: Iterable[ParsedEntry]) -> list[ParsedEntry]:
    """One entry per content hash, in the order first seen; a strictly higher count wins."""
    kept: dict[str, ParsedEntry] = {}
    for entry in entries:
        held = kept.get(entry.content_hash)
        if held is None or entry.observation_count > held.observation_count:
            kept[entry.content_hash] = entry  # a replacement keeps the first one's place
    return list(kept.values())


def priority_key(entry: ParsedEntry) -> PriorityKey:
    """Ascending sort key: count desc, confidence desc, recency desc (ties stay stable)."""
    return (-entry.observation_count, -CONFIDENCE_RANK[entry.confidence], -recency(entry))


def recency(entry: ParsedEntry) -> float:
    """The ``Last observed`` time when it is an ISO time, else the position in the file.

    memory.py counts a file's position in chunks split at ``### `` lines, the
    text before the first one included: one more than the entry's index.
    """
    stamp = observed_timestamp(entry.last_observed)
    return stamp if stamp is not None else float(entry.position + 1)


def observed_timestamp(value: str | None) -> float | None:
    """POSIX time of an ISO ``Last observed`` value (naive means local time), else None."""
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.strip().replace("Z", "+00:00")).timestamp()
    except (ValueError, OverflowError, OSError):
        return None


def sort_into_categories(entries: Iterable[ParsedEntry]) -> dict[KbCategory, list[ParsedEntry]]:
    """Each category's entries in priority order."""
    buckets: dict[KbCategory, list[ParsedEntry]] = {c: [] for c in CATEGORY_PRIORITY}
    for entry in entries:
        buckets[entry.category].append(entry)
    return {category: sorted(bucket, key=priority_key) for category, bucket in buckets.items()}


def allocate(sizes: Mapping[KbCategory, int], limit: int) -> dict[KbCategory, int]:
    """How many entries each category gets: minimum 3 when affordable, then by priority."""
    total = sum(sizes.values())
    remaining = total if limit < 0 else limit
    taken: dict[KbCategory, int] = {category: 0 for category in CATEGORY_PRIORITY}
    non_empty = [category for category in CATEGORY_PRIORITY if sizes.get(category, 0)]
    if remaining >= MIN_PER_CATEGORY * len(non_empty):
        for category in non_empty:
            taken[category] = min(MIN_PER_CATEGORY, sizes[category])
            remaining -= taken[category]
    for category in CATEGORY_PRIORITY:
        extra = max(0, min(remaining, sizes.get(category, 0) - taken[category]))
        taken[category] += extra
        remaining -= extra
    return taken


def render_legacy_block(entries: Sequence[ParsedEntry]) -> str:
    """The markdown block; ``""`` for no entries.  It ends with ``---`` and no newline."""
    if not entries:
        return ""
    parts = [BLOCK_HEADER, ""]
    for category in CATEGORY_PRIORITY:
        chosen = [entry for entry in entries if entry.category == category]
        if chosen:
            parts.append(SECTION_TITLES[category])
            for entry in chosen:
                parts.extend((entry.raw, ""))
    parts.append("---")
    return "\n".join(parts)


def markdown_injection(request: Request) -> Injection:
    """The cross-project memory spec's pipeline: markdown files only, no SQLite."""
    started = time.perf_counter()
    local, global_ = read_markdown_sources(request.ws.root, request.home)
    picked = select_legacy(local, global_, request.effective_limit)
    # deduplication may keep the global copy of a local entry: origin is the copy chosen
    from_global = {id(e) for e in global_}
    chosen = [
        Chosen(
            id=e.content_hash,
            name=f"{e.header_type + ': ' if e.header_type else ''}{e.name}",
            category=e.category,
            origin="global" if id(e) in from_global else "local",
            score=float(e.observation_count),
        )
        for e in picked
    ]
    result = Injection(text="", mode="legacy", chosen=chosen, total=len(local) + len(global_))
    block = render_legacy_block(picked)
    result.text = block + "\n" + diagnostic(result) + "\n" if block else ""
    result.timings["markdown_ms"] = round((time.perf_counter() - started) * 1000, 3)
    return result


def read_markdown_sources(
    root: Path | None, home: Path
) -> tuple[list[ParsedEntry], list[ParsedEntry]]:
    """Entries of the project's knowledge bank and of the global store files."""
    local: list[ParsedEntry] = []
    if root is not None:
        for name in READ_ORDER:
            local += _parsed(root / "docs" / "knowledge-bank" / f"{name}.md")
    global_ = [e for name in READ_ORDER for e in _parsed(home / f"{name}.md")]
    return local, global_


def _parsed(path: Path) -> list[ParsedEntry]:
    if not path.is_file():
        return []
    return parse_file(path).entries
