"""``memlog reembed``: give every live entry a vector in the configured space."""

from __future__ import annotations

import sys

import click

from memlog.api import maintenance
from memlog.commands.common import open_workspace, warn


@click.command()
@click.option(
    "--all", "everything", is_flag=True, help="Re-embed every live entry, not only pending."
)
def reembed(everything: bool) -> None:
    """Embed live entries lacking a vector for the configured provider+model.

    Works in batches (50 entries, 256 with the local model), one entry.reembedded
    event per entry; a rate limit stops it cleanly and the next run continues
    where it stopped.
    """
    ws = open_workspace()
    space = ws.space
    entries = maintenance.to_embed(ws, everything)
    if not entries:
        click.echo(f"nothing to embed for {space.provider}/{space.model}")
        return
    with click.progressbar(length=len(entries), label="embedding", file=sys.stderr) as bar:
        outcome, notes = maintenance.reembed(ws, entries, bar.update)
    warn(notes)
    click.echo(f"embedded {outcome.embedded} entries with {space.provider}/{space.model}")
    if outcome.stopped:
        click.echo(f"stopped: {outcome.stopped} ({outcome.pending} pending)", err=True)
        sys.exit(3)
