"""``memlog setup``: register memlog's hooks and MCP server with Claude Code."""

from __future__ import annotations

from pathlib import Path

import click

from memlog.claude_code.entries import EXECUTABLE, HOOKS, find_executable, hook_group, mcp_server
from memlog.claude_code.settings import (
    Action,
    Change,
    apply,
    diff,
    plan_install,
    plan_uninstall,
    project_targets,
    user_targets,
)
from memlog.commands.common import warn
from memlog.project import find_project_root


@click.command()
@click.option(
    "--project",
    "project_scope",
    is_flag=True,
    help="Write the project's .claude/settings.json and .mcp.json instead of the user files.",
)
@click.option(
    "--project-root",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="The project for --project [default: the current project, else this directory].",
)
@click.option("--uninstall", is_flag=True, help="Remove exactly what memlog setup added.")
@click.option(
    "--dry-run", is_flag=True, help="Print the changes as a unified diff; change nothing."
)
def setup(project_scope: bool, project_root: Path | None, uninstall: bool, dry_run: bool) -> None:
    """Register memlog with Claude Code: its hooks and the MCP server.

    The hooks are SessionStart (memories in), SessionEnd and PreCompact (the
    session recorded for extraction, which runs detached).

    User scope (the default) edits ~/.claude/settings.json and ~/.claude.json;
    --project edits <project>/.claude/settings.json and <project>/.mcp.json,
    which run `memlog` from PATH so they suit everyone sharing the project.
    Only memlog's own entries are touched; every file is backed up beside
    itself before it changes.  Running it twice changes nothing the second
    time.  --uninstall restores a file's bytes from before the install when
    nothing else changed since, and otherwise removes memlog's entries only.
    """
    if project_root is not None and not project_scope:
        raise click.UsageError("--project-root goes with --project")
    if project_scope:
        root = project_root or find_project_root(Path.cwd()) or Path.cwd()
        targets, executable = project_targets(root.resolve()), EXECUTABLE
    else:
        targets, executable = user_targets(Path.home()), find_executable()
    action: Action = "uninstall" if uninstall else "install"
    plan = plan_uninstall if uninstall else plan_install
    changes = plan(targets, executable)
    if dry_run:
        _show(changes)
        return
    backups = apply(changes, action)
    _report(changes, backups)
    if not uninstall:
        _summary(executable, any(c.changed for c in changes))


def _show(changes: list[Change]) -> None:
    for change in changes:
        if change.changed:
            click.echo(diff(change), nl=False)
    if not any(c.changed for c in changes):
        click.echo("nothing to change")


def _report(changes: list[Change], backups: dict[Path, Path]) -> None:
    for change in changes:
        path = change.target.path
        kept = f" (backup: {backups[path].name})" if path in backups else ""
        click.echo(f"{path}: {change.note}{kept}")


def _summary(executable: str, changed: bool) -> None:
    for spec in HOOKS:
        click.echo(f"{spec.event} hook: {hook_group(executable, spec)['hooks'][0]['command']}")
    server = mcp_server(executable)
    click.echo(f"MCP server {server['command']} {' '.join(server['args'])} (as `memlog`)")
    if executable == EXECUTABLE:
        warn(["the entries run `memlog` from PATH; Claude Code must find it there"])
    if changed:
        click.echo("Restart Claude Code (or start a new session) to load them.")
