"""memlog's entries in Claude Code's settings: what they are, how to find them in a
document, and how to add or remove them in its text.

The hook group and the MCP server entry memlog registers; ``install_*`` and
``remove_*`` edit a document's text in place (``jsonedit``), and
``strip_ours`` / ``has_ours`` compare parsed documents with memlog's entries
left out.
"""

from __future__ import annotations

import copy
import json
import os
import shlex
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memlog.claude_code.jsonedit import JsonPath, add_item, drop_if_empty, drop_item
from memlog.errors import MemlogError

HOOK_EVENT = "SessionStart"
HOOK_MATCHER = "startup|resume|clear|compact"
HOOK_TIMEOUT = 10
HOOK_ARGS = ["hook", "session-start"]
SERVER_NAME = "memlog"
SERVER_ARGS = ["serve-mcp"]
EXECUTABLE = "memlog"

Json = dict[str, Any]


class SetupError(MemlogError):
    """A Claude Code file cannot be read or changed safely; nothing was written."""


def parse_document(text: str, where: Path) -> Json:
    """The JSON object a settings file holds; ``SetupError`` for anything else."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SetupError(
            f"{where} is not valid JSON (line {exc.lineno} column {exc.colno}: {exc.msg}); "
            "nothing was changed"
        ) from None
    if not isinstance(data, dict):
        raise SetupError(f"{where} does not hold a JSON object; nothing was changed")
    return data


# -- what memlog registers ---------------------------------------------------------


def find_executable() -> str:
    """The installed ``memlog``: beside this Python, else on PATH, else the bare name."""
    sibling = Path(sys.executable).parent / EXECUTABLE
    if sibling.is_file() and os.access(sibling, os.X_OK):
        return str(sibling)
    found = shutil.which(EXECUTABLE)
    return os.path.abspath(found) if found else EXECUTABLE


def hook_group(executable: str) -> Json:
    command = shlex.join([executable, *HOOK_ARGS])
    hook = {"type": "command", "command": command, "timeout": HOOK_TIMEOUT}
    return {"matcher": HOOK_MATCHER, "hooks": [hook]}


def mcp_server(executable: str) -> Json:
    return {"type": "stdio", "command": executable, "args": list(SERVER_ARGS), "env": {}}


def _runs_memlog(argv: Sequence[object], args: list[str]) -> bool:
    head = argv[0] if argv else ""
    return isinstance(head, str) and os.path.basename(head) == EXECUTABLE and argv[1:] == args


def is_our_hook(hook: object) -> bool:
    if not isinstance(hook, dict) or hook.get("type") != "command":
        return False
    try:
        argv = shlex.split(str(hook.get("command", "")))
    except ValueError:
        return False
    return _runs_memlog(argv, HOOK_ARGS)


def is_our_server(server: object) -> bool:
    if not isinstance(server, dict):
        return False
    return _runs_memlog([server.get("command"), *(server.get("args") or [])], SERVER_ARGS)


# -- memlog's entries in a document ------------------------------------------------------


def _member(data: Json, key: str, kind: type, where: Path, name: str) -> Any:
    value = data.get(key)
    if value is not None and not isinstance(value, kind):
        shape = "an object" if kind is dict else "an array"
        raise SetupError(f"`{name}` in {where} is not {shape}; nothing was changed")
    return value


def _hook_groups(data: Json, where: Path) -> list[Any] | None:
    hooks = _member(data, "hooks", dict, where, "hooks")
    return None if hooks is None else _member(hooks, HOOK_EVENT, list, where, f"hooks.{HOOK_EVENT}")


def _our_hooks(groups: list[Any]) -> list[tuple[int, list[int], int]]:
    """(group index, indices of memlog's hooks in it, how many hooks it has), last first."""
    found = []
    for g, group in enumerate(groups):
        hooks = group.get("hooks") if isinstance(group, dict) else None
        if isinstance(hooks, list):
            ours = [h for h, hook in enumerate(hooks) if is_our_hook(hook)]
            if ours:
                found.append((g, ours, len(hooks)))
    return found[::-1]


def remove_hooks(text: str, where: Path, prune: bool = True) -> str:
    groups = _hook_groups(parse_document(text, where), where) or []
    found = _our_hooks(groups)
    event: JsonPath = ["hooks", HOOK_EVENT]
    for g, ours, total in found:
        if len(ours) == total:
            text = drop_item(text, event, g)
            continue
        for h in reversed(ours):
            text = drop_item(text, [*event, g, "hooks"], h)
    if found and prune:
        text = drop_if_empty(drop_if_empty(text, event), ["hooks"])
    return text


def install_hooks(text: str, where: Path, executable: str) -> str:
    group = hook_group(executable)
    groups = _hook_groups(parse_document(text, where), where)
    if groups is not None and group in groups and len(_our_hooks(groups)) == 1:
        return text
    text = remove_hooks(text, where, prune=False)
    data = parse_document(text, where)
    if "hooks" not in data:
        return add_item(text, [], "hooks", {HOOK_EVENT: [group]})
    if HOOK_EVENT not in data["hooks"]:
        return add_item(text, ["hooks"], HOOK_EVENT, [group])
    return add_item(text, ["hooks", HOOK_EVENT], None, group)


def _servers(data: Json, where: Path) -> dict[str, Any] | None:
    servers: dict[str, Any] | None = _member(data, "mcpServers", dict, where, "mcpServers")
    return servers


def remove_server(text: str, where: Path, prune: bool = True) -> str:
    servers = _servers(parse_document(text, where), where)
    if servers is None or not is_our_server(servers.get(SERVER_NAME)):
        return text
    text = drop_item(text, ["mcpServers"], SERVER_NAME)
    return drop_if_empty(text, ["mcpServers"]) if prune else text


def install_server(text: str, where: Path, executable: str) -> str:
    server = mcp_server(executable)
    servers = _servers(parse_document(text, where), where)
    if servers is None:
        return add_item(text, [], "mcpServers", {SERVER_NAME: server})
    current = servers.get(SERVER_NAME)
    if current == server:
        return text
    if current is not None and not is_our_server(current):
        raise SetupError(
            f"{where} already has an MCP server named {SERVER_NAME!r} that does not run "
            "memlog; rename or remove it, then run memlog setup again"
        )
    return add_item(remove_server(text, where, prune=False), ["mcpServers"], SERVER_NAME, server)


def strip_ours(data: Json) -> Json:
    """``data`` without memlog's hook and server, empty containers they leave pruned."""
    data = copy.deepcopy(data)
    hooks = data.get("hooks")
    if isinstance(hooks, dict):
        if isinstance(hooks.get(HOOK_EVENT), list):
            hooks[HOOK_EVENT] = [g for g in map(_strip_group, hooks[HOOK_EVENT]) if g is not None]
            _prune(hooks, HOOK_EVENT)
        _prune(data, "hooks")
    servers = data.get("mcpServers")
    if isinstance(servers, dict):
        if is_our_server(servers.get(SERVER_NAME)):
            del servers[SERVER_NAME]
        _prune(data, "mcpServers")
    return data


def has_ours(data: Json) -> bool:
    """Whether ``data`` holds memlog's hook or server."""
    hooks = data.get("hooks")
    groups = hooks.get(HOOK_EVENT) if isinstance(hooks, dict) else None
    if isinstance(groups, list) and _our_hooks(groups):
        return True
    servers = data.get("mcpServers")
    return isinstance(servers, dict) and is_our_server(servers.get(SERVER_NAME))


def _strip_group(group: Any) -> Any:
    hooks = group.get("hooks") if isinstance(group, dict) else None
    if not isinstance(hooks, list) or not any(map(is_our_hook, hooks)):
        return group
    kept = [h for h in hooks if not is_our_hook(h)]
    return {**group, "hooks": kept} if kept else None


def _prune(data: Json, key: str) -> None:
    if data.get(key) in ({}, []):
        del data[key]
