"""The injected block: entries under their category headings, then the D10 line.

An entry is injected whole (its header, description and every metadata line)
or condensed to fit the budget (``retrieval.budget``): its header, its
description and the one metadata line that says most about what to do.  Every
lesson's text is shown neutral (``neutral``: it can open no heading, fence, role
or tag of its own), and one another device wrote (none of its observations is
this machine's) is marked ``FOREIGN_MARK`` in its title.
"""

from __future__ import annotations

from collections.abc import Collection

from memlog.eventlog.markup import neutral, one_line
from memlog.projections.fold import Entry
from memlog.retrieval.request import Injection
from memlog.vocabulary import (
    BLOCK_HEADER,
    FOREIGN_MARK,
    LESSONS_NOTE,
    PROVENANCE_KEYS,
    SECTION_TITLES,
    STALE_KEY,
    TYPE_NAMES,
)

#: the injected block's first lines: its title, and what its lessons are
INJECTED_HEADER = f"{BLOCK_HEADER}\n{LESSONS_NOTE}"

#: characters of the query the diagnostic line shows
QUERY_SHOWN = 60
#: metadata keys that say what to do, the most useful first (a condensed entry keeps one)
USEFUL_KEYS = (
    "instead", "fix", "solution", "how to apply", "key insight", "key", "benefit",
    "root cause", "example", "implementation",
)  # fmt: skip
#: the longest metadata line a condensed entry keeps
CONDENSED_LINE_CHARS = 300
#: the label of a Claude Code auto memory's body among an entry's lines
NATIVE_SOURCE = "claude-code"


def title(entry: Entry, foreign: bool = False) -> str:
    name = one_line(entry.name) + (f" {FOREIGN_MARK}" if foreign else "")
    if entry.category == "heuristics":
        return name
    return f"{TYPE_NAMES.get(entry.category, 'Fact')}: {name}"


def entry_block(entry: Entry, foreign: bool = False) -> str:
    """An entry as injected: header, description, its metadata lines (``foreign``: marked
    as another device's)."""
    lines = [
        f"### {title(entry, foreign)}",
        neutral(entry.description),
        *(f"- {one_line(d)}" for d in entry.details),
    ]
    if entry.reasoning:
        label = "Memory" if entry.source == NATIVE_SOURCE else "Why"
        lines.append(f"- {label}: {one_line(entry.reasoning)}")
    if entry.references:
        lines.append(f"- References: {one_line(', '.join(entry.references))}")
    lines.append(f"- Observation count: {entry.observation_count}")
    lines.append(f"- Confidence: {entry.confidence}")
    return "\n".join(lines)


def condensed_block(entry: Entry, foreign: bool = False) -> str:
    """An entry condensed: header, description, its stale mark if any, and its most useful
    metadata line."""
    line = useful_line(entry)
    marks = [f"- {one_line(d)}" for d in entry.details if d.startswith(f"{STALE_KEY}: ")]
    lines = [f"### {title(entry, foreign)}", neutral(entry.description), *marks,
             *([f"- {line}"] if line else [])]  # fmt: skip
    return "\n".join(lines)


def useful_line(entry: Entry) -> str:
    """The one metadata line that says most about what to do ("" when none does)."""
    keyed = [(d.partition(":")[0].strip().lower(), d) for d in entry.details]
    for key in USEFUL_KEYS:
        found = next((d for k, d in keyed if k == key), None)
        if found is not None:
            return _short(found)
    if entry.reasoning:
        return _short(_reasoning_line(entry))
    other = next((d for k, d in keyed if k not in PROVENANCE_KEYS), "")
    return _short(other)


def _reasoning_line(entry: Entry) -> str:
    """``Why: …``, or an auto memory's ``How to apply:`` line when its body has one."""
    for line in entry.reasoning.splitlines():
        bare = line.strip().replace("**", "")
        if bare.lower().startswith("how to apply:"):
            return bare
    label = "Memory" if entry.source == NATIVE_SOURCE else "Why"
    return f"{label}: {' '.join(entry.reasoning.split())}"


def _short(line: str) -> str:
    text = one_line(line)
    if len(text) <= CONDENSED_LINE_CHARS:
        return text
    return text[: CONDENSED_LINE_CHARS - 1].rsplit(" ", 1)[0] + "…"


def render_semantic(
    entries: list[Entry],
    result: Injection,
    condensed: Collection[str] = (),
    header: str = INJECTED_HEADER,
    footer: str | None = None,
    foreign: Collection[str] = (),
) -> str:
    """The block for ``entries`` (already in their injected order), or "" for none; the
    entries of ``condensed`` (ids) condensed, those of ``foreign`` marked as another
    device's; ``footer``: its last line (default: D10's)."""
    if not entries:
        return ""
    parts = [header]
    for category, heading in SECTION_TITLES.items():
        blocks = [
            condensed_block(e, e.id in foreign)
            if e.id in condensed
            else entry_block(e, e.id in foreign)
            for e in entries
            if e.category == category
        ]
        if blocks:
            parts.append(heading + "\n" + "\n\n".join(blocks))
    last = diagnostic(result) if footer is None else footer
    return "\n\n".join(parts) + "\n\n---\n" + last + "\n"


def diagnostic(result: Injection) -> str:
    """The D10 line that says how the memories were chosen."""
    count = len(result.chosen)
    if result.mode == "legacy":
        local = sum(1 for c in result.chosen if c.origin == "local")
        origins = f"{local} local, {count - local} global"
        return f"*Memory: {count} entries ({origins}) | semantic: disabled*"
    shown = (result.query or "")[:QUERY_SHOWN]
    state = f"active (vector={result.vector_matches}, fts5={result.fts_matches})"
    return (
        f'*Memory: {count} entries from {result.total} | semantic: {state} | context: "{shown}..." '
        f"| model: {result.model}*"
    )
