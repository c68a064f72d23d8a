"""``memlog verify``: check the log, and move damaged lines out of it."""

from __future__ import annotations

import sys

import click

from memlog.commands.common import echo_json, open_log
from memlog.eventlog.verify import Report, repair_log, verify_log


@click.command()
@click.option("--repair", is_flag=True, help="Move bad lines to the quarantine file, then check.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def verify(repair: bool, as_json: bool) -> None:
    """Check every checksum, schema and sequence number; exit 0 only when clean."""
    log = open_log("verify")
    moved = repair_log(log) if repair else []
    report = verify_log(log)
    if as_json:
        echo_json({"clean": report.clean, "moved": moved, "log": report})
    else:
        _print(report, moved)
    if not report.clean:
        sys.exit(1)


def _print(report: Report, moved: list[str]) -> None:
    for line in moved:
        click.echo(line)
    click.echo(
        f"log: {report.events} events in {report.segments} segments, last seq {report.last_seq}"
    )
    if report.acknowledged_gaps:
        click.echo(f"log: {len(report.acknowledged_gaps)} sequence numbers lost to quarantine")
    for problem in report.problems():
        click.echo(f"problem: {problem}", err=True)
    click.echo("log: clean" if report.clean else f"log: {len(report.problems())} problems")
