"""The #023 markdown pipeline: choose knowledge-bank entries and render the block.

``markdown_injection`` reads the project's knowledge bank and the global
store files (never SQLite); the rest are pure functions.  ``select_legacy``
reproduces memory.py of the cross-project memory design:

1. local and global entries are deduplicated by content hash, keeping the
   one with the higher observation count (the local one on a tie); entries
   with an empty description never match anything, so they are all kept;
2. each category is sorted by observation count (desc), confidence
   (high > medium > low), then recency: an ISO ``Last observed`` date (the
   global store's) newest first, ahead of entries without one, and file
   position descending (later in a file is newer);
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
from pathlib import Path

from memlog.projections.markdown_view.kb_parser import ParsedEntry, observed_moment, parse_file
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

PriorityKey = tuple[int, int, int, float, int, bool, str, str]


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
    """One entry per content hash: the higher observation count, the earlier on a tie."""
    kept: list[ParsedEntry] = []
    index: dict[str, int] = {}
    for entry in entries:
        if not entry.description:
            kept.append(entry)
            continue
        at = index.setdefault(entry.content_hash, len(kept))
        if at == len(kept):
            kept.append(entry)
        elif entry.observation_count > kept[at].observation_count:
            kept[at] = entry
    return kept


def priority_key(entry: ParsedEntry) -> PriorityKey:
    """Ascending sort key: count desc, confidence desc, recency desc, then a stable rest."""
    stamp = observed_timestamp(entry.last_observed)
    return (
        -entry.observation_count,
        -CONFIDENCE_RANK[entry.confidence],
        0 if stamp is not None else 1,
        -(stamp or 0.0),
        -entry.position,
        entry.is_global,
        entry.source_path,
        entry.name,
    )


def observed_timestamp(value: str | None) -> float | None:
    """POSIX time of an ISO ``Last observed`` value (naive means UTC), else None."""
    moment = observed_moment(value)
    return moment.timestamp() if moment is not None else None


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
        for name in KB_CATEGORIES:
            local += _parsed(root / "docs" / "knowledge-bank" / f"{name}.md")
    global_ = [e for name in KB_CATEGORIES for e in _parsed(home / f"{name}.md")]
    return local, global_


def _parsed(path: Path) -> list[ParsedEntry]:
    if not path.is_file():
        return []
    return parse_file(path).entries
