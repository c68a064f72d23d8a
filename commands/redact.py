"""``memlog redact``: take a secret that got in anyway out of the log and every view."""

from __future__ import annotations

import sys
from typing import IO

import click

from memlog.api import redacting
from memlog.commands.base import InputError
from memlog.commands.common import echo_json, open_workspace, warn
from memlog.errors import Unfinished
from memlog.eventlog.events import Redacted

#: the exit status of a redaction that rewrote the log and stopped before the end
UNFINISHED = 3


@click.command()
@click.argument("entry_id", required=False)
@click.option("--match", "match", metavar="TEXT", help="The exact text to remove, wherever it is.")
@click.option(
    "--from",
    "source",
    type=click.File("r", encoding="utf-8"),
    help="Read the text to remove from FILE (- for stdin), so it stays out of shell history.",
)
@click.option("--reason", required=True, help="Why the text is removed (kept in the log).")
@click.option("--json", "as_json", is_flag=True, help="Print what was done as JSON.")
def redact(
    entry_id: str | None, match: str | None, source: IO[str] | None, reason: str, as_json: bool
) -> None:
    """Remove a secret from the log, every view and every copy in the home.

    With ENTRY_ID alone, the secrets the redaction rules find in that entry's
    events; with --match TEXT (or --from FILE), that exact text: in the
    entry's events when ENTRY_ID is given, else everywhere.  The lines that
    hold it are rewritten in place (checksums recomputed, sequence numbers
    and ids kept) and one entry.redacted event records what was removed and
    why, never the text itself.

    Exit 0 when everything was done; 3 when the log was rewritten but a later
    step failed (run the same command again to finish it); 1 or 2 when
    nothing was changed.
    """
    if match is not None and source is not None:
        raise InputError("give the text with --match or --from, not both")
    if source is not None:
        try:
            match = source.read().rstrip("\r\n")
        except UnicodeDecodeError as exc:
            raise InputError(f"--from: not UTF-8 (byte {exc.start}); nothing was changed") from None
    try:
        done = redacting.redact(open_workspace(), entry_id, match, reason)
    except Unfinished as exc:  # the log was rewritten: say so, and how to finish
        click.echo(f"Error: {exc}", err=True)
        sys.exit(UNFINISHED)
    warn(done.notes)
    if as_json:
        echo_json(_summary(done))
        return
    event = done.event
    if event is None:
        click.echo("the text was no longer in the log; removed the copies left in the home")
    else:
        where = f"entries {', '.join(event.ids)}" if event.ids else "no entry text"
        click.echo(
            f"redacted {_count(event)} in {done.events} events ({where}) [seq {event.seq}]; "
            "views rebuilt"
        )
    for name in done.files:
        click.echo(f"  also removed from {name}")
    if done.damaged:
        click.echo(f"  and from {done.damaged} damaged lines of the log")


def _count(event: Redacted) -> str:
    total = sum(r.count for r in event.removed)
    return f"{total} occurrence{'s' if total != 1 else ''}"


def _summary(done: redacting.Redaction) -> dict[str, object]:
    return {
        "event": done.event,
        "events_rewritten": done.events,
        "damaged_lines_scrubbed": done.damaged,
        "files": done.files,
        "notes": done.notes,
    }
