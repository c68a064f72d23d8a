"""``memlog maintenance``: weekly consolidation and monthly reindex."""

from __future__ import annotations

from datetime import UTC, datetime

import click

from memlog.api import memorize as api
from memlog.capture.extraction.maintenance import due
from memlog.commands.common import echo_json, open_workspace, warn


@click.command()
@click.option("--weekly", "tasks", flag_value="weekly", help="Consolidate changed branch memories.")
@click.option("--monthly", "tasks", flag_value="monthly", help="Re-check vectors and labels.")
@click.option("--full", "tasks", flag_value="full", help="Both, now.")
@click.option("--json", "as_json", is_flag=True, help="Print what ran as JSON.")
def maintenance(tasks: str | None, as_json: bool) -> None:
    """Run the maintenance that is due (or the task named, now).

    Weekly: up to 20 branch memories changed since the last run are evolved
    again (duplicates merged, conflicts resolved, as events).  Monthly: live
    entries get the vectors and keyword labels they lack.
    """
    ws = open_workspace()
    ws.catch_up()
    if tasks is None:
        chosen = due(ws.home, datetime.now(UTC))
    else:
        chosen = ["weekly", "monthly"] if tasks == "full" else [tasks]
    done = api.run_maintenance(ws, chosen) if chosen else []
    if as_json:
        echo_json(done)
        return
    if not done:
        click.echo("no maintenance is due")
    for task in done:
        weekly = task.task == "weekly"
        what = f"{len(task.branches)} branches" if weekly else f"{task.entries} entries"
        click.echo(f"{task.task}: {what}")
        warn(task.notes)
