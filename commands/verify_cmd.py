"""``memlog verify``: check the log, audit the views, move damaged lines out."""

from __future__ import annotations

import sys

import click

from memlog.commands.common import current_space, echo_json, home, open_log
from memlog.eventlog.verify import Report, repair_log, verify_log
from memlog.projections.audit import Audit, audit


@click.command()
@click.option("--repair", is_flag=True, help="Move bad lines to the quarantine file, then check.")
@click.option("--log-only", is_flag=True, help="Check the log but do not audit the views.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def verify(repair: bool, log_only: bool, as_json: bool) -> None:
    """Check every checksum, schema and sequence number, then rebuild the views aside
    and compare them with the live ones. Exit 0 only when all is clean."""
    log = open_log("verify")
    moved = repair_log(log) if repair else []
    report = verify_log(log)
    views = None if log_only else audit(home(), current_space())
    clean = report.clean and (views is None or views.clean)
    if as_json:
        echo_json({"clean": clean, "moved": moved, "log": report, "views": views})
    else:
        _print(report, moved, views)
    if not clean:
        sys.exit(1)


def _print(report: Report, moved: list[str], views: Audit | None) -> None:
    for line in moved:
        click.echo(line)
    segments = f"{report.segments} segment{'s' if report.segments != 1 else ''}"
    click.echo(f"log: {report.events} events in {segments}, last seq {report.last_seq}")
    if report.acknowledged_gaps:
        click.echo(f"log: {len(report.acknowledged_gaps)} sequence numbers lost to quarantine")
    for problem in report.problems():
        click.echo(f"problem: {problem}", err=True)
    click.echo("log: clean" if report.clean else f"log: {len(report.problems())} problems")
    if views is None:
        return
    for line in views.drift:
        click.echo(f"drift: {line}", err=True)
    click.echo(f"views: {'match a rebuild from the log' if views.clean else 'drift found'}")
