"""``memlog verify``: check the log, audit the views, move damaged lines out."""

from __future__ import annotations

import sys

import click

from memlog.api import maintenance, reading
from memlog.commands.common import echo_json, open_workspace, say_empty
from memlog.eventlog.verify import Report, lost_summary
from memlog.projections.audit import Audit


@click.command()
@click.option("--repair", is_flag=True, help="Move bad lines to the quarantine file, then check.")
@click.option("--log-only", is_flag=True, help="Check the log but do not audit the views.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def verify(repair: bool, log_only: bool, as_json: bool) -> None:
    """Check every checksum, schema and sequence number, then rebuild the views aside
    and compare them with the live ones. Exit 0 only when all is clean."""
    ws = open_workspace()
    if reading.is_empty(ws) and not ws.home.db.exists():
        say_empty(as_json)
        if as_json:
            echo_json(maintenance.verify(ws, False, True)._asdict())
        return
    done = maintenance.verify(ws, repair, log_only)
    if as_json:
        echo_json(done._asdict())
    else:
        _print(done.log, done.moved, done.views)
    if not done.clean:
        sys.exit(1)


def _print(report: Report, moved: list[str], views: Audit | None) -> None:
    for line in moved:
        click.echo(line)
    segments = f"{report.segments} segment{'s' if report.segments != 1 else ''}"
    click.echo(f"log: {report.events} events in {segments}, last seq {report.last_seq}")
    if report.acknowledged_gaps:
        click.echo(f"log: {lost_summary(report.acknowledged_gaps)}")
    for problem in report.problems():
        click.echo(f"problem: {problem}", err=True)
    click.echo("log: clean" if report.clean else f"log: {len(report.problems())} problems")
    if views is None:
        return
    for line in views.drift:
        click.echo(f"drift: {line}", err=True)
    click.echo(f"views: {'match a rebuild from the log' if views.clean else 'drift found'}")
