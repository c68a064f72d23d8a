"""memlog's entries in Claude Code's settings: what they are, how to find them in a
document, and how to add or remove them in its text.

The hook groups (SessionStart, UserPromptSubmit, SessionEnd, PreCompact) and the MCP server
entry memlog registers; ``install_*`` and ``remove_*`` edit a document's text
in place (``jsonedit``), and ``strip_ours`` / ``has_ours`` compare parsed
documents with memlog's entries left out.
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
from typing import Any, NamedTuple

from memlog.claude_code.jsonedit import JsonPath, add_item, drop_if_empty, drop_item
from memlog.errors import MemlogError

HOOK_EVENT = "SessionStart"
HOOK_MATCHER = "startup|resume|clear|compact"
HOOK_TIMEOUT = 10
HOOK_ARGS = ["hook", "session-start"]


class HookSpec(NamedTuple):
    """One hook memlog registers: its event, matcher (None: every occasion) and command."""

    event: str
    matcher: str | None
    args: list[str]
    timeout: int = HOOK_TIMEOUT


HOOKS = (
    HookSpec(HOOK_EVENT, HOOK_MATCHER, HOOK_ARGS),
    HookSpec("UserPromptSubmit", None, ["hook", "user-prompt"], timeout=5),
    HookSpec("SessionEnd", None, ["hook", "session-end"]),
    HookSpec("PreCompact", "manual|auto", ["hook", "pre-compact"]),
)
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
    except RecursionError:
        raise SetupError(f"{where} nests JSON too deep to read; nothing was changed") from None
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


def hook_group(executable: str, spec: HookSpec = HOOKS[0]) -> Json:
    command = shlex.join([executable, *spec.args])
    hook = {"type": "command", "command": command, "timeout": spec.timeout}
    return {"hooks": [hook]} if spec.matcher is None else {"matcher": spec.matcher, "hooks": [hook]}


def mcp_server(executable: str) -> Json:
    return {"type": "stdio", "command": executable, "args": list(SERVER_ARGS), "env": {}}


def _runs_memlog(argv: Sequence[object], args: list[str]) -> bool:
    head = argv[0] if argv else ""
    return isinstance(head, str) and os.path.basename(head) == EXECUTABLE and argv[1:] == args


def is_our_hook(hook: object, spec: HookSpec = HOOKS[0]) -> bool:
    if not isinstance(hook, dict) or hook.get("type") != "command":
        return False
    try:
        argv = shlex.split(str(hook.get("command", "")))
    except ValueError:
        return False
    return _runs_memlog(argv, spec.args)


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


def _hook_groups(data: Json, where: Path, event: str = HOOK_EVENT) -> list[Any] | None:
    hooks = _member(data, "hooks", dict, where, "hooks")
    return None if hooks is None else _member(hooks, event, list, where, f"hooks.{event}")


def _our_hooks(groups: list[Any], spec: HookSpec = HOOKS[0]) -> list[tuple[int, list[int], int]]:
    """(group index, indices of memlog's hooks in it, how many hooks it has), last first."""
    found = []
    for g, group in enumerate(groups):
        hooks = group.get("hooks") if isinstance(group, dict) else None
        if isinstance(hooks, list):
            ours = [h for h, hook in enumerate(hooks) if is_our_hook(hook, spec)]
            if ours:
                found.append((g, ours, len(hooks)))
    return found[::-1]


def remove_hooks(text: str, where: Path, prune: bool = True) -> str:
    before = text
    for spec in HOOKS:
        text = _remove_hook(text, where, spec, prune)
    return drop_if_empty(text, ["hooks"]) if prune and text != before else text


def _remove_hook(text: str, where: Path, spec: HookSpec, prune: bool) -> str:
    groups = _hook_groups(parse_document(text, where), where, spec.event) or []
    found = _our_hooks(groups, spec)
    event: JsonPath = ["hooks", spec.event]
    for g, ours, total in found:
        if len(ours) == total:
            text = drop_item(text, event, g)
            continue
        for h in reversed(ours):
            text = drop_item(text, [*event, g, "hooks"], h)
    if found and prune:
        text = drop_if_empty(text, event)
    return text


def install_hooks(text: str, where: Path, executable: str) -> str:
    for spec in HOOKS:
        text = _install_hook(text, where, executable, spec)
    return text


def _install_hook(text: str, where: Path, executable: str, spec: HookSpec) -> str:
    group = hook_group(executable, spec)
    groups = _hook_groups(parse_document(text, where), where, spec.event)
    if groups is not None and group in groups and len(_our_hooks(groups, spec)) == 1:
        return text
    text = _remove_hook(text, where, spec, prune=False)
    data = parse_document(text, where)
    if "hooks" not in data:
        return add_item(text, [], "hooks", {spec.event: [group]})
    if spec.event not in data["hooks"]:
        return add_item(text, ["hooks"], spec.event, [group])
    return add_item(text, ["hooks", spec.event], None, group)


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
    """``data`` without memlog's hooks and server, empty containers they leave pruned."""
    data = copy.deepcopy(data)
    hooks = data.get("hooks")
    if isinstance(hooks, dict):
        for spec in HOOKS:
            if isinstance(hooks.get(spec.event), list):
                kept = (_strip_group(g, spec) for g in hooks[spec.event])
                hooks[spec.event] = [g for g in kept if g is not None]
                _prune(hooks, spec.event)
        _prune(data, "hooks")
    servers = data.get("mcpServers")
    if isinstance(servers, dict):
        if is_our_server(servers.get(SERVER_NAME)):
            del servers[SERVER_NAME]
        _prune(data, "mcpServers")
    return data


def has_ours(data: Json) -> bool:
    """Whether ``data`` holds one of memlog's hooks or its server."""
    hooks = data.get("hooks")
    for spec in HOOKS:
        groups = hooks.get(spec.event) if isinstance(hooks, dict) else None
        if isinstance(groups, list) and _our_hooks(groups, spec):
            return True
    servers = data.get("mcpServers")
    return isinstance(servers, dict) and is_our_server(servers.get(SERVER_NAME))


def _strip_group(group: Any, spec: HookSpec) -> Any:
    hooks = group.get("hooks") if isinstance(group, dict) else None
    if not isinstance(hooks, list) or not any(is_our_hook(h, spec) for h in hooks):
        return group
    kept = [h for h in hooks if not is_our_hook(h, spec)]
    return {**group, "hooks": kept} if kept else None


def _prune(data: Json, key: str) -> None:
    if data.get(key) in ({}, []):
        del data[key]
