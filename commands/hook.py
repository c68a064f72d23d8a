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
    """Read the SessionEnd JSON on stdin; start ``memlog sync`` detached when
    ``memory_sync_at_session_end`` is on. Always exits 0 at once."""
    from memlog.hooks.sync_at_end import main

    main()
