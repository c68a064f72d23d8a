"""``memlog catch-up``: bring the views up to the end of the log."""

from __future__ import annotations

import click

from memlog.api import maintenance
from memlog.commands.common import emit, json_option, open_workspace, warn


@click.command("catch-up")
@json_option("Print where the views stand as JSON.")
def catch_up(as_json: bool) -> None:
    """Apply the events the views have not seen yet (every command does this first).

    The hook starts it in the background when the views are far behind.
    """
    done = maintenance.catch_up(open_workspace())
    warn(done.notes)
    how = "rebuilt" if done.rebuilt else "applied"
    figures = {"seq": done.seq, "applied": done.applied, "rebuilt": done.rebuilt}
    line = f"views at seq {done.seq}: {how} {done.applied} events"
    emit(as_json, figures, lambda: click.echo(line))
