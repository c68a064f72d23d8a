"""``memlog promote``: send a retrospective's universal entries to the global store."""

from __future__ import annotations

from pathlib import Path
from typing import IO

import click

from memlog.commands.base import InputError
from memlog.commands.common import (
    after_append,
    home,
    open_log,
    refresh_views,
    warn,
)
from memlog.errors import InvalidInput
from memlog.eventlog.events import Observed, Promoted, Scope
from memlog.project import find_project_root
from memlog.projections.fold import Entry
from memlog.projections.queries import find_entry
from memlog.promotion import (
    Candidate,
    ProjectContext,
    Verdict,
    because,
    classify,
    decide,
    entry_text,
    parse_candidates,
    promotion,
    references_from_git,
    report,
    scan_project,
    with_references,
)

Named = list[tuple[str, Verdict]]
Planned = list[Observed | Promoted]


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
    root = project_root or find_project_root(Path.cwd())
    name = project if project is not None else (root.name if root is not None else "")
    context = scan_project(root, name)
    if json_input is not None:
        if entry_ids:
            raise InputError("give entry ids or --json, not both")
        candidates = parse_candidates(json_input.read(), name, feature.strip())
        candidates = _with_defaults(candidates, scope, reason, git_base)
        named, events = _from_candidates(candidates, context)
    else:
        if not entry_ids:
            raise InputError("give entry ids (prefixes are enough) or --json FILE")
        if git_base is not None:
            raise InputError("--references-from-git works with --json")
        named, events = _from_ids(entry_ids, scope, reason, context, feature.strip())
    stored = open_log("promote").append(events)
    _update_views([e for e in stored if isinstance(e, Observed)])
    for line in report(named):
        click.echo(line)


def _with_defaults(
    candidates: list[Candidate], scope: Scope | None, reason: str, git_base: str | None
) -> list[Candidate]:
    """Fill a missing scope from --scope/--reason and references from git."""
    refs = references_from_git(git_base, Path.cwd()) if git_base is not None else []
    if git_base is not None and not refs:
        warn([f"no files changed between {git_base} and HEAD; no references added"])
    filled = []
    for c in candidates:
        if c.scope is None and scope is not None:
            c = c._replace(scope=scope, reason=reason)
        filled.append(c._replace(event=with_references(c.event, refs)))
    return filled


def _from_candidates(candidates: list[Candidate], context: ProjectContext) -> tuple[Named, Planned]:
    named: Named = []
    promotions: Planned = []
    for c in candidates:
        verdict = decide(c, context)
        named.append((c.event.name, verdict))
        promotions.append(promotion(c.event.entry_id, verdict, c.event.project, c.event.feature))
    return named, [*(c.event for c in candidates), *promotions]


def _from_ids(
    entry_ids: tuple[str, ...],
    scope: Scope | None,
    reason: str,
    context: ProjectContext,
    feature: str,
) -> tuple[Named, Planned]:
    warn(refresh_views())  # a global store that cannot be written is only a warning
    entries = [_live_entry(i) for i in entry_ids]
    named: Named = []
    for entry in entries:
        if scope is not None:
            verdict = Verdict(scope, because(scope, reason))
        else:
            verdict = classify(entry_text(entry.name, entry.description), context)
        named.append((entry.name, verdict))
    events: Planned = [
        promotion(e.id, v, context.name, feature) for e, (_, v) in zip(entries, named, strict=True)
    ]
    return named, events


def _live_entry(prefix: str) -> Entry:
    entry = find_entry(home(), prefix)
    if not entry.live:
        raise InvalidInput(f"entry {entry.id} is {entry.status}; only live entries are promoted")
    return entry


def _update_views(observed: list[Observed]) -> None:
    """Update the views, embed and label new entries; a failure is a warning, never an exit."""
    warn(after_append((e.entry_id for e in observed), {e.entry_id: e.keywords for e in observed}))
