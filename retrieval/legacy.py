"""The #023 markdown pipeline: choose knowledge-bank entries and print them as memory.py did.

``markdown_injection`` reads the project's knowledge bank and the global
store files (never SQLite); the rest are pure functions.  The pipeline is
iflow's memory.py (v2.11) to the byte, including where memlog's own parser
reads a file differently (``kb_parser``, for imports):

1. a file is read as memory.py read it: ``<!-- -->`` comments removed (an
   unclosed one stays), the text split at every line starting ``### ``; a
   piece is an entry unless it is blank or its first line starts ``# `` or
   ``## `` (the text before the first ``### `` is piece 0).  The header line
   is stripped; ``Anti-Pattern: `` or ``Pattern: `` is taken off the name
   only.  The lines before the first ``- `` line are the description, that
   line and every one after it, up to the next ``### ``, the metadata, each
   part stripped as a whole.  ``- Observation count:``, ``- Confidence:``
   and ``- Last observed:`` lines (any case, leading spaces ignored) give the
   sort fields, the last valid one winning; the category is the file's;
2. the project's ``anti-patterns.md``, ``patterns.md``, ``heuristics.md``,
   then the global store's in the same order; entries are deduplicated by
   content hash in the order first seen, a later copy with a strictly higher
   observation count taking the first one's place (empty descriptions share
   one hash);
3. each category is sorted, stably, on observation count (desc), confidence
   (high > medium > low) and recency (desc): the POSIX time of an ISO
   ``Last observed`` (naive times are local, as Python reads them), else the
   entry's piece number in its file;
4. when ``limit >= 3 * non-empty categories``, each non-empty category first
   gets ``min(3, size)`` entries; the rest of the budget goes by category
   priority: anti-patterns, heuristics, patterns;
5. ``limit`` 0 selects nothing, a negative limit (-1) selects everything
   (memlog's meaning: memory.py printed nothing for one).

``render_legacy_block`` prints the selection under
``## Engineering Memory (from knowledge bank)`` with one section per
category and a closing ``---``: each entry's header line, description and
metadata, then a blank line.  The iflow drop-in prints that block and a
newline, nothing more; the hook and ``memlog inject`` add the line that says
how the entries were chosen.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path

import msgspec

from memlog.eventlog.events import content_hash
from memlog.eventlog.markup import neutral
from memlog.home import Home
from memlog.retrieval.render import diagnostic
from memlog.retrieval.request import Chosen, Injection, Request
from memlog.untrusted import Refused, read_bytes
from memlog.vocabulary import (
    BLOCK_HEADER,
    CONFIDENCE_RANK,
    KB_CATEGORIES,
    LESSONS_NOTE,
    MIN_PER_CATEGORY,
    SECTION_TITLES,
    Confidence,
    KbCategory,
)

CATEGORY_PRIORITY = KB_CATEGORIES

PriorityKey = tuple[int, int, float]
#: the order memory.py reads the files in (its first-seen order breaks ties)
READ_ORDER: tuple[KbCategory, ...] = ("anti-patterns", "patterns", "heuristics")
_COMMENT = re.compile(r"<!--[\s\S]*?-->")
_PIECE = re.compile(r"(?m)^### ")
_NAME_PREFIXES = ("Anti-Pattern: ", "Pattern: ")
_CONFIDENCES: dict[str, Confidence] = {"high": "high", "medium": "medium", "low": "low"}


class LegacyEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One entry as memory.py read it."""

    #: the header with ``Anti-Pattern: `` or ``Pattern: `` taken off
    name: str
    #: the header line as printed: ``### `` and the stripped header text
    header: str
    description: str
    metadata: str
    category: KbCategory
    observation_count: int = 1
    confidence: Confidence = "medium"
    last_observed: str | None = None
    #: the piece of the file the entry is (piece 0 is the text before the first ``### ``)
    position: int
    content_hash: str
    is_global: bool = False


def parse_legacy(text: str, category: KbCategory, is_global: bool = False) -> list[LegacyEntry]:
    """The entries of a knowledge-bank file's text, as memory.py read them."""
    pieces = _PIECE.split(_COMMENT.sub("", text))
    return [
        _legacy_entry(piece, position, category, is_global)
        for position, piece in enumerate(pieces)
        if piece.strip() and not piece.split("\n", 1)[0].startswith(("## ", "# "))
    ]


def _legacy_entry(piece: str, position: int, category: KbCategory, is_global: bool) -> LegacyEntry:
    header, *lines = piece.split("\n")
    cut = next((i for i, line in enumerate(lines) if line.startswith("- ")), len(lines))
    description = "\n".join(lines[:cut]).strip()
    count, confidence, observed = _sort_fields(lines[cut:])
    name = header.strip()
    prefix = next((p for p in _NAME_PREFIXES if name.startswith(p)), "")
    return LegacyEntry(
        name=name[len(prefix) :], header="### " + header.strip(), description=description,
        metadata="\n".join(lines[cut:]).strip(), category=category, observation_count=count,
        confidence=confidence, last_observed=observed, position=position,
        content_hash=content_hash(description), is_global=is_global,
    )  # fmt: skip


def _sort_fields(lines: list[str]) -> tuple[int, Confidence, str | None]:
    """Count, confidence and ``Last observed`` of the metadata lines (the last valid wins)."""
    count, confidence, observed = 1, _CONFIDENCES["medium"], None
    for line in lines:
        lowered, value = line.lower().strip(), line.split(":", 1)[-1].strip()
        if lowered.startswith("- observation count:"):
            count = _number(value, count)
        elif lowered.startswith("- confidence:"):
            confidence = _CONFIDENCES.get(value.lower(), confidence)
        elif lowered.startswith("- last observed:"):
            observed = value
    return count, confidence, observed


def _number(value: str, default: int) -> int:
    """``value`` as Python's ``int`` reads it (memory.py's parse), else ``default``."""
    try:
        return int(value)
    except ValueError:
        return default


def select_legacy(
    local: list[LegacyEntry], global_: list[LegacyEntry], limit: int
) -> list[LegacyEntry]:
    """The entries to inject, grouped by category priority, best first in each."""
    if limit == 0:
        return []
    buckets = sort_into_categories(deduplicate([*local, *global_]))
    taken = allocate({category: len(bucket) for category, bucket in buckets.items()}, limit)
    return [
        entry for category in CATEGORY_PRIORITY for entry in buckets[category][: taken[category]]
    ]


def deduplicate(entries: Iterable[LegacyEntry]) -> list[LegacyEntry]:
    """One entry per content hash, in the order first seen; a strictly higher count wins."""
    kept: dict[str, LegacyEntry] = {}
    for entry in entries:
        held = kept.get(entry.content_hash)
        if held is None or entry.observation_count > held.observation_count:
            kept[entry.content_hash] = entry  # a replacement keeps the first one's place
    return list(kept.values())


def priority_key(entry: LegacyEntry) -> PriorityKey:
    """Ascending sort key: count desc, confidence desc, recency desc (ties stay stable)."""
    return (-entry.observation_count, -CONFIDENCE_RANK[entry.confidence], -recency(entry))


def recency(entry: LegacyEntry) -> float:
    """The ``Last observed`` time when it is an ISO time, else the entry's piece number."""
    stamp = observed_timestamp(entry.last_observed)
    return stamp if stamp is not None else float(entry.position)


def observed_timestamp(value: str | None) -> float | None:
    """POSIX time of an ISO ``Last observed`` value (naive means local time), else None."""
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.strip().replace("Z", "+00:00")).timestamp()
    except (ValueError, OverflowError, OSError):
        return None


def sort_into_categories(entries: Iterable[LegacyEntry]) -> dict[KbCategory, list[LegacyEntry]]:
    """Each category's entries in priority order."""
    buckets: dict[KbCategory, list[LegacyEntry]] = {c: [] for c in CATEGORY_PRIORITY}
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


def render_legacy_block(entries: Sequence[LegacyEntry], note: bool = False) -> str:
    """The markdown block; ``""`` for no entries.  It ends with ``---`` and no newline.
    Each lesson's text is shown neutral (``neutral``: unchanged unless it would break the
    block's frame); ``note``: the line saying what the lessons are under the title."""
    if not entries:
        return ""
    parts = [BLOCK_HEADER, *([LESSONS_NOTE] if note else []), ""]
    for category in CATEGORY_PRIORITY:
        chosen = [entry for entry in entries if entry.category == category]
        if chosen:
            parts.append(SECTION_TITLES[category])
            for entry in chosen:
                text = (neutral(entry.description), neutral(entry.metadata))
                parts += [f"### {neutral(entry.header[4:])}", *filter(None, text), ""]
    parts.append("---")
    return "\n".join(parts)


#: the most of a knowledge-bank file the markdown pipeline reads (a repository's: bounded)
MAX_FILE_BYTES = 16 << 20


def steering(entry: LegacyEntry) -> bool:
    """Whether the scan of lessons holds ``entry`` (read from a repository's knowledge bank,
    never through a door: held here, as a door would)."""
    from memlog.eventlog.steering import scan

    fields = [("name", entry.name), ("description", entry.description),
              ("details", entry.metadata)]  # fmt: skip
    return bool(scan(fields))


def screened_selection(
    local: list[LegacyEntry], global_: list[LegacyEntry], limit: int
) -> tuple[list[LegacyEntry], int]:
    """``select_legacy``'s pick with the project's entries the scan holds left out (only
    those picked are scanned: the pick is made again without them), and how many."""
    left: set[int] = set()
    while True:
        picked = select_legacy([e for e in local if id(e) not in left], global_, limit)
        mine = {id(e) for e in local}
        caught = {id(e) for e in picked if id(e) in mine and steering(e)}
        if not caught:
            return picked, len(left)
        left |= caught


def markdown_injection(request: Request) -> Injection:
    """The cross-project memory spec's pipeline: markdown files only, no SQLite."""
    started = time.perf_counter()
    local, global_ = read_markdown_sources(request.ws.root, request.home)
    picked, caught = screened_selection(local, global_, request.effective_limit)
    # deduplication may keep the global copy of a local entry: origin is the copy chosen
    from_global = {id(e) for e in global_}
    chosen = [
        Chosen(
            id=e.content_hash,
            name=e.header[4:],
            category=e.category,
            origin="global" if id(e) in from_global else "local",
            score=float(e.observation_count),
        )
        for e in picked
    ]
    result = Injection(text="", mode="legacy", chosen=chosen, total=len(local) + len(global_))
    if caught:
        result.notes.append(
            f"{caught} lessons of the project's knowledge bank left out: their text tries to "
            "steer the agent (memlog import them, then memlog review)"
        )
    block = render_legacy_block(picked, note=not request.drop_in)
    if block:  # memory.py printed the block and a newline; memlog says how it chose
        result.text = block + "\n" if request.drop_in else f"{block}\n{diagnostic(result)}\n"
    result.timings["markdown_ms"] = round((time.perf_counter() - started) * 1000, 3)
    return result


def read_markdown_sources(
    root: Path | None, home: Home
) -> tuple[list[LegacyEntry], list[LegacyEntry]]:
    """Entries of the project's knowledge bank and of the global store files."""
    local: list[LegacyEntry] = []
    if root is not None:
        for name in READ_ORDER:
            local += _parsed(root / "docs" / "knowledge-bank" / f"{name}.md", name, False)
    global_ = [e for name in READ_ORDER for e in _parsed(home.markdown(f"{name}.md"), name, True)]
    return local, global_


def _parsed(path: Path, category: KbCategory, is_global: bool) -> list[LegacyEntry]:
    """The entries of ``<category>.md`` at ``path`` (none when it cannot be read)."""
    try:  # read_text turned \r\n and \r into \n, as memory.py's open() did
        data = read_bytes(path, MAX_FILE_BYTES)
    except (OSError, Refused):
        return []
    text = data.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
    return parse_legacy(text, category, is_global)
