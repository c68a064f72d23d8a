"""The ``memlog`` command line.

Subcommands are imported only when invoked, so ``memlog hook`` pays for
nothing it does not use.  Library errors become one line on stderr and a
non-zero exit; no traceback ever reaches a user (it goes to ``errors.log``).
"""

from __future__ import annotations

import importlib
import os
from typing import Any

import click

from memlog import __version__
from memlog.commands.base import as_click_error

COMMANDS = {
    "observe": ("memlog.commands.observe", "observe"),
    "log": ("memlog.commands.log_cmd", "log"),
    "verify": ("memlog.commands.verify_cmd", "verify"),
    "stats": ("memlog.commands.stats", "stats"),
    "replay": ("memlog.commands.replay", "replay"),
    "show": ("memlog.commands.show", "show"),
    "retire": ("memlog.commands.retire", "retire"),
    "import": ("memlog.commands.import_cmd", "import_"),
    "hook": ("memlog.commands.hook", "hook"),
    "inject": ("memlog.commands.inject_cmd", "inject"),
    "search": ("memlog.commands.search", "search"),
    "reembed": ("memlog.commands.reembed", "reembed"),
    "promote": ("memlog.commands.promote", "promote"),
    "setup": ("memlog.commands.setup", "setup"),
    "serve-mcp": ("memlog.commands.serve_mcp", "serve_mcp"),
    "catch-up": ("memlog.commands.catch_up", "catch_up"),
    "memorize": ("memlog.commands.memorize", "memorize"),
    "branches": ("memlog.commands.branches", "branches"),
    "branch": ("memlog.commands.branches", "branch"),
    "maintenance": ("memlog.commands.maintenance_cmd", "maintenance"),
    "claude-md": ("memlog.commands.claude_md", "claude_md"),
    "redact": ("memlog.commands.redact", "redact"),
}


class LazyGroup(click.Group):
    """A group whose commands load on first use and whose errors are one line."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        command: click.Command = getattr(importlib.import_module(target[0]), target[1])
        return command

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except Exception as exc:  # noqa: BLE001 - the one place a failure becomes a line
            raise as_click_error(exc) from None


@click.group(cls=LazyGroup)
@click.version_option(__version__, prog_name="memlog")
def cli() -> None:
    """memlog: persistent engineering memory for Claude Code.

    Every change is an event appended to a checksummed log under
    $MEMLOG_HOME (default ~/.claude/iflow/memory); everything else is
    rebuilt from it.
    """


def main() -> None:
    os.umask(0o077)  # every file memlog creates is private to its user
    cli(prog_name="memlog")
