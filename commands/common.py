"""What commands share: opening the workspace once, printing JSON and warnings."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import msgspec

from memlog.api.adoption import adopt, pending_store
from memlog.api.reading import NO_MEMORIES
from memlog.commands.base import said
from memlog.commands.conventions import metered
from memlog.home import Home
from memlog.workspace import Workspace


def open_workspace(
    where: Path | None = None,
    *,
    exact: bool = False,
    home: Home | Path | None = None,
    project: str | None = None,
) -> Workspace:
    """The workspace of the project at ``where`` (default: here); config warnings printed,
    and an iflow global store found in the home adopted before anything else."""
    ws = Workspace.open(where, exact=exact, home=home)
    warn([f"config: {w}" for w in ws.warnings])
    if project is not None:
        ws = Workspace(ws.home, ws.root, ws.config, ws.warnings, project_name=project)
    adopt_store(ws)
    return ws


def adopt_store(ws: Workspace) -> None:
    """Import an iflow global store waiting in the home (and say so); cheap when none is."""
    if not pending_store(ws.home):
        return
    with metered() as meter:
        done = adopt(ws, meter=meter)
    if done is not None:
        warn([*done.notes, done.line] if done.events else done.notes)


def echo_json(value: Any) -> None:
    """Print ``value`` as JSON (msgspec handles Structs, tuples and bytes)."""
    click.echo(msgspec.json.encode(value).decode("utf-8"))


def emit(as_json: bool, value: Any, text: Callable[[], None]) -> None:
    """Print ``value`` as JSON with ``--json``, else run ``text`` to print it for people."""
    if as_json:
        echo_json(value)
    else:
        text()


def json_option(help: str = "Print the result as JSON.") -> Callable[[Any], Any]:
    """The ``--json`` flag every command that prints takes."""
    return click.option("--json", "as_json", is_flag=True, help=help)


def say_empty(as_json: bool) -> None:
    """The one line a reading command prints on a home with no memories yet (stderr when
    stdout carries JSON)."""
    click.echo(f"memlog: {NO_MEMORIES}" if as_json else NO_MEMORIES, err=as_json)


def warn(lines: list[str]) -> None:
    """Each line on stderr, as ``memlog: …``: printable, and no secret the rules know."""
    for line in lines:
        click.echo(f"memlog: {said(line)}", err=True)
