"""``memlog list``: browse entries by category, project, branch, status and source."""

from __future__ import annotations

import click

from memlog.api import reading
from memlog.commands.base import printable
from memlog.commands.common import echo_json, json_option, open_workspace, say_empty, warn
from memlog.projections.fold import Entry
from memlog.vocabulary import CATEGORIES, SOURCES


@click.command("list")
@click.option("--category", type=click.Choice(CATEGORIES), help="Only this category.")
@click.option("--project", help="Only entries seen in this project.")
@click.option("--branch", help="Only entries recorded on this git branch.")
@click.option(
    "--status",
    type=click.Choice((*reading.STATUSES, "any")),
    default="live",
    show_default=True,
    help="Entries in this state (any: all of them).",
)
@click.option("--source", type=click.Choice(SOURCES), help="Only entries from this source.")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True)
@click.option("--offset", type=click.IntRange(min=0), default=0, help="Skip this many first.")
@json_option("Print the total and the entries as JSON.")
def list_(
    category: str | None,
    project: str | None,
    branch: str | None,
    status: str,
    source: str | None,
    limit: int,
    offset: int,
    as_json: bool,
) -> None:
    """List entries, most recently updated first."""
    ws = open_workspace()
    if reading.is_empty(ws):
        say_empty(as_json)
        if as_json:
            echo_json({"total": 0, "entries": []})
        return
    filters = reading.Filters(
        category=category,
        project=(project or "").strip() or None,
        branch=(branch or "").strip() or None,
        status=None if status == "any" else status,
        source=source,
    )
    found, notes = reading.list_entries(ws, filters, limit, offset)
    warn(notes)
    if as_json:
        echo_json({"total": found.total, "entries": [reading.public(e) for e in found.entries]})
        return
    for entry in found.entries:
        click.echo(_line(entry))
    shown = f"{offset + 1}-{offset + len(found.entries)} of " if found.entries else ""
    click.echo(f"{shown}{found.total} entries", err=True)


def _line(entry: Entry) -> str:
    status = "" if entry.live else f"  [{entry.status}]"
    name = printable(entry.name)
    return f"{entry.id}  {entry.category:<13}  {entry.updated_at[:10]}  {name}{status}"
