"""``memlog stale``: the lessons whose cited files are gone from the project."""

from __future__ import annotations

from pathlib import Path

import click

from memlog.api import reading
from memlog.commands.base import printable
from memlog.commands.common import echo_json, emit, json_option, open_workspace, say_empty


@click.command()
@click.option("--project", "project_dir", type=click.Path(exists=True, file_okay=False,
              path_type=Path), help="The project's folder [default: the one here].")  # fmt: skip
@click.option("--all", "partly", is_flag=True,
              help="Also the lessons that miss some, not all, of what they cite.")  # fmt: skip
@json_option("Print the lessons and what each misses as JSON.")
def stale(project_dir: Path | None, partly: bool, as_json: bool) -> None:
    """List the lessons seen in the project whose cited files are all gone from its
    working tree (git ls-files at its commit; symbols by git grep -w), with what is gone.

    A lesson learned in another project is not checked here; one that cites no file is
    never stale; one whose cited function is still found somewhere is not stale either.
    """
    ws = open_workspace(project_dir, exact=project_dir is not None)
    if reading.is_empty(ws):
        say_empty(as_json)
        if as_json:
            echo_json([])
        return
    found = reading.stale(ws, partly)
    rows = [
        {"id": s.entry.id, "name": s.entry.name, "stale": s.checked.stale,
         "cites": list(s.checked.cited.files), "symbols": list(s.checked.cited.symbols),
         "gone": list(s.checked.gone_files), "gone_symbols": list(s.checked.gone_symbols)}
        for s in found
    ]  # fmt: skip
    emit(as_json, rows, lambda: _print(rows, ws.project))


def _print(rows: list[dict[str, object]], project: str) -> None:
    if not rows:
        click.echo(f"no stale lessons in {project}")
        return
    for row in rows:
        gone = [*row["gone"], *row["gone_symbols"]]  # type: ignore[misc]
        kind = "stale" if row["stale"] else "partly"
        click.echo(printable(f"{row['id']}  {kind:<6}  {row['name']}"))
        click.echo(printable(f"    gone: {', '.join(gone)}"))
