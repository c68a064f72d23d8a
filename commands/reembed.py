"""``memlog reembed``: give every live entry a vector in the configured space."""

from __future__ import annotations

import sys

import click

from memlog.api import maintenance
from memlog.commands.common import emit, json_option, open_workspace, warn
from memlog.commands.conventions import progress


@click.command()
@click.option(
    "--all", "everything", is_flag=True, help="Re-embed every live entry, not only pending."
)
@json_option("Print how many entries were embedded and how many are left as JSON.")
def reembed(everything: bool, as_json: bool) -> None:
    """Embed live entries lacking a vector for the configured provider+model.

    Works in batches (50 entries, 256 with the local model), one entry.reembedded
    event per entry; a rate limit stops it cleanly and the next run continues
    where it stopped.
    """
    ws = open_workspace()
    space = ws.space
    entries = maintenance.to_embed(ws, everything)
    figures: dict[str, object] = {"provider": space.provider, "model": space.model}
    if not entries:
        figures.update(embedded=0, pending=0, stopped="")
        emit(as_json, figures, lambda: click.echo(f"nothing to embed for {space.key}"))
        return
    with progress("embedding", len(entries)) as step:
        outcome, notes = maintenance.reembed(ws, entries, step)
    warn(notes)
    figures.update(embedded=outcome.embedded, pending=outcome.pending, stopped=outcome.stopped)
    emit(
        as_json,
        figures,
        lambda: click.echo(f"embedded {outcome.embedded} entries with {space.key}"),
    )
    if outcome.stopped:
        click.echo(f"stopped: {outcome.stopped} ({outcome.pending} pending)", err=True)
        sys.exit(3)
