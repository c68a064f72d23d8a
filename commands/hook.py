"""``memlog hook``: entry points for Claude Code hooks."""

from __future__ import annotations

import click


@click.group()
def hook() -> None:
    """Entry points Claude Code calls (see hooks/hooks.json)."""


@hook.command(name="session-start")
def session_start() -> None:
    """Read the SessionStart JSON on stdin and print the memories to inject.

    Always prints valid JSON and exits 0, within its time budget.
    """
    from memlog.hooks.session_start import main

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
