"""``memlog promote``: send a retrospective's universal entries to the global store."""

from __future__ import annotations

from pathlib import Path
from typing import IO

import click

from memlog.api import capturing
from memlog.commands.base import InputError
from memlog.commands.common import open_workspace, warn
from memlog.vocabulary import Scope


@click.command()
@click.argument("entry_ids", nargs=-1)
@click.option(
    "--json",
    "json_input",
    type=click.File("rb"),
    help="Observe and promote the entries in FILE (- for stdin): the `memlog observe --json` "
    "lines, each with optional `scope` (universal|project) and `reason`.",
)
@click.option(
    "--scope",
    type=click.Choice(("universal", "project")),
    help="The retrospective's judgement [default: classify each entry].",
)
@click.option("--reason", default="", help="Why that scope (needs --scope).")
@click.option("--project", default=None, help="Project name [default: the current project].")
@click.option("--feature", default="", help="Feature the entries came from.")
@click.option(
    "--project-root",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Project tree the classifier reads [default: the current project's root].",
)
@click.option(
    "--references-from-git",
    "git_base",
    metavar="BASE",
    help="With --json: add the files of `git diff --name-only BASE...HEAD` to each entry.",
)
def promote(
    entry_ids: tuple[str, ...],
    json_input: IO[bytes] | None,
    scope: Scope | None,
    reason: str,
    project: str | None,
    feature: str,
    project_root: Path | None,
    git_base: str | None,
) -> None:
    """Promote ENTRY_IDS (prefixes are enough), or the entries of --json, by scope.

    Universal entries go to the global store; project-specific ones stay
    with their project.  Without a scope from the retrospective, an entry
    naming a file path, the project or a name in its tree is
    project-specific, any other universal.  Promoting an entry that exists
    already adds to its count and provenance; it never makes a copy.
    """
    if reason.strip() and scope is None:
        raise InputError("--reason needs --scope")
    where = project_root.resolve() if project_root is not None else None
    ws = open_workspace(where, exact=project_root is not None, project=project)
    if json_input is not None:
        if entry_ids:
            raise InputError("give entry ids or --json, not both")
        done = capturing.promote_input(ws, json_input.read(), scope, reason, feature, git_base)
    else:
        if not entry_ids:
            raise InputError("give entry ids (prefixes are enough) or --json FILE")
        if git_base is not None:
            raise InputError("--references-from-git works with --json")
        done = capturing.promote_entries(ws, entry_ids, scope, reason, feature)
    warn(done.notes)
    for line in done.report:
        click.echo(line)
