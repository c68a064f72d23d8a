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
from memlog.commands.base import as_click_error, said
from memlog.commands.conventions import (
    DEPRECATED_JSON_INPUT,
    HELP_OPTIONS,
    finish,
    legacy_input,
    silence_stdout,
)

COMMANDS = {
    "observe": ("memlog.commands.observe", "observe"),
    "log": ("memlog.commands.log_cmd", "log"),
    "verify": ("memlog.commands.verify_cmd", "verify"),
    "stats": ("memlog.commands.stats", "stats"),
    "replay": ("memlog.commands.replay", "replay"),
    "show": ("memlog.commands.show", "show"),
    "retire": ("memlog.commands.retire", "retire"),
    "review": ("memlog.commands.review", "review"),
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
    "list": ("memlog.commands.list_cmd", "list_"),
    "doctor": ("memlog.commands.doctor", "doctor"),
    "ui": ("memlog.commands.ui", "ui"),
    "redact": ("memlog.commands.redact", "redact"),
    "sync": ("memlog.commands.sync", "sync"),
    "stale": ("memlog.commands.stale_cmd", "stale"),
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

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name, command, rest = super().resolve_command(ctx, args)
        if command is not None:
            rest, old = legacy_input(command, rest)
            if old:
                click.echo(f"memlog: {DEPRECATED_JSON_INPUT}", err=True)
        return name, command, rest

    def invoke(self, ctx: click.Context) -> Any:
        given = (list(ctx._protected_args), list(ctx.args))  # (consumed by the first call)
        try:
            return super().invoke(ctx)
        except click.exceptions.ClickException as exc:
            vars(exc)["message"] = said(exc.message)  # a value echoed back (``'AKIA…' is…``)
            raise
        except (click.exceptions.Exit, click.Abort):
            raise
        except BrokenPipeError:  # the reader left (`memlog log | head`): not a failure
            silence_stdout()
            raise click.exceptions.Exit(0) from None
        except Exception as exc:  # noqa: BLE001 - the one place a failure becomes a line
            if not _heals(ctx, exc):
                raise as_click_error(exc) from None
        ctx._protected_args, ctx.args = given
        try:  # the views were damaged and are rebuilt: a command that only reads runs again
            return super().invoke(ctx)
        except Exception as exc:  # noqa: BLE001
            raise as_click_error(exc) from None


#: commands that only read the views: one that finds them damaged (SQLite calls
#: ``memory.db`` malformed) has them rebuilt from the log and runs again, once
READERS = frozenset({"list", "show", "search", "stats", "branches", "branch"})


def _heals(ctx: click.Context, exc: Exception) -> bool:
    """Whether ``exc`` was a reading command meeting a damaged view, now rebuilt."""
    from memlog.projections.sqlite_view.damage import is_corrupt

    if ctx.invoked_subcommand not in READERS or not is_corrupt(exc):
        return False
    from memlog.api.healing import heal
    from memlog.workspace import Workspace

    ws = Workspace.open()
    return heal(ws.home, str(exc), ws.space)


@click.group(cls=LazyGroup, context_settings={"help_option_names": HELP_OPTIONS})
@click.version_option(__version__, prog_name="memlog")
@click.option(
    "--project-dir", type=click.Path(path_type=str), hidden=True,
    help="Work as if started in this folder (how memlog starts its background processes).",
)  # fmt: skip
@click.pass_context
def cli(ctx: click.Context, project_dir: str | None) -> None:
    """memlog: persistent engineering memory for Claude Code.

    Every change is an event appended to a checksummed log under
    $MEMLOG_HOME (default ~/.claude/iflow/memory); everything else is
    rebuilt from it.  `--json` prints JSON; `memlog COMMAND -h` explains each.
    """
    if project_dir and os.path.isdir(project_dir):
        os.chdir(project_dir)  # the workspace this process was started for, not the caller's
    if ctx.invoked_subcommand not in QUIET:
        from memlog.eventlog.waiting import on_lock_wait

        on_lock_wait(_say_waiting)


#: commands that never print a word about waiting (hooks, the MCP server's stdio)
QUIET = frozenset({"hook", "serve-mcp"})


def _say_waiting(message: str) -> None:
    click.echo(f"memlog: {message}", err=True)


def main() -> None:
    os.umask(0o077)  # every file memlog creates is private to its user
    try:
        cli.main(prog_name="memlog")
    except SystemExit as done:
        finish(done.code)
