"""``memlog import``: bring iflow knowledge-bank markdown into the log."""

from __future__ import annotations

from pathlib import Path

import click

from memlog.commands.common import (
    after_append,
    caught_up,
    home,
    open_log,
    warn,
)
from memlog.importer import markdown_files, plan_import
from memlog.projections.sqlite_view import store


@click.command(name="import")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--project", default=None, help="Project of local entries [default: from the path].")
@click.option("--dry-run", is_flag=True, help="Show what would be appended; append nothing.")
def import_(paths: tuple[Path, ...], project: str | None, dry_run: bool) -> None:
    """Import knowledge-bank files (or directories of them) as observations.

    Reads project docs/knowledge-bank/*.md and global store files; importing
    the same files again appends nothing.
    """
    caught_up()
    db = store.connect(home() / store.DB_NAME)
    try:
        existing = store.load_entries(db)
    finally:
        db.close()
    plan = plan_import(markdown_files(paths), existing, project)
    warn(plan.warnings)
    if plan.events and not dry_run:
        open_log("import").append(plan.events)
        warn(after_append(i for e in plan.events for i in e.entry_ids))
    verb = "would append" if dry_run else "appended"
    click.echo(
        f"{plan.parsed} entries in {len(plan.files)} files: {verb} {len(plan.events)} events, "
        f"{plan.unchanged} unchanged"
    )
