"""``memlog show``: one entry and its whole history."""

from __future__ import annotations

import click

from memlog.api import reading
from memlog.commands.base import printable
from memlog.commands.common import echo_json, open_workspace, say_empty
from memlog.eventlog import secrets
from memlog.eventlog.events import Event, Influenced, Redacted
from memlog.projections.fold import Entry
from memlog.projections.markdown_view import layout

_SHOWN = (
    "id", "name", "category", "status", "observation_count", "confidence", "recall_count",
    "last_recalled_at", "created_at", "updated_at", "source", "source_project", "promoted",
)  # fmt: skip


@click.command()
@click.argument("entry_id")
@click.option("--json", "as_json", is_flag=True, help="Print entry and events as JSON.")
def show(entry_id: str, as_json: bool) -> None:
    """Print the entry ENTRY_ID (a unique prefix is enough) and every event about it."""
    ws = open_workspace()
    if reading.is_empty(ws):  # like list, stats and search: no error, one line
        say_empty(as_json)
        if as_json:
            echo_json(None)
        return
    entry = reading.entry(ws, entry_id)
    history = reading.history(ws, entry.id, entry.description)
    if as_json:
        echo_json({"entry": reading.public(entry), "events": history})
        return
    _print_entry(entry)
    for event in history:
        if isinstance(event, Redacted):
            click.echo(printable(_lineage(event)))
    click.echo(f"\nhistory ({len(history)} events):")
    for event in history:
        click.echo(printable(f"  {event.seq:>7}  {event.ts}  {_describe(event)}"))


def _print_entry(entry: Entry) -> None:
    for field in _SHOWN:
        click.echo(printable(f"{field}: {getattr(entry, field)}"))
    click.echo(printable(f"last_observed: {layout.last_observed(entry)}"))
    click.echo(printable(f"description: {entry.description}"))
    for field in ("reasoning", "keywords", "references", "provenance", "details"):
        value = getattr(entry, field)
        if value:
            text = value if isinstance(value, str) else ", ".join(value)
            click.echo(printable(f"{field}: {text}"))
    if entry.vectors:
        click.echo(printable(f"vectors: {', '.join(sorted(entry.vectors))}"))
    if entry.status_reason:
        click.echo(printable(f"status reason: {entry.status_reason}"))
    click.echo(printable(f"use: {reading.use_of(entry)}"))
    if entry.proposal:
        click.echo(
            printable(
                f"proposed: retire ({entry.proposal}): memlog maintenance "
                f"--confirm {entry.id} retires it, --dismiss {entry.id} keeps it"
            )
        )


def _describe(event: Event) -> str:
    tag = reading.tag(event)
    extra = getattr(event, "reason", "") or getattr(event, "source", "") or ""
    if isinstance(event, Influenced):
        said = f": {event.evidence}" if event.evidence else ""
        extra = f"{event.verdict} in session {event.session_id} ({event.source}){said}"
    removed = f" (redacted {secrets.describe(event.redactions)})" if event.redactions else ""
    return f"{tag} {extra}".rstrip() + removed


def _lineage(event: Redacted) -> str:
    """``redacted on 2026-11-23 because … (from events 1, 3: description, keywords)``."""
    seqs = ", ".join(str(s) for s in sorted({r.seq for r in event.removed}))
    fields = ", ".join(sorted({r.field for r in event.removed}))
    return (
        f"redacted on {event.ts[:10]} (seq {event.seq}) because {event.reason} "
        f"(removed from events {seqs}: {fields})"
    )
