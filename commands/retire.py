"""``memlog retire``: take an entry out of retrieval and the markdown view."""

from __future__ import annotations

import click

from memlog.commands.common import caught_up, home, open_log, refresh_views, warn
from memlog.errors import InvalidInput
from memlog.eventlog.events import Retired
from memlog.projections.queries import find_entry


@click.command()
@click.argument("entry_id")
@click.option("--reason", required=True, help="Why the entry no longer holds.")
def retire(entry_id: str, reason: str) -> None:
    """Retire ENTRY_ID (a unique prefix is enough); its history stays in the log."""
    caught_up()
    entry = find_entry(home(), entry_id)
    if not entry.live:
        raise InvalidInput(f"entry {entry.id} is already {entry.status}")
    if not reason.strip():
        raise InvalidInput("--reason is empty")
    open_log("retire").append([Retired(entry_id=entry.id, reason=reason.strip())])
    warn(refresh_views())
    click.echo(f"retired {entry.id}  {entry.name}")
