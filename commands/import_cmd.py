"""``memlog import``: bring iflow knowledge-bank markdown into the log."""

from __future__ import annotations

from pathlib import Path

import click

from memlog.api import capturing
from memlog.commands.common import emit, json_option, open_workspace, warn
from memlog.commands.conventions import metered


@click.command(name="import")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--project", default=None, help="Project of local entries [default: from the path].")
@click.option("--dry-run", is_flag=True, help="Show what would be appended; append nothing.")
@json_option("Print what was read and appended as JSON.")
def import_(paths: tuple[Path, ...], project: str | None, dry_run: bool, as_json: bool) -> None:
    """Import knowledge-bank files (or directories of them) as observations.

    Reads project docs/knowledge-bank/*.md and global store files; importing
    the same files again appends nothing.
    """
    ws = open_workspace()
    with metered() as meter:
        done = capturing.import_files(ws, paths, project, dry_run, meter)
    plan = done.plan
    warn(plan.warnings)
    warn(done.notes)
    verb = "would append" if dry_run else "appended"
    figures = {
        "files": plan.files,
        "entries": plan.parsed,
        "events": len(plan.events),
        "unchanged": plan.unchanged,
        "dry_run": dry_run,
        "warnings": plan.warnings,
    }
    emit(
        as_json,
        figures,
        lambda: click.echo(
            f"{plan.parsed} entries in {len(plan.files)} files: {verb} {len(plan.events)} "
            f"events, {plan.unchanged} unchanged"
        ),
    )
