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
@click.option(
    "--checked-out", is_flag=True,
    help="What the post-checkout hook runs: the block of the branch now checked out (none "
    "without memory; a CLAUDE.md holding nothing else is removed).",
)  # fmt: skip
@json_option("Print the file, whether it changed and its text as JSON.")
def claude_md(
    directory: Path | None, branch: str | None, write: bool, checked_out: bool, as_json: bool
) -> None:
    """Render the branch memory into DIRECTORY/CLAUDE.md between memlog's markers.

    Every other byte of the file stays as it is; nothing is written without
    --write (or memory_claude_md: true, which keeps it current after each
    extraction).  Written, the block follows the branch checked out: a git
    post-checkout hook rewrites it for the new branch, so one branch's lessons
    never reach sessions on another.
    """
    ws = open_workspace(directory, exact=directory is not None)
    if checked_out:
        done = api.checked_out(ws, directory)
    else:
        done = api.claude_md(ws, directory, branch, write)
    if as_json:
        echo_json({"path": str(done.path), "written": write or checked_out,
                   "changed": done.changed, "created": done.created, "removed": done.removed,
                   "hook": done.hook, "text": done.text})  # fmt: skip
        return
    if not write and not checked_out:
        click.echo(done.text, nl=False)
        return
    if done.hook:
        click.echo(done.hook)
    state = "removed" if done.removed else "created" if done.created else "updated"
    click.echo(f"{done.path}: {state if done.changed else 'unchanged'}")
