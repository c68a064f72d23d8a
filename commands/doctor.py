"""``memlog doctor``: is memlog set up and healthy here?"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from memlog.api import health
from memlog.api.health import Check
from memlog.claude_code.wiring import Wiring, wiring
from memlog.commands.common import echo_json, json_option, warn
from memlog.workspace import Workspace

_MARKS = {"ok": "ok", "warn": "warn", "problem": "PROBLEM"}
_HOW = "install the plugin (/plugin install memlog@memlog) or run memlog setup"


@click.command()
@json_option("Print every check as JSON.")
def doctor(as_json: bool) -> None:
    """Check the home, the Claude Code wiring, the model, extraction, pending work, errors
    and disk use.

    Wiring: the memlog plugin, user settings (memlog setup) and the current
    project's settings; a hook or server registered twice is a problem.
    Doctor writes nothing (the home is left byte for byte as it was) and
    sends nothing.  Exit 0 when nothing is a problem, 1 otherwise.
    """
    ws = Workspace.open(Path.cwd())  # not open_workspace: an iflow store is reported, not adopted
    warn([f"config: {w}" for w in ws.warnings])
    wired = wiring(Path.home(), ws.root)
    checks = health.checks(ws)
    found = [checks[0], *wiring_checks(wired), *checks[1:]]
    if as_json:
        echo_json(
            {
                "home": str(ws.home),
                "project": str(ws.root) if ws.root else None,
                "checks": [c._asdict() for c in found],
                "hooks": wired.hooks,
                "servers": wired.servers,
                "plugins": [p._asdict() for p in wired.plugins],
                "disk": health.disk_use(ws.home) if ws.home.exists() else {},
            }
        )
    else:
        for check in found:
            click.echo(f"{_MARKS[check.status]:<8} {check.name:<12} {check.detail}")
    if any(c.status == "problem" for c in found):
        sys.exit(1)


def wiring_checks(wired: Wiring) -> list[Check]:
    """One check for the SessionStart hook, one for the MCP server."""
    return [_wired("hook", wired.hooks), _wired("mcp server", wired.servers)]


def _wired(name: str, places: list[str]) -> Check:
    if not places:
        return Check(name, "warn", f"not registered with Claude Code: {_HOW}")
    if len(places) > 1:
        fix = "keep one (with the plugin installed, memlog setup removes its own entries)"
        return Check(name, "problem", f"registered {len(places)} times: {'; '.join(places)}; {fix}")
    return Check(name, "ok", places[0])
