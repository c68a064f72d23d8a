"""One branch memory as its views show it, read from ``memory.db``.

Shared by the hook and ``memlog inject`` (the injected block), ``memlog
branch show`` (the file's text) and ``memlog claude-md`` (the CLAUDE.md
block), so they always agree.
"""

from __future__ import annotations

from pathlib import Path

from memlog.eventlog.devices import known_device_id
from memlog.home import Home
from memlog.projections.fold import Entry, branch_key
from memlog.projections.holds import foreign
from memlog.projections.markdown_view import branch, render
from memlog.projections.sqlite_view import queries


def live_entries(home: Home, project: str, name: str, vectors: bool = False) -> list[Entry]:
    """The live entries of the branch memory, first seen first."""
    return queries.branch_entries(home, branch_key(project, name), vectors)


def block(home: Home, project: str, name: str) -> str:
    """``## Branch Memory (auto-extracted)`` for the branch ("" when it has nothing)."""
    if not name:
        return ""
    entries = live_entries(home, project, name)
    return branch.injected_block(entries, foreign=foreign(entries, known_device_id(home)))


def file_text(home: Home, project: str, name: str) -> str | None:
    """The branch memory file as the markdown view writes it (None: never had memory)."""
    key = branch_key(project, name)
    members = queries.branch_file_members(home, key)
    if not members:
        return None
    return branch.branch_file(name, key, members)


def file_path(home: Home, project: str, name: str) -> Path:
    return home.markdown(render.branch_path(branch_key(project, name)))
