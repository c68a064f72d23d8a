"""Registering memlog with Claude Code: the SessionStart hook and the MCP server.

Where the entries go (the formats of Claude Code's settings and of
``claude mcp add``):

* user scope: ``~/.claude/settings.json`` (``hooks``) and ``~/.claude.json``
  (top-level ``mcpServers``, as ``claude mcp add --scope user`` writes);
  both under ``$CLAUDE_CONFIG_DIR`` when that is set, as Claude Code does;
* project scope: ``<project>/.claude/settings.json`` and ``<project>/.mcp.json``.

The JSON text is edited in place, never re-serialised: memlog finds the
span of the object or array it changes and inserts or removes only its own
item, so every other byte stays as it was.  Each edit is checked by parsing
the result: with memlog's entries taken out, before and after must be equal,
or nothing is written.  Every file is backed up (timestamped, beside it)
before it changes.  Uninstalling restores the bytes of the last backup when
nothing else changed since the install; otherwise it removes memlog's items.
"""

from __future__ import annotations

import copy
import difflib
import json
import os
import re
import shlex
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, NamedTuple

from memlog.errors import MemlogError

HOOK_EVENT = "SessionStart"
HOOK_MATCHER = "startup|resume|clear|compact"
HOOK_TIMEOUT = 10
HOOK_ARGS = ["hook", "session-start"]
SERVER_NAME = "memlog"
SERVER_ARGS = ["serve-mcp"]
EXECUTABLE = "memlog"

Kind = Literal["hooks", "mcp"]
Action = Literal["install", "uninstall"]
Json = dict[str, Any]
JsonPath = Sequence[str | int]


class SetupError(MemlogError):
    """A Claude Code file cannot be read or changed safely; nothing was written."""


class Target(NamedTuple):
    """One file memlog setup edits, and the mode a new one gets."""

    path: Path
    kind: Kind
    mode: int


class Change(NamedTuple):
    """What one file holds now and what it would hold (``None``: no file)."""

    target: Target
    before: bytes | None
    after: bytes | None
    note: str

    @property
    def changed(self) -> bool:
        return self.before != self.after


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


# -- the files ------------------------------------------------------------------------


def user_targets(home: Path, env: Mapping[str, str] | None = None) -> list[Target]:
    environ = os.environ if env is None else env
    config = environ.get("CLAUDE_CONFIG_DIR", "").strip()
    base = Path(config).expanduser() if config else home / ".claude"
    user_file = base / ".claude.json" if config else home / ".claude.json"
    return [
        Target(_real(base / "settings.json"), "hooks", 0o600),
        Target(_real(user_file), "mcp", 0o600),
    ]


def project_targets(root: Path) -> list[Target]:
    settings = root / ".claude" / "settings.json"
    return [
        Target(_real(settings), "hooks", 0o644),
        Target(_real(root / ".mcp.json"), "mcp", 0o644),
    ]


def _real(path: Path) -> Path:
    """Edit the file a symlink points to (dotfile managers link these), not the link."""
    return path.resolve() if path.is_symlink() else path


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise SetupError(f"cannot read {path}: {exc.strerror or exc}") from None


def _decode(data: bytes | None, where: Path) -> str:
    if data is None or not data.strip():
        return "{}\n"
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise SetupError(f"{where} is not UTF-8 text; nothing was changed") from None


def _parse(text: str, where: Path) -> Json:
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


# -- editing JSON text in place -------------------------------------------------------

_DECODER = json.JSONDecoder()
_SPACE = " \t\r\n"


class _Item(NamedTuple):
    start: int  # where the member (its key) or element begins
    value: int  # where its value begins
    end: int  # just after its value
    key: str | None


class _Span(NamedTuple):
    open: int
    close: int
    items: list[_Item]


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in _SPACE:
        i += 1
    return i


def _span(text: str, i: int) -> _Span:
    """The items of the object or array whose opening bracket is at ``i`` (valid JSON)."""
    closer = "}" if text[i] == "{" else "]"
    items: list[_Item] = []
    j = _skip(text, i + 1)
    while text[j] != closer:
        start, key = j, None
        if closer == "}":
            key, j = _DECODER.raw_decode(text, j)
            j = _skip(text, _skip(text, j) + 1)  # past the colon
        value = j
        j = _DECODER.raw_decode(text, j)[1]
        items.append(_Item(start, value, j, key))
        j = _skip(text, j)
        if text[j] == ",":
            j = _skip(text, j + 1)
    return _Span(i, j, items)


def _index(span: _Span, step: str | int) -> int:
    if isinstance(step, int):
        return step
    return [n for n, item in enumerate(span.items) if item.key == step][-1]  # last one wins


def _locate(text: str, path: JsonPath) -> int:
    i = _skip(text, 0)
    for step in path:
        span = _span(text, i)
        i = span.items[_index(span, step)].value
    return i


def _indent_unit(text: str) -> str:
    found = re.search(r"\n([ \t]+)\S", text)
    return found.group(1) if found else "  "


def _line_indent(text: str, i: int) -> str:
    start = text.rfind("\n", 0, i) + 1
    return text[start : _skip_indent(text, start)]


def _skip_indent(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t":
        i += 1
    return i


def _separators(text: str, span: _Span) -> tuple[str, str, str]:
    """How the container at ``span`` lays out its items: (between items, after a colon, unit)."""
    items = span.items
    if len(items) >= 2:
        sep = text[_skip(text, items[-2].end) + 1 : items[-1].start]
    elif items:
        sep = text[span.open + 1 : items[0].start]
        sep = sep if "\n" in sep else " " if re.search(r",[ ]", text) else ""
    else:
        sep = "\n" + _line_indent(text, span.open) + _indent_unit(text)
    keyed = [i for i in items if i.key is not None]
    colon = ":" if keyed and text[keyed[0].value - 1] == ":" else ": "
    return ("\n" + sep.rsplit("\n", 1)[1] if "\n" in sep else sep), colon, _indent_unit(text)


def _render(key: str | None, value: object, layout: tuple[str, str, str]) -> str:
    sep, colon, unit = layout
    head = f"{json.dumps(key, ensure_ascii=False)}{colon}" if key is not None else ""
    if "\n" not in sep:
        return head + json.dumps(value, ensure_ascii=False, separators=("," + sep, colon))
    body = json.dumps(value, ensure_ascii=False, indent=unit, separators=(",", colon))
    return head + body.replace("\n", sep)


def add_item(text: str, path: JsonPath, key: str | None, value: object) -> str:
    """Insert ``value`` (under ``key`` in an object) last in the container at ``path``."""
    span = _span(text, _locate(text, path))
    layout = _separators(text, span)
    item = _render(key, value, layout)
    if span.items:
        at = span.items[-1].end
        return text[:at] + "," + layout[0] + item + text[at:]
    close = "\n" + _line_indent(text, span.open)
    return text[: span.open + 1] + layout[0] + item + close + text[span.close :]


def drop_item(text: str, path: JsonPath, step: str | int) -> str:
    """Remove one item (a key or an index) of the container at ``path``, and its comma."""
    span = _span(text, _locate(text, path))
    items, n = span.items, _index(span, step)
    if len(items) == 1:
        return text[: span.open + 1] + text[span.close :]
    if n > 0:
        return text[: items[n - 1].end] + text[items[n].end :]
    return text[: items[0].start] + text[items[1].start :]


def _drop_if_empty(text: str, path: JsonPath) -> str:
    value = _DECODER.raw_decode(text, _locate(text, path))[0]
    return drop_item(text, path[:-1], path[-1]) if value in ({}, []) else text


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
    groups = _hook_groups(_parse(text, where), where) or []
    found = _our_hooks(groups)
    event: JsonPath = ["hooks", HOOK_EVENT]
    for g, ours, total in found:
        if len(ours) == total:
            text = drop_item(text, event, g)
            continue
        for h in reversed(ours):
            text = drop_item(text, [*event, g, "hooks"], h)
    if found and prune:
        text = _drop_if_empty(_drop_if_empty(text, event), ["hooks"])
    return text


def install_hooks(text: str, where: Path, executable: str) -> str:
    group = hook_group(executable)
    groups = _hook_groups(_parse(text, where), where)
    if groups is not None and group in groups and len(_our_hooks(groups)) == 1:
        return text
    text = remove_hooks(text, where, prune=False)
    data = _parse(text, where)
    if "hooks" not in data:
        return add_item(text, [], "hooks", {HOOK_EVENT: [group]})
    if HOOK_EVENT not in data["hooks"]:
        return add_item(text, ["hooks"], HOOK_EVENT, [group])
    return add_item(text, ["hooks", HOOK_EVENT], None, group)


def _servers(data: Json, where: Path) -> dict[str, Any] | None:
    servers: dict[str, Any] | None = _member(data, "mcpServers", dict, where, "mcpServers")
    return servers


def remove_server(text: str, where: Path, prune: bool = True) -> str:
    servers = _servers(_parse(text, where), where)
    if servers is None or not is_our_server(servers.get(SERVER_NAME)):
        return text
    text = drop_item(text, ["mcpServers"], SERVER_NAME)
    return _drop_if_empty(text, ["mcpServers"]) if prune else text


def install_server(text: str, where: Path, executable: str) -> str:
    server = mcp_server(executable)
    servers = _servers(_parse(text, where), where)
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


# -- planning -------------------------------------------------------------------------------

Edit = Callable[[str, Path, str], str]
_INSTALL: dict[Kind, Edit] = {"hooks": install_hooks, "mcp": install_server}
_REMOVE: dict[Kind, Callable[[str, Path], str]] = {"hooks": remove_hooks, "mcp": remove_server}


def _checked(before: str, after: str, where: Path, installed: bool) -> str:
    """Refuse any edit that changed more than memlog's own entries."""
    old, new = _parse(before, where), _parse(after, where)
    if strip_ours(old) != strip_ours(new) or has_ours(new) != installed:
        raise SetupError(f"editing {where} went wrong; nothing was changed")
    return after


def installed_bytes(target: Target, before: bytes | None, executable: str) -> bytes:
    """The file with memlog's entries in it (``before`` itself when they are there)."""
    text = _decode(before, target.path)
    after = _INSTALL[target.kind](text, target.path, executable)
    if after == text and before is not None:
        return before
    return _checked(text, after, target.path, installed=True).encode("utf-8")


def plan_install(targets: Sequence[Target], executable: str) -> list[Change]:
    changes = []
    for target in targets:
        before = _read(target.path)
        after = installed_bytes(target, before, executable)
        note = "created" if before is None else "updated" if after != before else "unchanged"
        changes.append(Change(target, before, after, note))
    return changes


def _restorable(target: Target, current: bytes, executable: str) -> tuple[bytes | None, str]:
    """The bytes before memlog's install when nothing else changed since, else ``current``."""
    for backup in backups(target.path, "install"):
        try:
            original = backup.read_bytes()
            if installed_bytes(target, original, executable) == current:
                return original, f"restored from {backup.name}"
        except (OSError, SetupError):
            continue
    if installed_bytes(target, None, executable) == current:
        return None, "deleted (memlog setup created it)"
    return current, "removed memlog's entries"


def uninstalled(target: Target, current: bytes | None, executable: str) -> tuple[bytes | None, str]:
    if current is None:
        return None, "unchanged (no file)"
    base, note = _restorable(target, current, executable)
    if base is None:
        return None, note
    text = _decode(base, target.path)
    after = _REMOVE[target.kind](text, target.path)
    if after != text:
        base = _checked(text, after, target.path, installed=False).encode("utf-8")
    return (base, note) if base != current else (base, "unchanged (nothing of memlog's in it)")


def plan_uninstall(targets: Sequence[Target], executable: str) -> list[Change]:
    changes = []
    for target in targets:
        before = _read(target.path)
        after, note = uninstalled(target, before, executable)
        changes.append(Change(target, before, after, note))
    return changes


# -- applying -------------------------------------------------------------------------------


def backups(path: Path, action: Action) -> list[Path]:
    """memlog's backups of ``path`` made before ``action``, newest first."""
    pattern = f"{path.name}.memlog-{action}-*.bak"
    return sorted(path.parent.glob(_glob_escape(pattern)), reverse=True)


def _glob_escape(pattern: str) -> str:
    return re.sub(r"([\[\]?])", r"[\1]", pattern)


def _backup(path: Path, data: bytes, action: Action) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    backup = path.with_name(f"{path.name}.memlog-{action}-{stamp}.bak")
    _write(backup, data, 0o600, exclusive=True)
    return backup


def _write(path: Path, data: bytes, mode: int, exclusive: bool = False) -> None:
    """Write ``data`` atomically, keeping the mode of the file it replaces."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and not exclusive:
        mode = path.stat().st_mode & 0o777
    tmp = path if exclusive else path.with_name(f".{path.name}.memlog-{os.getpid()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | (os.O_EXCL if exclusive else os.O_TRUNC)
    fd = os.open(tmp, flags, mode)
    try:
        _write_all(fd, data)
        os.fchmod(fd, mode)
        os.fsync(fd)
    finally:
        os.close(fd)
    if tmp != path:
        os.replace(tmp, path)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def apply(changes: Sequence[Change], action: Action) -> dict[Path, Path]:
    """Write the changes (backing up each file first); return the backups by file."""
    pending = [c for c in changes if c.changed]
    for change in pending:
        if _read(change.target.path) != change.before:
            raise SetupError(
                f"{change.target.path} changed while memlog setup ran; nothing was written, "
                "run it again"
            )
    made: dict[Path, Path] = {}
    try:
        for change in pending:
            path = change.target.path
            if change.before is not None:
                made[path] = _backup(path, change.before, action)
            if change.after is None:
                path.unlink()
            else:
                _write(path, change.after, change.target.mode)
    except OSError as exc:
        raise SetupError(
            f"cannot write {exc.filename or 'a file'}: {exc.strerror or exc}"
        ) from None
    return made


def diff(change: Change) -> str:
    """The change as a unified diff (``/dev/null`` for a file created or deleted)."""
    path = str(change.target.path)
    old = _lines(change.before)
    new = _lines(change.after)
    fromfile = path if change.before is not None else "/dev/null"
    tofile = path if change.after is not None else "/dev/null"
    return "".join(difflib.unified_diff(old, new, fromfile, tofile))


def _lines(data: bytes | None) -> list[str]:
    if data is None:
        return []
    return [ln if ln.endswith("\n") else ln + "\n" for ln in data.decode("utf-8").splitlines(True)]
