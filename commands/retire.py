"""``memlog retire``: take an entry out of retrieval and the markdown view."""

from __future__ import annotations

import click

from memlog.api import capturing
from memlog.commands.common import open_workspace, warn


@click.command()
@click.argument("entry_id")
@click.option("--reason", required=True, help="Why the entry no longer holds.")
def retire(entry_id: str, reason: str) -> None:
    """Retire ENTRY_ID (a unique prefix is enough); its history stays in the log."""
    entry, notes = capturing.retire(open_workspace(), entry_id, reason)
    warn(notes)
    click.echo(f"retired {entry.id}  {entry.name}")
