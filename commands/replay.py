"""``memlog replay``: rebuild every view from the log (optionally as it was, elsewhere)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from memlog.commands.common import InputError, current_space, home, warn
from memlog.eventlog.log import EventLog
from memlog.projections.views import db_path, markdown_digest, rebuild, sqlite_digest
from memlog.timefilter import parse_bound


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
    if until and target is None:
        raise InputError("--until needs --to DIR (the live views always follow the whole log)")
    bound = parse_bound(until) if until else None
    source = home()
    if target is not None and target.resolve() == source.resolve():
        raise InputError("--to must be another directory than the memlog home")
    total = _count_lines(EventLog(source))
    with click.progressbar(length=total, label="replaying", file=sys.stderr) as bar:
        result = rebuild(source, current_space(), bound, target, bar.update)
    warn(result.notes)
    folder = target or source
    click.echo(f"events applied: {result.applied} (up to seq {result.seq})")
    click.echo(f"live entries: {result.live_entries}")
    click.echo(f"memory.db digest: {sqlite_digest(db_path(folder))}")
    click.echo(f"markdown digest: {markdown_digest(folder)}")


def _count_lines(log: EventLog) -> int:
    total = 0
    for path in log.segments():
        with open(path, "rb") as handle:
            while chunk := handle.read(8 << 20):
                total += chunk.count(b"\n")
    return total
