"""``memlog replay``: rebuild every view from the log (optionally as it was, elsewhere)."""

from __future__ import annotations

from pathlib import Path

import click

from memlog.api import maintenance
from memlog.commands.common import emit, json_option, open_workspace, warn
from memlog.commands.conventions import progress


@click.command()
@click.option("--until", help="Stop after this ISO time or sequence number (needs --to).")
@click.option(
    "--to",
    "target",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write the views into DIR instead of the live home.",
)
@json_option("Print the figures and digests as JSON.")
def replay(until: str | None, target: Path | None, as_json: bool) -> None:
    """Rebuild memory.db and the markdown files from zero, and print their digests."""
    ws = open_workspace()
    maintenance.check_replay(ws, until, target)  # before the log is counted
    total = maintenance.log_lines(ws)
    with progress("replaying", total) as step:
        done = maintenance.replay(ws, until, target, step)
    warn(done.result.notes)
    figures = {
        "folder": str(done.folder),
        "applied": done.result.applied,
        "seq": done.result.seq,
        "live_entries": done.result.live_entries,
        "sqlite_digest": done.sqlite_digest,
        "markdown_digest": done.markdown_digest,
    }
    emit(as_json, figures, lambda: _print(done))


def _print(done: maintenance.Replayed) -> None:
    click.echo(f"events applied: {done.result.applied} (up to seq {done.result.seq})")
    click.echo(f"live entries: {done.result.live_entries}")
    click.echo(f"memory.db digest: {done.sqlite_digest}")
    click.echo(f"markdown digest: {done.markdown_digest}")
