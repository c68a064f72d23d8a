"""``memlog retire``: take an entry out of retrieval and the markdown view."""

from __future__ import annotations

import click

from memlog.api import capturing
from memlog.commands.base import printable
from memlog.commands.common import emit, json_option, open_workspace, warn


@click.command()
@click.argument("entry_id")
@click.option("--reason", required=True, help="Why the entry no longer holds.")
@json_option("Print the retired entry's id and name as JSON.")
def retire(entry_id: str, reason: str, as_json: bool) -> None:
    """Retire ENTRY_ID (a unique prefix is enough); its history stays in the log."""
    entry, notes = capturing.retire(open_workspace(), entry_id, reason)
    warn(notes)
    emit(
        as_json,
        {"retired": entry.id, "name": entry.name, "reason": reason.strip()},
        lambda: click.echo(printable(f"retired {entry.id}  {entry.name}")),
    )
