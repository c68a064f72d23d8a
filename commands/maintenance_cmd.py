"""``memlog maintenance``: weekly consolidation and monthly reindex."""

from __future__ import annotations

from datetime import UTC, datetime

import click

from memlog.api import memorize as api
from memlog.api import proposals
from memlog.capture.extraction.maintenance import due
from memlog.commands.base import printable
from memlog.commands.common import echo_json, emit, open_workspace, warn
from memlog.workspace import Workspace


@click.command()
@click.option("--weekly", "tasks", flag_value="weekly", help="Consolidate changed branch memories.")
@click.option("--monthly", "tasks", flag_value="monthly", help="Re-check vectors and labels.")
@click.option("--full", "tasks", flag_value="full", help="Both, now.")
@click.option("--propose", "tasks", flag_value="propose",
              help="Propose retiring the lessons never applied, or stale here, now.")  # fmt: skip
@click.option("--proposals", "tasks", flag_value="proposals",
              help="List the proposals awaiting a decision.")  # fmt: skip
@click.option("--confirm", "confirmed", multiple=True, metavar="ID",
              help="Retire a lesson as proposed (repeatable).")  # fmt: skip
@click.option("--dismiss", "dismissed", multiple=True, metavar="ID",
              help="Keep a lesson: withdraw its proposal for good (repeatable).")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print what ran as JSON.")
def maintenance(
    tasks: str | None, confirmed: tuple[str, ...], dismissed: tuple[str, ...], as_json: bool
) -> None:
    """Run the maintenance that is due (or the task named, now).

    Weekly: up to 20 branch memories changed since the last run are evolved
    again (duplicates merged, conflicts resolved, as events), and lessons
    judged in memory_retire_unused_after sessions and never applied, or whose
    cited files are gone from this project, are proposed for retirement.
    Monthly: live entries get the vectors and keyword labels they lack.  A
    proposal retires nothing until --confirm; --dismiss keeps the lesson.
    """
    ws = open_workspace()
    if confirmed or dismissed or tasks in ("propose", "proposals"):
        decide(ws, tasks, confirmed, dismissed, as_json)
        return
    ws.catch_up()
    if tasks is None:
        chosen = due(ws.home, datetime.now(UTC))
    else:
        chosen = ["weekly", "monthly"] if tasks == "full" else [tasks]
    done = api.run_maintenance(ws, chosen) if chosen else []
    if as_json:
        echo_json(done)
        return
    if not done:
        click.echo("no maintenance is due")
    for task in done:
        weekly = task.task == "weekly"
        what = f"{len(task.branches)} branches" if weekly else f"{task.entries} entries"
        click.echo(f"{task.task}: {what}")
        warn(task.notes)


def decide(
    ws: Workspace, tasks: str | None, confirmed: tuple[str, ...], dismissed: tuple[str, ...],
    as_json: bool,
) -> None:  # fmt: skip
    """Proposals: made now, listed, confirmed or dismissed."""
    notes: list[str] = []
    done: dict[str, list[dict[str, str]]] = {}
    if tasks == "propose":
        made, notes = proposals.propose(ws)
        done["proposed"] = [{"id": p.entry_id, "kind": p.kind, "reason": p.reason} for p in made]
    for name, act, prefixes in (("retired", proposals.confirm, confirmed),
                                ("kept", proposals.dismiss, dismissed)):  # fmt: skip
        if prefixes:
            entries, more = act(ws, prefixes)
            notes += more
            done[name] = [{"id": e.id, "name": e.name, "proposal": e.proposal} for e in entries]
    if tasks == "proposals":
        done["awaiting"] = [{"id": e.id, "name": e.name, "proposal": e.proposal}
                            for e in proposals.awaiting(ws)]  # fmt: skip
    warn(notes)
    emit(as_json, done, lambda: _print(done))


def _print(done: dict[str, list[dict[str, str]]]) -> None:
    for name, rows in done.items():
        if not rows:
            click.echo(f"{name}: none")
        for row in rows:
            what = row.get("proposal") or f"{row.get('kind')}: {row.get('reason')}"
            click.echo(printable(f"{name}  {row['id']}  {row.get('name', '')}  ({what})"))
