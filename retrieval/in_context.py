"""What a session already holds, so memlog gives each lesson once.

Before ranking, the hook (and ``memlog inject``, the page, the prompt
recall) gathers the entries the session already has or must not get, each
with the reason, and the ranking passes over them (``Request.excluded``):

* **CLAUDE.md**: Claude Code loads every CLAUDE.md from the working
  directory up, and the config dir's; an entry whose description is a line
  or a paragraph of one (memlog's own block there, ``memlog claude-md``,
  lists descriptions one per line) is already in the context;
* **auto memory**: Claude Code loads its auto memory index (``MEMORY.md``)
  into every session while auto memory is on; the memories memlog recorded
  from that folder on this machine are left to it;
* **branch memory**: an entry extracted on a branch is given only in
  checkouts of that branch (the repository's own or one of its worktrees),
  in the Branch Memory block, unless it was promoted;
* **received**: what the session already got from memlog (``received``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from memlog import claude_files
from memlog.eventlog.devices import known_device_id
from memlog.eventlog.events import content_hash
from memlog.home import Home
from memlog.projections.fold import branch_key
from memlog.projections.sqlite_view import queries
from memlog.retrieval import received

IN_CLAUDE_MD = "in a CLAUDE.md Claude Code loads"
IN_AUTO_MEMORY = "in Claude Code's auto memory, whose MEMORY.md it loads"
IN_BRANCH_MEMORY = "in the Branch Memory block"
OTHER_BRANCH = "branch memory of another branch"
RECEIVED = "received earlier in this session"
#: the fewest words a CLAUDE.md line needs to be taken for a lesson
MIN_WORDS = 3
NATIVE_SOURCE = "claude-code"


class Checkout(NamedTuple):
    """The branch memories a checkout is given: ``project/branch`` of the repository and
    each of its worktrees with the branch checked out here."""

    branch: str
    keys: frozenset[str]


def checkout(root: Path | None, project: str, branch: str) -> Checkout:
    """The branch memory keys of ``branch`` in the repository holding ``root``."""
    if root is None or not branch:
        return Checkout(branch, frozenset())
    names = {project, *(Path(p).name for p in worktree_roots(str(root)))}
    return Checkout(branch, frozenset(branch_key(n, branch) for n in names if n))


def worktree_roots(root: str) -> list[str]:
    """The main checkout and every worktree of the repository at ``root``."""
    main = claude_files.main_worktree(root)
    found = [main]
    try:
        with os.scandir(Path(main, ".git", "worktrees")) as listing:
            for entry in listing:
                pointer = claude_files.read_text(Path(entry.path, "gitdir"), 4096) or ""
                if pointer.strip():
                    found.append(os.path.dirname(pointer.strip()))
    except OSError:
        pass
    return found


def claude_md_ids(cwd: str, env: dict[str, str] | None = None) -> set[str]:
    """The entry ids of every line and paragraph of the CLAUDE.md files loaded in ``cwd``."""
    found: set[str] = set()
    for path in claude_files.claude_md_files(cwd, env):
        found.update(content_hash(t) for t in passages(claude_files.read_text(path) or ""))
    return found


def passages(text: str) -> Iterable[str]:
    """The lines (without list marks) and paragraphs of a markdown text that could be a
    lesson's description."""
    paragraph: list[str] = []
    for raw in [*text.splitlines(), ""]:
        line = raw.strip().lstrip("-*+>").strip()
        if line and line[0].isdigit() and ". " in line[:4]:
            line = line.split(". ", 1)[1]
        if not line:
            if len(paragraph) > 1:
                yield " ".join(paragraph)
            paragraph = []
            continue
        paragraph.append(line)
        if len(line.split()) >= MIN_WORDS:
            yield line


def native_ids(home: Home, cwd: str, env: dict[str, str] | None = None) -> list[str]:
    """The live memories recorded on this machine from the auto memory folder Claude
    Code loads for ``cwd`` (none while auto memory is off there)."""
    device = known_device_id(home)
    if not device or not claude_files.auto_memory_on(cwd, env)[0]:
        return []
    prefix = claude_files.origin_prefix(device, claude_files.memory_folder(cwd, env))
    return queries.with_origin(home, NATIVE_SOURCE, prefix)


def branch_excluded(home: Home, here: Checkout) -> tuple[list[str], dict[str, str]]:
    """The live entries of this checkout's branch memory, and those of other branches'
    (not promoted) that are not given here."""
    mine, others = [], {}
    for entry_id, keys, promoted in queries.branch_scoped(home):
        if here.keys & set(keys):
            mine.append(entry_id)
        elif not promoted:
            others[entry_id] = OTHER_BRANCH
    return mine, others


def excluded(
    home: Home,
    cwd: str | None,
    session: str = "",
    env: dict[str, str] | None = None,
) -> dict[str, str]:
    """Every entry the session already holds, with the reason: in a CLAUDE.md, in the
    auto memory, or received from memlog (``session``: "" after a fresh start)."""
    found: dict[str, str] = {}
    if cwd is not None:
        found.update(dict.fromkeys(native_ids(home, cwd, env), IN_AUTO_MEMORY))
        found.update(dict.fromkeys(claude_md_ids(cwd, env), IN_CLAUDE_MD))
    found.update(dict.fromkeys(received.received(home, session), RECEIVED))
    return found
