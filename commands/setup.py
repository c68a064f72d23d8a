"""``memlog setup``: register memlog's hooks and MCP server with Claude Code."""

from __future__ import annotations

from pathlib import Path

import click

from memlog.api.health import extraction_notice
from memlog.claude_code import plugin
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
from memlog.commands.common import echo_json, json_option, warn
from memlog.project import find_project_root
from memlog.workspace import Workspace


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
@json_option("Print the files changed (or the diffs, with --dry-run) as JSON.")
def setup(
    project_scope: bool, project_root: Path | None, uninstall: bool, dry_run: bool, as_json: bool
) -> None:
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

    When the memlog plugin is installed and enabled it already provides both,
    so setup adds nothing and removes entries of its own that would run twice.
    Last, it says which provider extraction uses, what it sends and the daily
    budget.
    """
    if project_root is not None and not project_scope:
        raise click.UsageError("--project-root goes with --project")
    root: Path | None = None
    if project_scope:
        root = (project_root or find_project_root(Path.cwd()) or Path.cwd()).resolve()
        targets, executable = project_targets(root), EXECUTABLE
    else:
        targets, executable = user_targets(Path.home()), find_executable()
    plugins = plugin.covering(plugin.installed(Path.home()), root)
    removing = uninstall or bool(plugins)
    action: Action = "uninstall" if removing else "install"
    changes = (plan_uninstall if removing else plan_install)(targets, executable)
    if dry_run:
        _show(changes, as_json)
        return
    backups = apply(changes, action)
    report = _report(changes, backups)
    said = extraction_notice(Workspace.open(root or Path.cwd()))
    if as_json:
        found = {"action": action, "plugin": [p.describe() for p in plugins], "files": report}
        echo_json({**found, "extraction": said})
        return
    for line in report:
        click.echo(f"{line['path']}: {line['note']}{_kept(line)}")
    if plugins:
        _plugin_note(plugins, uninstall, any(c.changed for c in changes))
    elif not uninstall:
        _summary(executable, any(c.changed for c in changes))
    if not uninstall:
        click.echo(said)


def _show(changes: list[Change], as_json: bool) -> None:
    if as_json:
        echo_json([{"path": str(c.target.path), "diff": diff(c)} for c in changes if c.changed])
        return
    for change in changes:
        if change.changed:
            click.echo(diff(change), nl=False)
    if not any(c.changed for c in changes):
        click.echo("nothing to change")


def _report(changes: list[Change], backups: dict[Path, Path]) -> list[dict[str, str]]:
    lines = []
    for change in changes:
        path = change.target.path
        backup = backups[path].name if path in backups else ""
        lines.append({"path": str(path), "note": change.note, "backup": backup})
    return lines


def _kept(line: dict[str, str]) -> str:
    return f" (backup: {line['backup']})" if line["backup"] else ""


def _plugin_note(plugins: list[plugin.PluginInstall], uninstall: bool, changed: bool) -> None:
    if uninstall:
        return
    names = ", ".join(p.describe() for p in plugins)
    click.echo(
        f"the memlog {names} already runs the hooks and the MCP server: "
        "memlog setup adds neither, so nothing runs twice"
    )
    if changed:
        click.echo("memlog setup's own entries were removed; restart Claude Code to load that.")


def _summary(executable: str, changed: bool) -> None:
    for spec in HOOKS:
        click.echo(f"{spec.event} hook: {hook_group(executable, spec)['hooks'][0]['command']}")
    server = mcp_server(executable)
    click.echo(f"MCP server {server['command']} {' '.join(server['args'])} (as `memlog`)")
    if executable == EXECUTABLE:
        warn(["the entries run `memlog` from PATH; Claude Code must find it there"])
    if changed:
        click.echo("Restart Claude Code (or start a new session) to load them.")
