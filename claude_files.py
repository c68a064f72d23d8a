"""What Claude Code itself keeps and puts in a session's context, as memlog reads it.

memlog only reads these files; it never writes, moves or disables them.

* **Auto memory** (on by default): one folder per project,
  ``<config dir>/projects/<sanitised git root>/memory/``, holding ``MEMORY.md``
  (an index Claude Code loads into every session) and one markdown file per
  memory with front matter (``name``, ``description``, ``metadata.type``).
  ``<config dir>`` is ``CLAUDE_CONFIG_DIR`` or ``~/.claude``; the folder moves
  with ``autoMemoryDirectory`` (policy, local or user settings; checked-in
  project settings are ignored) or ``CLAUDE_COWORK_MEMORY_PATH_OVERRIDE``.
  The git root of a worktree is its main repository's, so every worktree of
  a repository shares one folder.
* **CLAUDE.md files**: the instructions Claude Code loads at a start, from the
  working directory up to the file system's root and from the config dir.

Every rule here was read from the Claude Code 2.1.197 binary (its
``memoryDir``, ``sanitizePath``, ``findGitRoot``, worktree resolution,
``isAutoMemoryEnabled`` and front matter reader) and is held by tests against
the real CLI.  Nothing here writes; reading is bounded.
"""

from __future__ import annotations

import os
import posixpath
import unicodedata
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from memlog import untrusted
from memlog.untrusted import Malformed, Refused, json_object, read_bytes

MEMORY_INDEX = "MEMORY.md"
#: a sanitised path longer than this is cut and given a hash of the whole path
MAX_SANITISED = 200
#: what one memory file or CLAUDE.md may take when read (larger ones are read this far)
MAX_FILE_BYTES = 64 << 10
#: memory files read from one folder at most (Claude Code's own scan stops at 200)
MAX_MEMORY_FILES = 1000
#: the memory types Claude Code writes
MEMORY_TYPES = ("user", "feedback", "project", "reference")
#: the files of one folder Claude Code loads as instructions
CLAUDE_MD_NAMES = ("CLAUDE.md", "CLAUDE.local.md", os.path.join(".claude", "CLAUDE.md"))
MANAGED_SETTINGS = Path("/etc/claude-code/managed-settings.json")
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def config_dir(env: Mapping[str, str] | None = None) -> Path:
    """Claude Code's configuration folder: ``CLAUDE_CONFIG_DIR``, else ``~/.claude``."""
    environ = os.environ if env is None else env
    given = environ.get("CLAUDE_CONFIG_DIR")
    base = given if given else os.path.join(_home(environ), ".claude")
    return Path(unicodedata.normalize("NFC", base))


def projects_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where Claude Code keeps each project's transcripts and auto memory."""
    return config_dir(env) / "projects"


def _home(env: Mapping[str, str]) -> str:
    return env.get("HOME") or os.path.expanduser("~")


def _units(text: str) -> list[int]:
    """``text`` as JavaScript sees a string: UTF-16 code units."""
    raw = text.encode("utf-16-le", "surrogatepass")
    return [int.from_bytes(raw[i : i + 2], "little") for i in range(0, len(raw), 2)]


def _java_hash(text: str) -> int:
    """JavaScript's ``(h << 5) - h + charCodeAt(i) | 0`` over ``text``: a signed 32-bit hash."""
    value = 0
    for unit in _units(text):
        value = (value * 31 + unit) & 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def _base36(number: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    found = ""
    while True:
        number, rest = divmod(number, 36)
        found = digits[rest] + found
        if not number:
            return found


def sanitise(path: str) -> str:
    """Claude Code's folder name for a path: every UTF-16 unit outside ``[a-zA-Z0-9]``
    becomes ``-``; over 200 characters, the first 200, ``-`` and a base-36 hash."""
    alnum = {*range(48, 58), *range(65, 91), *range(97, 123)}
    name = "".join(chr(u) if u in alnum else "-" for u in _units(path))
    if len(name) <= MAX_SANITISED:
        return name
    return f"{name[:MAX_SANITISED]}-{_base36(abs(_java_hash(path)))}"


def git_root(start: str) -> str | None:
    """The nearest folder from ``start`` up that holds ``.git`` (a folder or a file)."""
    here = posixpath.normpath(os.path.abspath(start))
    while True:
        if os.path.exists(os.path.join(here, ".git")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def main_worktree(root: str) -> str:
    """The main repository of the worktree at ``root`` (``root`` itself otherwise), as
    Claude Code resolves it, so that every worktree of a repository shares its memory."""
    try:
        pointer = _pointer(Path(root, ".git"))
        if not pointer.startswith("gitdir:"):
            return root
        gitdir = os.path.normpath(os.path.join(root, pointer[7:].strip()))
        common = _pointer(Path(gitdir, "commondir"))
        shared = os.path.normpath(os.path.join(gitdir, common))
        if os.path.dirname(gitdir) != os.path.join(shared, "worktrees"):
            return root
        back = _pointer(Path(gitdir, "gitdir"))
        if os.path.realpath(back) != os.path.join(os.path.realpath(root), ".git"):
            return root
    except (OSError, UnicodeDecodeError, Refused):
        return root
    return shared if os.path.basename(shared) != ".git" else os.path.dirname(shared)


#: the most of a git pointer file (``.git``, ``commondir``, ``gitdir``) read: one path
MAX_POINTER_BYTES = 4096


def _pointer(path: Path) -> str:
    """A git pointer file's one line (``Refused`` when it is larger than a path can be)."""
    return read_bytes(path, MAX_POINTER_BYTES).decode("utf-8").strip()


def project_key(cwd: str) -> str:
    """The path Claude Code names a project's folders after: the main repository's root
    of the git repository holding ``cwd``, else ``cwd`` itself."""
    root = git_root(cwd)
    return main_worktree(root) if root is not None else posixpath.normpath(os.path.abspath(cwd))


def read_json(path: Path) -> dict[str, Any]:
    """A settings file's object ({} when missing, unreadable, out of bounds or not an
    object: ``untrusted.json_object``)."""
    return json_object(path)


class Settings(NamedTuple):
    """The settings files that say where auto memory lives and whether it is on."""

    policy: dict[str, Any]
    user: dict[str, Any]
    project: dict[str, Any]
    local: dict[str, Any]

    @classmethod
    def read(cls, cwd: str, env: Mapping[str, str] | None = None) -> Settings:
        base = Path(cwd) / ".claude"
        return cls(
            read_json(MANAGED_SETTINGS), read_json(config_dir(env) / "settings.json"),
            read_json(base / "settings.json"), read_json(base / "settings.local.json"),
        )  # fmt: skip

    def merged(self) -> dict[str, Any]:
        """Later files win: user, project, local, policy."""
        return {**self.user, **self.project, **self.local, **self.policy}


def _folder_setting(value: object, home: str, expand: bool) -> str | None:
    """A configured folder as Claude Code takes it (None when it refuses it)."""
    if not isinstance(value, str) or not value:
        return None
    path = value
    if expand and path.startswith(("~/", "~\\")):
        rest = posixpath.normpath(path[2:] or ".")
        if rest in (".", "..") or rest.startswith("../"):
            return None
        path = os.path.join(home, path[2:])
    path = posixpath.normpath(path).rstrip("/")
    if not path.startswith("/") or len(path) < 3 or path.startswith("//") or "\0" in path:
        return None
    return unicodedata.normalize("NFC", path + "/")


def memory_folder(cwd: str, env: Mapping[str, str] | None = None) -> Path:
    """The auto memory folder Claude Code uses for a session started in ``cwd``."""
    environ = os.environ if env is None else env
    home = _home(environ)
    override = _folder_setting(environ.get("CLAUDE_COWORK_MEMORY_PATH_OVERRIDE"), home, False)
    if override is not None:
        return Path(override)
    settings = Settings.read(cwd, environ)
    for source in (settings.policy, settings.local, settings.user):
        found = _folder_setting(source.get("autoMemoryDirectory"), home, True)
        if found is not None:
            return Path(found)
    base = environ.get("CLAUDE_CODE_REMOTE_MEMORY_DIR") or str(config_dir(environ))
    folder = os.path.join(base, "projects", sanitise(project_key(cwd)), "memory")
    return Path(unicodedata.normalize("NFC", folder))


def auto_memory_on(cwd: str, env: Mapping[str, str] | None = None) -> tuple[bool, str]:
    """Whether Claude Code's auto memory is on for ``cwd``, and what says so."""
    environ = os.environ if env is None else env
    flag = environ.get("CLAUDE_CODE_DISABLE_AUTO_MEMORY", "").strip().lower()
    if flag in _TRUE:
        return False, "CLAUDE_CODE_DISABLE_AUTO_MEMORY is set"
    if flag in _FALSE and flag:
        return True, "CLAUDE_CODE_DISABLE_AUTO_MEMORY is false"
    if environ.get("CLAUDE_CODE_SIMPLE", "").strip().lower() in _TRUE:
        return False, "CLAUDE_CODE_SIMPLE (--bare) is set"
    value = Settings.read(cwd, environ).merged().get("autoMemoryEnabled")
    if isinstance(value, bool):
        return value, f"autoMemoryEnabled is {str(value).lower()} in the settings"
    return True, "on by default"


# -- memory files ---------------------------------------------------------------------------


class MemoryFile(NamedTuple):
    """One auto memory as its file says it."""

    path: Path
    name: str
    description: str
    #: ``user``, ``feedback``, ``project``, ``reference`` ("" when unknown)
    type: str
    body: str
    #: the front matter's ``modified`` (newer Claude Code versions write it)
    modified: str


def memory_files(folder: Path) -> Iterator[Path]:
    """The memory files of ``folder`` and its subfolders (not the index), sorted; bounded."""
    found: list[Path] = []
    for where, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".md") and not (name == MEMORY_INDEX and where == str(folder)):
                found.append(Path(where, name))
                if len(found) >= MAX_MEMORY_FILES:
                    return iter(found)
    return iter(found)


def read_text(path: Path, limit: int = MAX_FILE_BYTES) -> str | None:
    """The text of the regular file ``path`` (its first ``limit`` bytes), None when it
    cannot be read; a link is never followed."""
    try:
        return untrusted.read_text(path, limit, follow=False, whole=False)
    except (OSError, Refused):
        return None


def split_front_matter(text: str) -> tuple[str, str]:
    """The YAML between a leading ``---`` line and the next, and the body after it."""
    lines = text.lstrip("\ufeff").split("\n")
    if not lines or lines[0].strip() != "---":
        return "", text
    for index in range(1, len(lines)):
        if lines[index].strip() == "---":
            return "\n".join(lines[1:index]), "\n".join(lines[index + 1 :])
    return "", text


def parse_memory(path: Path, text: str) -> MemoryFile:
    """A memory file's fields as Claude Code reads them: ``name`` and ``description`` at
    the top of the front matter, every other key (``type``, ``modified`` …) as metadata
    with ``metadata:`` winning.  Front matter that is not YAML is no front matter;
    ``Refused`` for one with an alias or nested deeper than ``untrusted.MAX_DEPTH``."""
    head, body = split_front_matter(text)
    data = _yaml(head) if head.strip() else {}
    metadata = {k: v for k, v in data.items() if k not in ("name", "description", "metadata")}
    if isinstance(data.get("metadata"), dict):
        metadata.update(data["metadata"])
    body = body.lstrip("\n").rstrip()
    kind = metadata.get("type")
    name = _text(data.get("name")) or path.stem
    description = _text(data.get("description")) or _first_line(body) or name
    return MemoryFile(
        path, name, description, kind if kind in MEMORY_TYPES else "", body,
        _text(metadata.get("modified")),
    )  # fmt: skip


def _yaml(text: str) -> dict[str, Any]:
    try:  # every value as the text written (a date stays the date written)
        data = untrusted.load_yaml(text, plain=True)
    except Malformed:
        return {}
    return data if isinstance(data, dict) else {}


def _text(value: object) -> str:
    if value is None or isinstance(value, dict | list):
        return ""
    return " ".join(str(value).split())


def _first_line(body: str) -> str:
    for line in body.splitlines():
        words = line.strip().lstrip("#").strip()
        if words:
            return " ".join(words.split())
    return ""


# -- CLAUDE.md ----------------------------------------------------------------------------


def claude_md_files(cwd: str, env: Mapping[str, str] | None = None) -> list[Path]:
    """The CLAUDE.md files a session started in ``cwd`` loads: the config dir's, then each
    folder's from the root down to ``cwd`` (those that exist)."""
    here = posixpath.normpath(os.path.abspath(cwd))
    folders = [here]
    while os.path.dirname(folders[-1]) != folders[-1]:
        folders.append(os.path.dirname(folders[-1]))
    found = [config_dir(env) / "CLAUDE.md"]
    found += [Path(f, name) for f in reversed(folders) for name in CLAUDE_MD_NAMES]
    return [p for p in found if p.is_file()]


# -- where an imported memory came from ------------------------------------------------------


def origin(device: str, path: Path) -> str:
    """The ``origin`` of an auto memory recorded from ``path`` on this device: a path
    alone would name another machine's file on a home that syncs."""
    return f"claude-code:{device}:{path}"


def origin_prefix(device: str, folder: Path) -> str:
    """What the origins of the memories of ``folder`` on ``device`` start with."""
    return f"claude-code:{device}:{str(folder).rstrip('/')}/"
