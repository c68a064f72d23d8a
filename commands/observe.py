"""``memlog observe``: record what was learned as ``entry.observed`` events."""

from __future__ import annotations

from typing import IO

import click

from memlog.api import capturing
from memlog.commands.base import InputError, printable
from memlog.commands.common import echo_json, json_option, open_workspace, warn
from memlog.commands.conventions import metered
from memlog.eventlog import secrets
from memlog.eventlog.events import Observed
from memlog.vocabulary import CATEGORIES, CONFIDENCES, SOURCES


@click.command()
@click.option("--name", help="Short title of the entry.")
@click.option("--description", help="What was learned (its text decides the entry id).")
@click.option("--category", type=click.Choice(CATEGORIES), help="Kind of entry.")
@click.option("--reasoning", default="", help="Why it matters and how it was found.")
@click.option("--confidence", type=click.Choice(CONFIDENCES), default="medium", show_default=True)
@click.option("--keyword", "keywords", multiple=True, help="A keyword label (repeatable, ≤10).")
@click.option("--reference", "references", multiple=True, help="A related file (repeatable).")
@click.option(
    "--references-from-git",
    "git_base",
    metavar="BASE",
    help="Add the files of `git diff --name-only BASE...HEAD` to the references of every entry.",
)
@click.option("--project", default=None, help="Project name [default: the current project].")
@click.option("--feature", default="", help="Feature the entry came from.")
@click.option("--source", type=click.Choice(SOURCES), default="manual", show_default=True)
@click.option(
    "--from",
    "json_input",
    type=click.File("rb"),
    help="Read entries from FILE (- for stdin): one JSON object per line, stored as one batch.",
)
@click.option("--no-redact", is_flag=True, help="Keep text that looks like a secret.")
@click.option(
    "--revive", is_flag=True, help="Bring a retired or superseded entry back (else it stays so)."
)
@json_option("Print the stored events as JSON.")
@click.option("--print-json", is_flag=True, hidden=True, help="Old spelling of --json.")
def observe(
    name: str | None,
    description: str | None,
    category: str | None,
    reasoning: str,
    confidence: str,
    keywords: tuple[str, ...],
    references: tuple[str, ...],
    git_base: str | None,
    project: str | None,
    feature: str,
    source: str,
    json_input: IO[bytes] | None,
    no_redact: bool,
    revive: bool,
    as_json: bool,
    print_json: bool,
) -> None:
    """Record one entry from options, or many from --from FILE, as observations."""
    if print_json:
        warn(["--print-json is deprecated and memlog 0.3 drops it: use --json"])
    ws = open_workspace(project=project)
    changed: list[str] = []  # what was changed in the input (keywords normalised, capped)
    if json_input is not None:
        given = [n for n, v in (("name", name), ("description", description)) if v]
        if given or category or reasoning or keywords or references:
            raise InputError("--from cannot be combined with entry options")
        events = capturing.observations(json_input.read(), ws.project, changed, not no_redact)
    else:
        missing = [
            f"--{n}"
            for n, v in (("name", name), ("description", description), ("category", category))
            if not v
        ]
        if missing:
            raise InputError(f"missing {', '.join(missing)} (or give --from FILE)")
        item = {
            "name": name,
            "description": description,
            "category": category,
            "reasoning": reasoning,
            "confidence": confidence,
            "keywords": list(keywords),
            "references": list(references),
            "project": ws.project,
            "feature": feature,
            "source": source,
        }
        events = [capturing.observation(item, changed, not no_redact)]
    with metered() as meter:
        done = capturing.observe(
            ws, events, references_base=git_base, redact=not no_redact, revive=revive,
            meter=meter,
        )  # fmt: skip
    warn(changed + done.notes)
    _report(done.stored, as_json or print_json)


def _report(stored: list[Observed], as_json: bool) -> None:
    if as_json:
        echo_json(stored)
        return
    for event in stored:
        note = f" (redacted {secrets.describe(event.redactions)})" if event.redactions else ""
        click.echo(printable(f"observed {event.entry_id}  {event.name}  [seq {event.seq}]{note}"))
