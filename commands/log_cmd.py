"""``memlog log``: list the events of the log."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator

import click

from memlog.commands.common import open_log
from memlog.eventlog.codec import ENCODER
from memlog.eventlog.events import TYPE_NAMES, Event, Observed
from memlog.timefilter import Bound, parse_bound, within


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
    lower = parse_bound(since) if since else None
    upper = parse_bound(until) if until else None
    matching = _matching(set(types), entry, lower, upper)
    shown = deque(matching, maxlen=limit) if limit is not None else matching
    for event in shown:
        click.echo(ENCODER.encode(event).decode("utf-8") if as_json else _line(event))


def _matching(
    types: set[str], entry: str | None, since: Bound | None, until: Bound | None
) -> Iterator[Event]:
    for record in open_log("log").read():
        event = record.event
        if types and _tag(event) not in types:
            continue
        if entry and not any(i.startswith(entry) for i in event.entry_ids):
            continue
        if within(event.seq, event.ts, since, until):
            yield event


def _tag(event: Event) -> str:
    return str(event.__struct_config__.tag)


def _line(event: Event) -> str:
    ids = ",".join(event.entry_ids)
    return f"{event.seq:>7}  {event.ts}  {_tag(event):<17} {ids}  {_summary(event)}".rstrip()


def _summary(event: Event) -> str:
    if isinstance(event, Observed):
        return f"{event.category}: {event.name}"
    for field in ("reason", "query", "model", "provider"):
        value = getattr(event, field, "")
        if value:
            return str(value)
    return ""
