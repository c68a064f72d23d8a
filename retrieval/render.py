"""The injected block: entries under their category headings, then the D10 line."""

from __future__ import annotations

from memlog.projections.fold import Entry
from memlog.retrieval.request import Injection
from memlog.vocabulary import BLOCK_HEADER, SECTION_TITLES, TYPE_NAMES

#: characters of the query the diagnostic line shows
QUERY_SHOWN = 60


def entry_block(entry: Entry) -> str:
    """An entry as injected: header, description, its metadata lines."""
    title = (
        entry.name
        if entry.category == "heuristics"
        else f"{TYPE_NAMES[entry.category]}: {entry.name}"
    )
    lines = [f"### {title}", entry.description, *(f"- {d}" for d in entry.details)]
    if entry.reasoning:
        lines.append(f"- Why: {' '.join(entry.reasoning.split())}")
    if entry.references:
        lines.append(f"- References: {', '.join(entry.references)}")
    lines.append(f"- Observation count: {entry.observation_count}")
    lines.append(f"- Confidence: {entry.confidence}")
    return "\n".join(lines)


def render_semantic(entries: list[Entry], result: Injection) -> str:
    """The block for ``entries`` (already in their injected order), or "" for none."""
    if not entries:
        return ""
    parts = [BLOCK_HEADER]
    for category, title in SECTION_TITLES.items():
        blocks = [entry_block(e) for e in entries if e.category == category]
        if blocks:
            parts.append(title + "\n" + "\n\n".join(blocks))
    return "\n\n".join(parts) + "\n\n---\n" + diagnostic(result) + "\n"


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
