"""``memlog review``: the lessons held back for text that tries to steer the agent."""

from __future__ import annotations

import click

from memlog.api import reading, reviewing
from memlog.commands.base import printable
from memlog.commands.common import echo_json, emit, json_option, open_workspace, warn
from memlog.projections.fold import Entry


@click.group(invoke_without_command=True)
@click.pass_context
def review(ctx: click.Context) -> None:
    """Lessons held back from every injection until you look at them.

    A lesson is held when its text tries to steer the agent rather than teach it
    (a command that runs what it fetches, a URL to follow, secrets sent away,
    instructions about instructions, hidden characters, markup that breaks the
    block).  `memlog review` lists them; `show` says why and where each came
    from; `accept` lets one be injected; `reject` keeps it out.  Each decision
    is an event in the log.
    """
    if ctx.invoked_subcommand is None:
        ctx.invoke(list_held)


@review.command(name="list")
@click.option("--rejected", is_flag=True, help="List the rejected ones too.")
@json_option("Print the held entries as JSON.")
def list_held(rejected: bool = False, as_json: bool = False) -> None:
    """List the lessons held for review, most recently updated first."""
    found, total = reviewing.held(open_workspace(), rejected)
    if as_json:
        echo_json({"total": total, "entries": [_summary(e) for e in found]})
        return
    if not found:
        click.echo("no lessons held for review")
        return
    what = "lesson" if total == 1 else "lessons"
    click.echo(f"{total} {what} held for review (memlog review show ID says why):")
    for entry in found:
        state = "" if entry.status == "held" else f" ({entry.status})"
        click.echo(printable(
            f"  {entry.id}  {entry.category:<13} {entry.name}{state}  [{', '.join(entry.held)}]"
            f"  via {', '.join(entry.doors) or 'unknown'}"
        ))  # fmt: skip


def _summary(entry: Entry) -> dict[str, object]:
    return {
        "id": entry.id, "name": entry.name, "category": entry.category, "status": entry.status,
        "rules": entry.held, "doors": entry.doors, "devices": entry.devices,
        "updated_at": entry.updated_at,
    }  # fmt: skip


@review.command()
@click.argument("entry_id")
@json_option("Print the entry, its hits and its origins as JSON.")
def show(entry_id: str, as_json: bool) -> None:
    """Why ENTRY_ID (a unique prefix is enough) is held, and where it came from."""
    found = reviewing.review(open_workspace(), entry_id)
    entry = found.entry
    if as_json:
        echo_json({
            "entry": reading.public(entry), "hits": [h._asdict() for h in found.hits],
            "holds": found.holds, "reviews": found.reviews,
            "origins": [o._asdict() for o in found.origins],
        })  # fmt: skip
        return
    click.echo(printable(f"{entry.id}  {entry.name}  ({entry.status})"))
    click.echo(printable(f"description: {entry.description}"))
    if entry.reasoning:
        click.echo(printable(f"reasoning: {entry.reasoning}"))
    click.echo("held because:" if found.hits else "the scan finds nothing in its text now")
    for hit in found.hits:
        click.echo(printable(f"  {hit.rule} (in {hit.field}): {hit.excerpt}"))
    click.echo("came from:")
    for origin in found.origins:
        whence = f", {origin.origin}" if origin.origin else ""
        click.echo(printable(f"  {origin.ts}  {origin.door}{whence}  on {origin.device}"))
    for held in found.holds:
        click.echo(printable(f"  {held.ts}  held: {', '.join(held.rules)} (door {held.door})"))
    for decided in found.reviews:
        why = f": {decided.reason}" if decided.reason else ""
        click.echo(printable(f"  {decided.ts}  {decided.verdict}{why}"))


@review.command()
@click.argument("entry_id")
@click.option("--reason", default="", help="Why it may be injected.")
@json_option("Print the entry's id, name and status as JSON.")
def accept(entry_id: str, reason: str, as_json: bool) -> None:
    """Let ENTRY_ID be injected: its text as it stands is accepted."""
    entry, notes = reviewing.accept(open_workspace(), entry_id, reason)
    _decided(entry, notes, "accepted", as_json)


@review.command()
@click.argument("entry_id")
@click.option("--reason", default="", help="Why it stays out.")
@json_option("Print the entry's id, name and status as JSON.")
def reject(entry_id: str, reason: str, as_json: bool) -> None:
    """Keep ENTRY_ID out of every injection (memlog review accept lets it in later)."""
    entry, notes = reviewing.reject(open_workspace(), entry_id, reason)
    _decided(entry, notes, "rejected", as_json)


def _decided(entry: Entry, notes: list[str], verdict: str, as_json: bool) -> None:
    warn(notes)
    emit(
        as_json,
        {"id": entry.id, "name": entry.name, "verdict": verdict, "status": entry.status},
        lambda: click.echo(printable(f"{verdict} {entry.id}  {entry.name}  (now {entry.status})")),
    )


@review.command(name="scan")
@click.option("--dry-run", is_flag=True, help="Say what would be held; hold nothing.")
@json_option("Print the entries held as JSON.")
def scan_stored(dry_run: bool, as_json: bool) -> None:
    """Scan every live lesson (stored before the scan existed) and hold those it catches."""
    held, notes = reviewing.scan_stored(open_workspace(), dry_run)
    warn(notes)
    if as_json:
        echo_json({"held": held, "dry_run": dry_run})
        return
    verb = "would hold" if dry_run else "held"
    click.echo(f"{verb} {len(held)} {'lesson' if len(held) == 1 else 'lessons'}")
    for event in held:
        click.echo(f"  {event.entry_id}  [{', '.join(event.rules)}]")
