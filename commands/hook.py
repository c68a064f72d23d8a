"""``memlog hook``: entry points for Claude Code hooks."""

from __future__ import annotations

import os

import click

from memlog.commands.conventions import HELP_OPTIONS
from memlog.config import Config


@click.group(context_settings={"help_option_names": HELP_OPTIONS})  # standalone too
def hook() -> None:
    """Entry points Claude Code calls (see hooks/hooks.json)."""


@hook.command(name="session-start")
def session_start() -> None:
    """Read the SessionStart JSON on stdin and print the memories to inject.

    Always prints valid JSON and exits 0, within its time budget.
    """
    from memlog.hooks.session_start import main

    main()


@hook.command(name="user-prompt")
def user_prompt() -> None:
    """Read the UserPromptSubmit JSON on stdin and print a few memories for the prompt.

    Prints them only when they pass the relevance floor and the session does not
    hold them yet, else nothing; always exits 0, within memory_prompt_budget_ms.
    memory_prompt_recall: false turns it off.
    """
    from memlog.hooks.user_prompt import main

    main()


@hook.command(name="session-end")
def session_end() -> None:
    """Read the SessionEnd JSON on stdin, record the session and start its extraction.

    Never calls a model: prints {} and exits 0 at once, whatever fails.
    """
    from memlog.hooks.sessions import main

    main("session-end")


@hook.command(name="pre-compact")
def pre_compact() -> None:
    """Read the PreCompact JSON on stdin, record the session and start its extraction.

    Never calls a model: prints {} and exits 0 at once, whatever fails.
    """
    from memlog.hooks.sessions import main

    main("pre-compact")


@hook.command(name="resident")
@click.option(
    "--minutes",
    type=click.IntRange(min=1),
    default=Config().memory_resident_minutes,
    show_default=True,
    help="Leave after this many minutes without a start.",
)
@click.option("--warm", "cwd", default="", help="Warm up for the project in this folder.")
@click.option("--status", is_flag=True, help="Say (as JSON) whether this home's resident runs.")
@click.option("--stop", is_flag=True, help="Stop this home's resident.")
def resident(minutes: int, cwd: str, status: bool, stop: bool) -> None:
    """Run the resident ranker of this home (the hook starts it), or ask it.

    It keeps the ranking and the local model loaded and answers the next
    starts of this home; memory_resident_minutes: 0 turns it off.
    """
    import json

    from memlog.home import resolve_home
    from memlog.hooks import resident as client
    from memlog.hooks.resident_server import reside

    home = resolve_home()
    if not (status or stop):
        reside(home, minutes, cwd or os.getcwd())
        return
    try:
        answer = client.call(home, "stop" if stop else "status")
    except client.ResidentError as exc:
        raise click.ClickException(str(exc)) from None
    if status:
        click.echo(json.dumps({"running": answer is not None, **(answer or {})}))
    elif answer is None:
        click.echo(f"no resident runs for {home}")
    else:
        click.echo(f"stopped the resident of {home} (pid {answer.get('stopped')})")
