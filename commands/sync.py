"""``memlog sync``: one memory across machines, carried by a git remote."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from memlog.api import syncing
from memlog.api.syncing import Asks
from memlog.commands.base import InputError, printable
from memlog.commands.common import emit, json_option, open_workspace, warn
from memlog.sync.state import Asking, Outcome
from memlog.sync.status import Status


@click.command()
@click.argument("remote", required=False)
@click.option("--init", is_flag=True, help="Make REMOTE (a git URL or path) this home's remote.")
@click.option(
    "--key",
    metavar="KEY",
    help="With --init: the sync key of a remote that has data; - reads it from stdin, which "
    "keeps it out of the command line and shell history (else MEMLOG_SYNC_KEY).",
)
@click.option("--print-key", is_flag=True, help="Print this home's sync key on one line.")
@click.option("--status", "show_status", is_flag=True, help="What sync knows; no network.")
@click.option("--rotate-key", is_flag=True, help="Make a new team key and seal the remote with it.")
@click.option("--evict", metavar="DEVICE", help="Remove a machine from the team's roster.")
@click.option(
    "--redactions",
    type=click.Choice(["owner", "any"]),
    help="Who confirms a redaction of another device's text: its owner, or any machine.",
)
@click.option(
    "--requests", "show_requests", is_flag=True,
    help="The redactions other devices asked of this device's lines; no network.",
)  # fmt: skip
@click.option(
    "--confirm", multiple=True, metavar="ID", help="Make a redaction asked of this device (all)."
)
@click.option("--decline", multiple=True, metavar="ID", help="Refuse one (all: every one).")
@json_option("Print the outcome as JSON.")
@click.option(
    "--at-session-end", is_flag=True, hidden=True, help="Only if memory_sync_at_session_end is on."
)
@click.option("--project-dir", type=click.Path(path_type=Path), hidden=True, help="Its config.")
def sync(
    remote: str | None,
    init: bool,
    key: str | None,
    print_key: bool,
    show_status: bool,
    rotate_key: bool,
    evict: str | None,
    redactions: str | None,
    show_requests: bool,
    confirm: tuple[str, ...],
    decline: tuple[str, ...],
    as_json: bool,
    at_session_end: bool,
    project_dir: Path | None,
) -> None:
    """Sync events/ with a git remote: send this machine's new events, take every other
    machine's, and fold what came into the views so every machine shows the same memory.

    Only events/ travels, every line sealed with a team key kept on your machines (--init
    makes it; --print-key shows it, for --init --key - on the next machine) and signed by
    the machine that wrote it: the remote can neither read nor change it, and no machine
    can write as another.  A line from the remote that fails its checks is quarantined,
    never applied, and named (exit 1)."""
    if init and not remote:
        raise click.UsageError("--init needs REMOTE (a git URL or path)")
    if key is not None and not init:
        raise click.UsageError("--key goes with --init REMOTE (it joins a remote)")
    if rotate_key and init:
        raise click.UsageError("--rotate-key works on a home that syncs already, without --init")
    if key == "-":
        key = _key_from_stdin()
    ws = open_workspace(project_dir if project_dir is not None and project_dir.is_dir() else None)
    if print_key:
        click.echo(syncing.sync_key(ws))
        return
    if show_status:
        found = syncing.sync_status(ws)
        emit(as_json, found, lambda: _print_status(found))
        return
    if show_requests:
        waiting = syncing.asked(ws)
        emit(as_json, waiting, lambda: _print_requests(waiting))
        return
    asks = Asks(evict, redactions, confirm, decline)
    if at_session_end:
        done = syncing.sync_at_session_end(ws)
    elif rotate_key:
        done = syncing.rotate(ws, asks)
    else:
        done = syncing.sync(ws, remote, init, key, asks)
    if done is None:
        return  # not asked for at session end
    emit(as_json, done, lambda: _print(done))
    if done.refused or done.held:
        sys.exit(1)


def _key_from_stdin() -> str:
    """The key on stdin's first line (what a password manager pipes, or a paste)."""
    if sys.stdin.isatty():
        click.echo("paste the sync key, then Enter: ", err=True, nl=False)
    line = sys.stdin.readline()
    if not line.strip():
        raise InputError("--key -: nothing on stdin (pipe or paste the key from memlog sync "
                         "--print-key)")  # fmt: skip
    return line.strip()


def _print_requests(waiting: list[Asking]) -> None:
    if not waiting:
        click.echo("no redaction waits for this device's owner (as of its last sync)")
        return
    for item in waiting:
        click.echo(f"{item.id}  seq {item.seq}  asked by device {item.by}: {printable(item.line)}")
    click.echo("memlog sync --confirm ID (or all) makes them; --decline ID refuses them")


def _print(done: Outcome) -> None:
    if done.migrated:
        click.echo(f"moved {done.migrated} segments into events/{done.device}/ (bytes unchanged)")
    if done.key_made:
        click.echo(done.notes[0])
    click.echo(f"sent {done.sent} events, received {done.received} ({done.devices} devices)")
    click.echo(f"views: {done.views}")
    warn(done.notes[1:] if done.key_made else done.notes)
    waiting = [a for a in done.asked if not a.applied_without_asking]
    if waiting:
        devices = ", ".join(sorted({a.by for a in waiting}))
        warn([f"device {devices} asks to take text out of {len(waiting)} of this device's "
              "events: memlog sync --requests shows them, --confirm ID makes them"])  # fmt: skip
    for line in done.refused:
        click.echo(f"refused and quarantined: {printable(line)}", err=True)
    for line in done.held:
        click.echo(f"held back: {printable(line)}", err=True)


def _print_status(found: Status) -> None:
    if not found.set_up:
        click.echo("sync is not set up here (memlog sync --init REMOTE)")
        return
    click.echo(f"remote: {found.remote}")
    if found.plain:
        click.echo("set up by an earlier memlog that sent plain text: memlog sync --init NEW_URL")
    for device in found.devices:
        mark = " (this home)" if device.this_home else ""
        click.echo(
            f"device {device.device}{mark}: seq {device.last_seq}, {device.segments} segments"
        )
    for member, print_ in found.roster.items():
        gone = " (evicted)" if member in found.evicted else ""
        click.echo(f"roster: device {member}, signing key {print_}{gone}")
    if found.roster:
        who = "any machine" if found.redactions == "any" else "the device's owner"
        click.echo(f"a redaction of another device's text is confirmed by {who}")
    click.echo(f"not sent yet: {found.unsent} events")
    if found.refused:
        click.echo(f"refused remote versions: {found.refused} (in the quarantine file)")
    if found.last is not None:
        click.echo(f"last sync: {found.last.finished}")
