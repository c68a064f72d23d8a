"""Where memlog's SessionStart hook and MCP server are registered with Claude Code.

Sources, as Claude Code reads them: the memlog plugin (any scope that runs
in the project), the user's ``settings.json`` and ``~/.claude.json``
(``memlog setup``), and the project's ``.claude/settings.json``,
``.claude/settings.local.json``, ``.mcp.json`` and its entry in
``~/.claude.json`` (``memlog setup --project``, ``claude mcp add``).  Two
sources of the same thing run it twice: that is what ``memlog doctor``
reports and ``memlog setup`` avoids.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from memlog.claude_code.entries import HOOK_EVENT, SERVER_NAME, is_our_hook, is_our_server
from memlog.claude_code.plugin import PluginInstall, covering, installed, read_json
from memlog.claude_code.settings import user_targets


class Wiring(NamedTuple):
    """Where the hook and the server are registered (one line each), and the plugin installs."""

    hooks: list[str]
    servers: list[str]
    plugins: list[PluginInstall]

    @property
    def duplicates(self) -> list[str]:
        found = []
        if len(self.hooks) > 1:
            found.append(f"the SessionStart hook is registered {len(self.hooks)} times")
        if len(self.servers) > 1:
            found.append(f"the MCP server is registered {len(self.servers)} times")
        return found


def hooked(data: dict[str, Any]) -> bool:
    """Whether a settings document runs ``memlog hook session-start``."""
    hooks = data.get("hooks")
    groups = hooks.get(HOOK_EVENT) if isinstance(hooks, dict) else None
    return isinstance(groups, list) and any(
        is_our_hook(hook)
        for group in groups
        if isinstance(group, dict) and isinstance(group.get("hooks"), list)
        for hook in group["hooks"]
    )


def served(data: dict[str, Any]) -> bool:
    """Whether an ``mcpServers`` holder runs ``memlog serve-mcp``."""
    servers = data.get("mcpServers")
    return isinstance(servers, dict) and is_our_server(servers.get(SERVER_NAME))


def wiring(home: Path, project: Path | None, env: Mapping[str, str] | None = None) -> Wiring:
    """Every registration of memlog that runs in ``project`` (or for the user alone)."""
    plugins = installed(home, env)
    active = covering(plugins, project)
    hooks = [i.describe() for i in active]
    servers = [i.describe() for i in active]
    settings, claude_json = (target.path for target in user_targets(home, env))
    if hooked(read_json(settings)):
        hooks.append(f"user settings {settings}")
    user = read_json(claude_json)
    if served(user):
        servers.append(f"user MCP servers in {claude_json}")
    if project is not None:
        hooks += _project_hooks(project)
        servers += _project_servers(project, user, claude_json)
    return Wiring(hooks, servers, plugins)


def _project_hooks(project: Path) -> list[str]:
    files = [project / ".claude" / "settings.json", project / ".claude" / "settings.local.json"]
    return [f"project settings {path}" for path in files if hooked(read_json(path))]


def _project_servers(project: Path, user: dict[str, Any], claude_json: Path) -> list[str]:
    found = []
    mcp = project / ".mcp.json"
    if served(read_json(mcp)):
        found.append(f"project MCP servers in {mcp}")
    projects = user.get("projects")
    local = projects.get(str(project.resolve())) if isinstance(projects, dict) else None
    if isinstance(local, dict) and served(local):
        found.append(f"local MCP servers for {project} in {claude_json}")
    return found
