"""``memlog memorize``: extract what Claude Code sessions teach into branch memory."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import click

from memlog.api import memorize as api
from memlog.api import reading
from memlog.commands.common import echo_json, open_workspace, warn
from memlog.workspace import Workspace

#: what a background worker may overrun its deadline by before it is ended
GRACE_SECONDS = 60


@click.command()
@click.option("--session", "session_id", help="This session (its id); found in the log or "
              "under Claude Code's projects folder.")  # fmt: skip
@click.option("--branch", help="The pending sessions of this branch of the current project.")
@click.option("--pending", is_flag=True, help="Every pending session (the default).")
@click.option("--dry-run", is_flag=True, help="Print what would be sent, with its token "
              "estimate; send nothing, record nothing.")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print the outcome as JSON.")
@click.option("--background", is_flag=True, hidden=True, help="The detached worker of the hooks.")
@click.option("--deadline", type=click.FloatRange(min=1), default=api.BACKGROUND_SECONDS,
              hidden=True, help="Seconds the background worker may run.")  # fmt: skip
def memorize(
    session_id: str | None,
    branch: str | None,
    pending: bool,
    dry_run: bool,
    as_json: bool,
    background: bool,
    deadline: float,
) -> None:
    """Extract facts, decisions, conventions and bug patterns from sessions.

    One model call per session (memory_extraction_provider: the claude CLI,
    the Anthropic API, Ollama), read from where the last run stopped; the
    branch memory then evolves through events.  At most 20 sessions a run,
    within the daily budget.
    """
    if sum(bool(x) for x in (session_id, branch is not None, pending)) > 1:
        raise click.UsageError("give one of --session, --branch and --pending")
    if background:
        _background(deadline)
        return
    ws = open_workspace()
    if dry_run:
        _dry(api.dry_run(ws, session_id, branch), as_json)
        return
    report = api.memorize(ws, session_id=session_id, branch=branch)
    warn(report.notes)
    if as_json:
        echo_json(report)
        return
    for outcome in report.outcomes:
        cost = f"  ${outcome.usage.cost_micros / 1e6:.4f}" if outcome.usage.calls else ""
        click.echo(f"{outcome.session_id}  {outcome.status}: {outcome.reason}{cost}")
    for sid, why in report.deferred:
        click.echo(f"{sid}  still pending: {why}")
    if not report.outcomes and not report.deferred:
        click.echo("no pending session" + _elsewhere(ws))


def _elsewhere(ws: Workspace) -> str:
    """How many pending sessions wait for the other machines that recorded them."""
    waiting = reading.extraction(ws)["sessions"]
    count = waiting["elsewhere"] if isinstance(waiting, dict) else 0
    return f" here ({count} wait for the machines that recorded them)" if count else ""


def _dry(runs: list[api.DryRun], as_json: bool) -> None:
    if as_json:
        echo_json(runs)
        return
    if not runs:
        click.echo("no pending session")
    for run in runs:
        if run.skipped:
            click.echo(f"== {run.session_id}: would be skipped ({run.skipped})")
            continue
        click.echo(
            f"== {run.session_id}: about {run.tokens_in} input tokens, "
            f"about ${run.cost_micros / 1e6:.4f} with Haiku"
        )
        click.echo(f"-- system --\n{run.system}\n-- prompt --\n{run.prompt}")


def _background(seconds: float) -> None:
    """The worker the hooks start: quiet, bounded, never failing loudly.  Past its
    deadline (and a grace period) the kernel ends it, whatever it is doing."""
    from memlog.home import resolve_home
    from memlog.hooks.common import log_error
    from memlog.hooks.sessions import guarded

    if guarded():
        return
    signal.alarm(int(seconds + GRACE_SECONDS))
    home = resolve_home()
    try:
        ws = open_workspace(Path(os.getcwd()))
        for note in api.background(ws, seconds):
            log_error(home, f"extraction: {note}")
    except BaseException as exc:  # noqa: BLE001 - a detached worker reports, never raises
        log_error(home, f"extraction failed: {type(exc).__name__}: {exc}", exc)
