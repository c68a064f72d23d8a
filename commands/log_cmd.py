"""``memlog log``: list the events of the log."""

from __future__ import annotations

from collections.abc import Iterable

import click

from memlog.api import reading
from memlog.commands.base import printable
from memlog.commands.common import open_workspace, say_empty
from memlog.eventlog.codec import ENCODER
from memlog.eventlog.events import TYPE_NAMES, Event, Observed


@click.command()
@click.option("--type", "types", multiple=True, type=click.Choice(TYPE_NAMES), help="Event type.")
@click.option("--entry", help="Only events about this entry id (a prefix is enough).")
@click.option("--since", help="From this ISO time or sequence number (inclusive).")
@click.option("--until", help="Up to this ISO time or sequence number (inclusive).")
@click.option("--limit", type=click.IntRange(min=0), help="Only the last N matching events.")
@click.option("--json", "as_json", is_flag=True, help="One JSON event per line.")
def log(
    types: tuple[str, ...],
    entry: str | None,
    since: str | None,
    until: str | None,
    limit: int | None,
    as_json: bool,
) -> None:
    """List events in log order, oldest first."""
    ws = open_workspace()
    if reading.is_empty(ws):
        say_empty(as_json)
        return
    if limit is not None:
        shown: Iterable[tuple[int, Event]] = reading.last(ws, limit, types, entry, since, until)
    else:
        shown = reading.numbered(ws, types, entry, since, until)
    for number, event in shown:
        line = ENCODER.encode(event).decode("utf-8") if as_json else printable(_line(number, event))
        click.echo(line)


def _line(number: int, event: Event) -> str:
    ids = ",".join(event.entry_ids)
    tag = reading.tag(event)
    return f"{number:>7}  {event.ts}  {tag:<17} {ids}  {_summary(event)}".rstrip()


def _summary(event: Event) -> str:
    if isinstance(event, Observed):
        return f"{event.category}: {event.name}"
    for field in ("reason", "query", "model", "provider", "mode", "task"):
        value = getattr(event, field, "")
        if value:
            return str(value)
    return ""
