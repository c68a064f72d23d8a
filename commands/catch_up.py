"""``memlog catch-up``: bring the views up to the end of the log."""

from __future__ import annotations

import click

from memlog.api import maintenance
from memlog.commands.common import open_workspace, warn


@click.command("catch-up")
def catch_up() -> None:
    """Apply the events the views have not seen yet (every command does this first).

    The hook starts it in the background when the views are far behind.
    """
    done = maintenance.catch_up(open_workspace())
    warn(done.notes)
    how = "rebuilt" if done.rebuilt else "applied"
    click.echo(f"views at seq {done.seq}: {how} {done.applied} events")
