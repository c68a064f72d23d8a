"""``memlog reembed``: give every live entry a vector in the configured space."""

from __future__ import annotations

import sys

import click

from memlog.commands.common import (
    caught_up,
    current_space,
    home,
    open_log,
    project_config,
    refresh_views,
    warn,
)
from memlog.embeddings.reembed import embed_entries, pending_entries
from memlog.embeddings.registry import make_provider
from memlog.projections.sqlite_view import store


@click.command()
@click.option(
    "--all", "everything", is_flag=True, help="Re-embed every live entry, not only pending."
)
def reembed(everything: bool) -> None:
    """Embed live entries lacking a vector for the configured provider+model.

    Works in batches of 50, one entry.reembedded event per entry; a rate
    limit stops it cleanly and the next run continues where it stopped.
    """
    space = current_space()
    caught_up()
    db = store.connect(home() / store.DB_NAME)
    try:
        entries = pending_entries(db, space, everything=everything)
    finally:
        db.close()
    if not entries:
        click.echo(f"nothing to embed for {space.provider}/{space.model}")
        return
    provider = make_provider(project_config(), home())
    try:
        with click.progressbar(length=len(entries), label="embedding", file=sys.stderr) as bar:
            outcome = embed_entries(open_log("reembed"), entries, provider, space, bar.update)
    finally:
        provider.close()
    warn(refresh_views())
    click.echo(f"embedded {outcome.embedded} entries with {space.provider}/{space.model}")
    if outcome.stopped:
        click.echo(f"stopped: {outcome.stopped} ({outcome.pending} pending)", err=True)
        sys.exit(3)
