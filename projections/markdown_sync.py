"""Keeping the markdown files in step with the SQLite view.

After a catch-up, only the files whose content the applied events changed
are rendered again, from the rows of the view; when the files stand
anywhere else than where that catch-up started (a crash between the two, a
rebuild meanwhile), or were written in an older format, every file is planned
from all entries instead.  A file
lock keeps two processes from writing the files at once.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

from memlog import locking
from memlog.projections.fold import Entry
from memlog.projections.markdown_view import branch, render
from memlog.projections.markdown_view.writer import (
    FORMAT,
    MarkdownState,
    load_state,
    save_state,
    write_files,
)
from memlog.projections.sqlite_view import store
from memlog.projections.sqlite_view.queries import branch_members, live_members

LOCK_NAME = ".markdown.lock"
Signature = tuple[tuple[str, ...], str]


def locked(folder: Path) -> contextlib.AbstractContextManager[None]:
    return locking.locked(folder / LOCK_NAME)


def changed_files(touched: list[Entry], before: dict[str, Signature]) -> dict[str, set[str]]:
    """The files whose content changed with ``touched``, and the projects each shows."""
    changed: dict[str, set[str]] = {}
    for entry in touched:
        old, new = before.get(entry.id), render.signature(entry)
        if old == new:
            continue
        paths = set(new[0]) | (set(old[0]) if old is not None else set())
        for path in paths:
            keys = render.branch_keys(entry, path) if branch.is_branch_file(path) else set()
            changed.setdefault(path, set()).update(keys or {entry.source_project})
    return changed


def follow(
    folder: Path, db_path: Path, changed: dict[str, set[str]], before: store.Stored,
    after: store.Stored,
) -> list[str]:  # fmt: skip
    """Bring the files to the view's position; notes on hand edits kept."""
    with locked(folder):
        state = load_state(folder)
        with store.opened(db_path) as db, store.snapshot(db):
            now = store.get_position(db)
            same_format = state.format == FORMAT  # else an older memlog wrote them: all again
            if same_format and (state.seq, state.segment, state.offset) == (now.seq, *now.position):
                return []
            if (
                same_format
                and (state.seq, state.segment) == (before.seq, before.position.segment)
                and (state.offset == before.position.offset and now == after)
            ):
                files = _render_changed(db, changed)
            else:
                files = render.plan(store.load_entries(db).values())
        return write_markdown(folder, files, state, now)


def _render_changed(db: sqlite3.Connection, changed: dict[str, set[str]]) -> dict[str, str]:
    files = {}
    for path, projects in sorted(changed.items()):
        files[path] = render.render_file(path, _members(db, path, projects))
    return files


def _members(db: sqlite3.Connection, path: str, projects: set[str]) -> list[Entry]:
    """The entries ``path`` shows (only live ones are rendered, so only they are read;
    a branch file: every entry that ever joined its memories, ``projects`` being their keys)."""
    if branch.is_branch_file(path):
        return [e for e in branch_members(db, projects) if path in render.paths_of(e)]
    category = path.rsplit("/", 1)[-1].removesuffix(".md")
    entries = live_members(db, category, projects if path.startswith("projects/") else None)
    return [e for e in entries if path in render.paths_of(e)]


def write_markdown(
    folder: Path, files: dict[str, str], state: MarkdownState, now: store.Stored
) -> list[str]:
    """Write ``files`` and record the position they reflect."""
    notes = write_files(folder, files, state)
    state.segment, state.offset, state.seq = now.position.segment, now.position.offset, now.seq
    state.format = FORMAT
    save_state(folder, state)
    return notes
