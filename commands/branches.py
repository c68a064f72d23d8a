"""``memlog branches`` and ``memlog branch``: the memory extracted per git branch."""

from __future__ import annotations

import click

from memlog.api import branches as api
from memlog.commands.base import printable
from memlog.commands.common import echo_json, emit, json_option, open_workspace, warn
from memlog.commands.conventions import HELP_OPTIONS
from memlog.vocabulary import SECTIONS


@click.command()
@click.option("--project", help="Only this project's branches.")
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
def branches(project: str | None, as_json: bool) -> None:
    """List branch memories: live entries by section, and when each last changed."""
    found = api.branches(open_workspace(), project)
    if as_json:
        echo_json(found)
        return
    if not found:
        click.echo("no branch memory yet (memlog memorize extracts it from sessions)")
    for info in found:
        counts = ", ".join(f"{s} {info.sections[s]}" for s in SECTIONS)
        where = f"{info.project or '(no project)'}  {info.branch}"
        click.echo(printable(f"{where}  {info.live} live ({counts})  updated {info.updated}"))


@click.group(context_settings={"help_option_names": HELP_OPTIONS})  # standalone too
def branch() -> None:
    """Show or clear one branch memory."""


@branch.command(name="show")
@click.argument("name")
@click.option("--project", help="The project [default: the current one].")
@click.option("--json", "as_json", is_flag=True, help="Entries and audits as JSON.")
def show(name: str, project: str | None, as_json: bool) -> None:
    """Print the branch memory of NAME, as its markdown file has it, and its audits."""
    view = api.show(open_workspace(), name, project)
    if as_json:
        echo_json(view)
        return
    click.echo(printable(view.text), nl=False)
    if view.audits:
        click.echo("\n## Changes\n")
    for audit in view.audits:
        ops = ", ".join(f"{op.op} {op.entry_id[:8]}" for op in audit.operations if op.op != "keep")
        cost = f" ${audit.usage.cost_micros / 1e6:.4f}" if audit.usage.calls else ""
        note = f" ({audit.note})" if audit.note else ""
        click.echo(printable(f"- {audit.ts} {audit.mode}{cost}: {ops or 'no change'}{note}"))


@branch.command(name="clear")
@click.argument("name")
@click.option("--reason", required=True, help="Why this branch memory no longer holds.")
@click.option("--project", help="The project [default: the current one].")
@json_option("Print the ids of the entries retired as JSON.")
def clear(name: str, reason: str, project: str | None, as_json: bool) -> None:
    """Retire every entry of NAME's branch memory from it; history stays in the log."""
    entries, notes = api.clear(open_workspace(), name, reason, project)
    warn(notes)
    emit(
        as_json,
        {"branch": name, "retired": [e.id for e in entries], "reason": reason.strip()},
        lambda: click.echo(f"cleared {len(entries)} entries from the branch memory of {name}"),
    )
