"""``memlog stats``: what the log and its views hold."""

from __future__ import annotations

from typing import Any

import click

from memlog.api import reading
from memlog.commands.common import echo_json, open_workspace, say_empty
from memlog.home import HOOK_ERROR_LOG


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
def stats(as_json: bool) -> None:
    """Count events by type and live entries by category and project."""
    ws = open_workspace()
    figures = reading.stats(ws)
    if reading.is_empty(ws):
        say_empty(as_json)
    if as_json:
        echo_json(figures)
    elif figures["events"] or figures["damaged_lines"]:
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
    embeddings: dict[str, object] = figures["embeddings"]  # type: ignore[assignment]
    click.echo(
        f"embeddings: {embeddings['provider']}/{embeddings['model']}, "
        f"{embeddings['pending']} entries pending (memlog reembed)"
    )
    _print_extraction(figures["extraction"])  # type: ignore[arg-type]
    errors: dict[str, object] = figures["hook_errors"]  # type: ignore[assignment]
    if errors["count"]:
        click.echo(f"hook errors: {errors['count']}; last: {errors['last']} (see {HOOK_ERROR_LOG})")


def _print_extraction(figures: dict[str, Any]) -> None:
    counted = figures["sessions"].items()
    sessions = ", ".join(f"{n} {status}" for status, n in counted if n or status != "elsewhere")
    click.echo(f"sessions ({figures['provider']}): {sessions}")
    for line in reading.cost_said(figures):
        click.echo(f"  {line}")
