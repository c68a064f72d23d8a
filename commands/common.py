"""What commands share: opening the workspace once, printing JSON and warnings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import msgspec

from memlog.workspace import Workspace


def open_workspace(
    where: Path | None = None,
    *,
    exact: bool = False,
    home: Path | None = None,
    project: str | None = None,
) -> Workspace:
    """The workspace of the project at ``where`` (default: here); config warnings printed."""
    ws = Workspace.open(where, exact=exact, home=home)
    warn([f"config: {w}" for w in ws.warnings])
    if project is not None:
        ws = Workspace(ws.home, ws.root, ws.config, ws.warnings, project_name=project)
    return ws


def echo_json(value: Any) -> None:
    """Print ``value`` as JSON (msgspec handles Structs, tuples and bytes)."""
    click.echo(msgspec.json.encode(value).decode("utf-8"))


def warn(lines: list[str]) -> None:
    for line in lines:
        click.echo(f"memlog: {line}", err=True)
