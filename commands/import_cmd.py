"""``memlog import``: bring iflow knowledge-bank markdown into the log."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from memlog.api import capturing
from memlog.commands.common import open_workspace, warn


@click.command(name="import")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--project", default=None, help="Project of local entries [default: from the path].")
@click.option("--dry-run", is_flag=True, help="Show what would be appended; append nothing.")
def import_(paths: tuple[Path, ...], project: str | None, dry_run: bool) -> None:
    """Import knowledge-bank files (or directories of them) as observations.

    Reads project docs/knowledge-bank/*.md and global store files; importing
    the same files again appends nothing.
    """
    ws = open_workspace()
    if dry_run or not sys.stderr.isatty():
        done = capturing.import_files(ws, paths, project, dry_run)
    else:  # a terminal: show the embedding's progress, sized by a first dry run
        count = capturing.import_files(ws, paths, project, dry_run=True).plan.new_entries
        with click.progressbar(length=count, label="embedding", file=sys.stderr) as bar:
            done = capturing.import_files(ws, paths, project, progress=bar.update)
    plan = done.plan
    warn(plan.warnings)
    warn(done.notes)
    verb = "would append" if dry_run else "appended"
    click.echo(
        f"{plan.parsed} entries in {len(plan.files)} files: {verb} {len(plan.events)} events, "
        f"{plan.unchanged} unchanged"
    )
