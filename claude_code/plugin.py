"""Whether memlog is installed as a Claude Code plugin, as Claude Code records it.

``claude plugin install memlog@<marketplace>`` records the install in
``~/.claude/plugins/installed_plugins.json`` (``{"version": 2, "plugins":
{"memlog@market": [{"scope", "installPath", "version", "projectPath"?}]}}``)
and enables it in the settings file of its scope (``enabledPlugins``): the
user's ``settings.json``, a project's ``.claude/settings.json``, or its
``.claude/settings.local.json`` for the local scope.  ``$CLAUDE_CONFIG_DIR``
replaces ``~/.claude`` when set, as Claude Code does.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from memlog.untrusted import json_object

PLUGIN_NAME = "memlog"
INSTALLED = Path("plugins") / "installed_plugins.json"


class PluginInstall(NamedTuple):
    """One install of the memlog plugin."""

    id: str
    scope: str
    install_path: str
    project: str
    enabled: bool

    def describe(self) -> str:
        where = f" in {self.project}" if self.project else ""
        state = "" if self.enabled else ", disabled"
        return f"plugin {self.id} ({self.scope} scope{where}{state})"


def config_dir(home: Path, env: Mapping[str, str] | None = None) -> Path:
    """Claude Code's own folder: ``$CLAUDE_CONFIG_DIR`` or ``~/.claude``."""
    environ = os.environ if env is None else env
    configured = environ.get("CLAUDE_CONFIG_DIR", "").strip()
    return Path(configured).expanduser() if configured else home / ".claude"


#: the most of a JSON file read here: ``~/.claude.json`` keeps every project's history and
#: grows to megabytes, so the cap is generous; depth is what a hostile file would use
MAX_JSON_BYTES = 64 << 20


def read_json(path: Path) -> dict[str, Any]:
    """A JSON object file; empty when missing, unreadable or out of bounds (nothing here
    may fail: a project's ``.mcp.json`` and settings are anyone's, ``untrusted``)."""
    return json_object(path, MAX_JSON_BYTES)


def settings_file(scope: str, project: str, base: Path) -> Path:
    """The settings file that enables a plugin installed in ``scope``."""
    if scope == "project" and project:
        return Path(project) / ".claude" / "settings.json"
    if scope == "local" and project:
        return Path(project) / ".claude" / "settings.local.json"
    return base / "settings.json"


def _enabled(plugin_id: str, scope: str, project: str, base: Path) -> bool:
    enabled = read_json(settings_file(scope, project, base)).get("enabledPlugins")
    return isinstance(enabled, dict) and enabled.get(plugin_id) is True


def installed(home: Path, env: Mapping[str, str] | None = None) -> list[PluginInstall]:
    """Every install of the memlog plugin Claude Code has recorded."""
    base = config_dir(home, env)
    plugins = read_json(base / INSTALLED).get("plugins")
    found: list[PluginInstall] = []
    for plugin_id, installs in (plugins if isinstance(plugins, dict) else {}).items():
        if plugin_id.partition("@")[0] != PLUGIN_NAME or not isinstance(installs, list):
            continue
        for install in installs:
            if not isinstance(install, dict):
                continue
            scope = str(install.get("scope") or "user")
            project = str(install.get("projectPath") or "")
            path = str(install.get("installPath") or "")
            enabled = _enabled(plugin_id, scope, project, base)
            found.append(PluginInstall(plugin_id, scope, path, project, enabled))
    return found


def covering(installs: list[PluginInstall], project: Path | None) -> list[PluginInstall]:
    """The enabled installs that run in ``project`` (``None``: in every project)."""
    wanted = str(project.resolve()) if project is not None else None
    return [
        i
        for i in installs
        if i.enabled
        and (i.scope == "user" or (wanted is not None and str(Path(i.project).resolve()) == wanted))
    ]
