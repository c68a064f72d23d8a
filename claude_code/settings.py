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

import difflib
import os
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, NamedTuple

from memlog.claude_code.entries import (
    SetupError,
    has_ours,
    install_hooks,
    install_server,
    parse_document,
    remove_hooks,
    remove_server,
    strip_ours,
)

Kind = Literal["hooks", "mcp"]
Action = Literal["install", "uninstall"]


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


# -- planning -------------------------------------------------------------------------------

Edit = Callable[[str, Path, str], str]
_INSTALL: dict[Kind, Edit] = {"hooks": install_hooks, "mcp": install_server}
_REMOVE: dict[Kind, Callable[[str, Path], str]] = {"hooks": remove_hooks, "mcp": remove_server}


def _checked(before: str, after: str, where: Path, installed: bool) -> str:
    """Refuse any edit that changed more than memlog's own entries."""
    old, new = parse_document(before, where), parse_document(after, where)
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
