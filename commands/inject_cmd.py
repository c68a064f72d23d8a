"""``memlog inject``: what the SessionStart hook would inject (and the iflow drop-in)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from memlog.api import reading, recall
from memlog.commands.base import printable
from memlog.commands.common import echo_json, open_workspace, say_empty, warn


@click.command()
@click.argument(
    "project_dir", required=False, type=click.Path(exists=True, file_okay=False, path_type=Path)
)
@click.option("--project-root", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Project root (as iflow's memory.py took it); implies --record.")  # fmt: skip
@click.option("--limit", type=click.IntRange(min=-1), help="Entries at most (0 none, -1 all).")
@click.option("--global-store", type=click.Path(file_okay=False, path_type=Path),
              help="The memlog home holding the global store [default: MEMLOG_HOME].")  # fmt: skip
@click.option("--record/--no-record", default=None, help="Record the recall as the hook does.")
@click.option("--explain", is_flag=True, help="Show every score component of every entry.")
@click.option("--json", "as_json", is_flag=True, help="Print the injection as JSON.")
def inject(
    project_dir: Path | None,
    project_root: Path | None,
    limit: int | None,
    global_store: Path | None,
    record: bool | None,
    explain: bool,
    as_json: bool,
) -> None:
    """Print the memories the hook would inject for the project whose root is PROJECT_DIR.

    PROJECT_DIR and --project-root name the same thing, the project's root, and give the
    same block; without either, the project the current directory is in, found as the
    hook finds it from the session's directory.  --project-root also records the recall
    (the drop-in for iflow's memory.py).
    """
    if project_dir is not None and project_root is not None:
        raise click.UsageError("give the project's root once: PROJECT_DIR or --project-root")
    where = project_root or project_dir
    ws = open_workspace(where, exact=where is not None, home=global_store)
    remember = record if record is not None else project_root is not None
    result = recall.inject(ws, limit, remember=remember, drop_in=project_root is not None)
    warn(result.notes)
    if not result.chosen and project_root is None and reading.is_empty(ws):
        say_empty(as_json)
    if as_json:
        echo_json(result)
    elif explain:
        print_explain(result)
    else:
        click.echo(printable(result.text) if _terminal() else result.text, nl=False)


def print_explain(result: recall.Injection) -> None:
    if result.context is not None and result.context != result.query:
        click.echo(f"context (memlog search ranks it the same): {result.context!r}")
    click.echo(f"mode: {result.mode}; query: {result.query!r}; candidates: {result.total}")
    click.echo(f"vector matches: {result.vector_matches}; fts5 matches: {result.fts_matches}")
    for chosen in result.chosen:
        click.echo(
            printable(f"\n{chosen.score:.4f}  {chosen.id}  {chosen.category}  {chosen.name}")
        )
        parts = ", ".join(f"{k}={v:.4f}" for k, v in chosen.components.items())
        if parts:
            click.echo(f"  {parts}")


def _terminal() -> bool:
    """Whether stdout is a terminal (the block goes verbatim to whatever reads a pipe, as
    iflow's ``memory.py`` printed it; a terminal sees control characters escaped, as ls)."""
    return sys.stdout.isatty()
