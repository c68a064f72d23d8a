"""``memlog claude-md``: the branch memory block in a project's CLAUDE.md."""

from __future__ import annotations

from pathlib import Path

import click

from memlog.api import branches as api
from memlog.commands.common import echo_json, json_option, open_workspace


@click.command(name="claude-md")
@click.argument("directory", required=False,
                type=click.Path(exists=True, file_okay=False, path_type=Path))  # fmt: skip
@click.option("--branch", help="The branch [default: the one checked out].")
@click.option("--write", is_flag=True, help="Write CLAUDE.md (else print what it would hold).")
@json_option("Print the file, whether it changed and its text as JSON.")
def claude_md(directory: Path | None, branch: str | None, write: bool, as_json: bool) -> None:
    """Render the branch memory into DIRECTORY/CLAUDE.md between memlog's markers.

    Every other byte of the file stays as it is; nothing is written without
    --write (or memory_claude_md: true, which keeps it current after each
    extraction).
    """
    ws = open_workspace(directory, exact=directory is not None)
    done = api.claude_md(ws, directory, branch, write)
    if as_json:
        echo_json({"path": str(done.path), "written": write, "changed": done.changed,
                   "text": done.text})  # fmt: skip
    elif not write:
        click.echo(done.text, nl=False)
    elif done.changed:
        click.echo(f"{done.path}: updated")
    else:
        click.echo(f"{done.path}: unchanged")
