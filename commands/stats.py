"""``memlog stats``: what the log and its views hold."""

from __future__ import annotations

from collections import Counter

import click

from memlog.commands.common import caught_up, echo_json, home, open_log
from memlog.eventlog.log import Damage
from memlog.projections.queries import entry_counts


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
def stats(as_json: bool) -> None:
    """Count events by type and live entries by category and project."""
    log = open_log("stats")
    damaged: list[Damage] = []
    counts = Counter(str(r.event.__struct_config__.tag) for r in log.read(on_damage=damaged.append))
    caught_up()
    figures: dict[str, object] = {
        "home": str(log.home),
        "events": counts.total(),
        "by_type": dict(sorted(counts.items())),
        "damaged_lines": len(damaged),
        "segments": len(log.segments()),
        "entries": entry_counts(home()),
    }
    if as_json:
        echo_json(figures)
    else:
        _print(figures)


def _print(figures: dict[str, object]) -> None:
    click.echo(f"home: {figures['home']}")
    click.echo(f"events: {figures['events']} in {figures['segments']} segments")
    for name, count in figures["by_type"].items():  # type: ignore[attr-defined]
        click.echo(f"  {name}: {count}")
    if figures["damaged_lines"]:
        click.echo(f"damaged lines: {figures['damaged_lines']} (run memlog verify)")
    entries: dict[str, dict[str, int]] = figures["entries"]  # type: ignore[assignment]
    click.echo(f"live entries: {entries['live']}")
    for group in ("by_category", "by_project"):
        for name, count in entries[group].items():
            click.echo(f"  {name}: {count}")
