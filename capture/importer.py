"""Importing iflow knowledge-bank markdown as observations.

Each parsed entry becomes an ``entry.observed`` event with source ``import``
carrying its stated count, confidence, ``Last observed`` value, the file it
came from and its other metadata lines.  Entries of a global store file are
also promoted.  Importing the same files again appends nothing; a stated
count that grew is appended and the fold takes it as stated, never summed.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import msgspec

from memlog.eventlog.events import EventBase, Observed, Promoted, content_hash
from memlog.projections.fold import Entry
from memlog.projections.markdown_view.kb_parser import ParsedEntry, parse_file
from memlog.projections.markdown_view.layout import split_source
from memlog.untrusted import shown

#: metadata kept in fields of their own: the count, the confidence, ``Last observed``, the id
_OWN_KEYS = {"observation count", "confidence", "last observed", "content-hash"}
#: a global store entry's ``Source`` and ``Tags`` are kept in its layout (and its provenance)
_STORE_KEYS = _OWN_KEYS | {"source", "tags"}


class ImportPlan(msgspec.Struct):
    """What an import would append, and what it noticed on the way."""

    events: list[EventBase] = msgspec.field(default_factory=list)
    parsed: int = 0
    unchanged: int = 0
    files: list[str] = msgspec.field(default_factory=list)
    warnings: list[str] = msgspec.field(default_factory=list)


def markdown_files(paths: Iterable[Path]) -> list[Path]:
    """The markdown files named, or found directly inside the directories named."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            kb = path / "docs" / "knowledge-bank"
            found += sorted((kb if kb.is_dir() else path).glob("*.md"))
        else:
            found.append(path)
    return found


def project_of(path: Path) -> str:
    """``<root>/docs/knowledge-bank/x.md`` belongs to the project ``root``."""
    parts = path.resolve().parts
    if len(parts) >= 4 and parts[-3:-1] == ("docs", "knowledge-bank"):
        return parts[-4]
    return ""


def _details(entry: ParsedEntry) -> tuple[str, ...]:
    keys = _STORE_KEYS if entry.is_global else _OWN_KEYS
    return tuple(f"{k}: {v}" if k else v for k, v in entry.metadata if k.lower() not in keys)


def layout(entry: ParsedEntry) -> tuple[str, ...]:
    """A global store entry's header and metadata lines as written (nothing for others)."""
    if not entry.is_global:
        return ()
    header, *lines = entry.raw.split("\n")
    first = next((i for i, line in enumerate(lines) if line.startswith("- ")), len(lines))
    return (header[4:].strip(), *lines[first:])


def _global_source(entry: ParsedEntry) -> tuple[str, str]:
    """``Source: project, Feature #023`` of a global store entry, as project and feature."""
    return split_source(next((v for k, v in entry.metadata if k.lower() == "source"), ""))


def observation(entry: ParsedEntry, project: str) -> Observed:
    feature = ""
    if entry.is_global:
        project, feature = _global_source(entry)
    description = entry.description.strip() or entry.name
    return Observed(
        name=entry.name,
        description=description,
        category=entry.category,
        confidence=entry.confidence,
        source="import",
        project=project,
        feature=feature,
        count=entry.observation_count,
        last_observed=entry.last_observed or "",
        origin=entry.source_path,
        details=_details(entry),
        layout=layout(entry),
        revive=False,  # a retired entry stays retired when a file still holds it
    )


def _needed(event: Observed, promote: bool, known: Entry | None) -> list[EventBase]:
    events: list[EventBase] = []
    stale = known is None or known.observation_count < (event.count or 1)
    if stale or event.origin not in known.origins:  # type: ignore[union-attr]
        events.append(event)
    if promote and not (known is not None and known.promoted):
        events.append(Promoted(entry_id=event.entry_id, reason="imported from global store"))
    return events


def plan_import(
    files: Iterable[Path], existing: dict[str, Entry], project: str | None = None
) -> ImportPlan:
    """The events that bring ``existing`` in line with the files (nothing when it already is)."""
    plan = ImportPlan()
    seen: dict[str, Entry] = dict(existing)
    for path in files:
        result = parse_file(path)
        plan.warnings += result.warnings
        if result.skipped:
            continue
        plan.files.append(str(path))
        for entry in result.entries:
            _plan_entry(plan, seen, entry, project if project is not None else project_of(path))
    return plan


def _plan_entry(
    plan: ImportPlan, seen: dict[str, Entry], parsed: ParsedEntry, project: str
) -> None:
    plan.parsed += 1
    if not parsed.description.strip():
        plan.warnings.append(
            f"{parsed.source_path}:{parsed.line}: {shown(parsed.name)} has no description; "
            "imported with its name as description"
        )
    event = observation(parsed, project)
    needed = _needed(event, parsed.is_global, seen.get(event.entry_id))
    if not needed:
        plan.unchanged += 1
        return
    plan.events += needed
    seen[event.entry_id] = _after(seen.get(event.entry_id), event, parsed.is_global)


def _after(known: Entry | None, event: Observed, promoted: bool) -> Entry:
    """A stand-in for the entry once the planned events apply (for duplicates in one run)."""
    count = max(known.observation_count if known else 0, event.count or 1)
    origins = (known.origins if known else []) + [event.origin]
    return Entry(
        id=content_hash(event.description), name=event.name, description=event.description,
        category=event.category, created_at="", updated_at="", source="import",
        observation_count=count, origins=origins,
        promoted=promoted or bool(known and known.promoted),
    )  # fmt: skip
