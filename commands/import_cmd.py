"""``memlog import``: bring iflow knowledge-bank markdown into the log."""

from __future__ import annotations

from pathlib import Path

import click

from memlog.api import capturing
from memlog.commands.common import emit, json_option, open_workspace, warn
from memlog.commands.conventions import metered
from memlog.vocabulary import counted


@click.command(name="import")
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--project", default=None, help="Project of local entries [default: from the path].")
@click.option("--claude-memory", is_flag=True,
              help="Read Claude Code's auto memory folders instead (never changed).")  # fmt: skip
@click.option("--dry-run", is_flag=True, help="Show what would be appended; append nothing.")
@json_option("Print what was read and appended as JSON.")
def import_(
    paths: tuple[Path, ...], project: str | None, claude_memory: bool, dry_run: bool, as_json: bool
) -> None:
    """Import knowledge-bank files (or directories of them) as observations.

    Reads project docs/knowledge-bank/*.md and global store files; importing
    the same files again appends nothing.  With --claude-memory, records
    Claude Code's own auto memory instead: every project's folder under
    ~/.claude/projects (CLAUDE_CONFIG_DIR) and the one autoMemoryDirectory
    names; a file edited since supersedes its entry, a file removed retires it.
    """
    if claude_memory:
        if paths or project:
            raise click.UsageError("--claude-memory takes no PATHS and no --project")
        _import_claude_memory(dry_run, as_json)
        return
    if not paths:
        raise click.UsageError("give the files or folders to import (or --claude-memory)")
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
            f"{counted(plan.parsed, 'entry', 'entries')} in "
            f"{counted(len(plan.files), 'file')}: {verb} "
            f"{counted(len(plan.events), 'event')}, {plan.unchanged} unchanged"
        ),
    )


def _import_claude_memory(dry_run: bool, as_json: bool) -> None:
    ws = open_workspace()
    with metered() as meter:
        done = capturing.import_claude_memory(ws, None, dry_run, meter)
    warn(done.notes)
    plan = done.plan
    figures = {
        "folders": plan.folders, "files": plan.files, "added": plan.added, "edited": plan.edited,
        "removed": plan.removed, "unchanged": plan.unchanged, "events": len(plan.events),
        "dry_run": dry_run,
    }  # fmt: skip
    verb = "would append" if dry_run else "appended"
    emit(
        as_json,
        figures,
        lambda: click.echo(
            f"{counted(plan.files, 'auto memory file')} in "
            f"{counted(len(plan.folders), 'folder')}: {plan.added} new, {plan.edited} edited, "
            f"{plan.removed} removed, {plan.unchanged} unchanged; "
            f"{verb} {counted(len(plan.events), 'event')}"
        ),
    )
