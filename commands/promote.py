"""``memlog promote``: send a retrospective's universal entries to the global store."""

from __future__ import annotations

from pathlib import Path
from typing import IO

import click

from memlog.api import capturing
from memlog.commands.base import InputError
from memlog.commands.common import emit, json_option, open_workspace, warn
from memlog.commands.conventions import metered
from memlog.vocabulary import Scope


@click.command()
@click.argument("entry_ids", nargs=-1)
@click.option(
    "--from",
    "json_input",
    type=click.File("rb"),
    help="Observe and promote the entries in FILE (- for stdin): the `memlog observe --from` "
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
    help="With --from: add the files of `git diff --name-only BASE...HEAD` to each entry.",
)
@json_option("Print each entry's scope and reason as JSON.")
def promote(
    entry_ids: tuple[str, ...],
    json_input: IO[bytes] | None,
    scope: Scope | None,
    reason: str,
    project: str | None,
    feature: str,
    project_root: Path | None,
    git_base: str | None,
    as_json: bool,
) -> None:
    """Promote ENTRY_IDS (prefixes are enough), or the entries of --from FILE, by scope.

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
            raise InputError("give entry ids or --from FILE, not both")
        data = json_input.read()
        with metered() as meter:
            done = capturing.promote_input(ws, data, scope, reason, feature, git_base, meter)
    else:
        if not entry_ids:
            raise InputError("give entry ids (prefixes are enough) or --from FILE")
        if git_base is not None:
            raise InputError("--references-from-git works with --from")
        done = capturing.promote_entries(ws, entry_ids, scope, reason, feature)
    warn(done.notes)
    emit(as_json, _as_data(done), lambda: _print(done.report))


def _as_data(done: capturing.Promotion) -> dict[str, object]:
    entries = [{"name": n, "scope": v.scope, "reason": v.reason} for n, v in done.named]
    return {"summary": done.report[0] if done.report else "", "entries": entries}


def _print(report: list[str]) -> None:
    for line in report:
        click.echo(line)
