"""``memlog replay``: rebuild every view from the log (optionally as it was, elsewhere)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from memlog.api import maintenance
from memlog.commands.common import open_workspace, warn


@click.command()
@click.option("--until", help="Stop after this ISO time or sequence number (needs --to).")
@click.option(
    "--to",
    "target",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write the views into DIR instead of the live home.",
)
def replay(until: str | None, target: Path | None) -> None:
    """Rebuild memory.db and the markdown files from zero, and print their digests."""
    ws = open_workspace()
    maintenance.check_replay(ws, until, target)  # before the log is counted
    total = maintenance.log_lines(ws)
    with click.progressbar(length=total, label="replaying", file=sys.stderr) as bar:
        done = maintenance.replay(ws, until, target, bar.update)
    warn(done.result.notes)
    click.echo(f"events applied: {done.result.applied} (up to seq {done.result.seq})")
    click.echo(f"live entries: {done.result.live_entries}")
    click.echo(f"memory.db digest: {done.sqlite_digest}")
    click.echo(f"markdown digest: {done.markdown_digest}")
