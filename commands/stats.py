"""``memlog stats``: what the log and its views hold."""

from __future__ import annotations

from collections import Counter

import click

from memlog.commands.common import echo_json, open_log


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
def stats(as_json: bool) -> None:
    """Count events by type (damaged lines are counted apart)."""
    log = open_log("stats")
    damaged: list[object] = []
    counts = Counter(str(r.event.__struct_config__.tag) for r in log.read(on_damage=damaged.append))
    figures = {
        "home": str(log.home),
        "events": counts.total(),
        "by_type": dict(sorted(counts.items())),
        "damaged_lines": len(damaged),
        "segments": len(log.segments()),
    }
    if as_json:
        echo_json(figures)
        return
    click.echo(f"home: {figures['home']}")
    click.echo(f"events: {figures['events']} in {figures['segments']} segments")
    for name, count in figures["by_type"].items():  # type: ignore[attr-defined]
        click.echo(f"  {name}: {count}")
    if damaged:
        click.echo(f"damaged lines: {len(damaged)} (run memlog verify)")
