"""Keeping the markdown files in step with the SQLite view.

After a catch-up, only the files whose content the applied events changed
are written again, and most of them are patched rather than rendered: a file
is its header and one block per live entry in the order of creation, so an
entry whose block changed has it replaced where it is, one that left has it
removed, and a new one that sorts last is appended (a project's file at 100k
entries holds a thousand of them, which a render would read from the rows).
A file patched must be the one memlog last wrote and each block found once;
otherwise, and for branch memory files, the file is rendered again from the
rows of the view.  When the files stand anywhere else than where that
catch-up started (a crash between the two, a rebuild meanwhile), or were
written in an older format, every file is planned from all entries instead.
A file lock keeps two processes from writing the files at once.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import NamedTuple

from memlog import locking
from memlog.errors import HomeError
from memlog.files import no_links
from memlog.home import Home
from memlog.projections.fold import Entry
from memlog.projections.markdown_view import branch, render
from memlog.projections.markdown_view.writer import (
    FORMAT,
    MarkdownState,
    digest,
    load_state,
    remove_unplanned,
    save_state,
    write_files,
)
from memlog.projections.sqlite_view import store
from memlog.projections.sqlite_view.queries import (
    branch_members,
    holds_any,
    live_members,
    source_projects,
)

#: the most edits a file is patched with: each is a pass over its text (12,000 edits of a
#: 5 MB file took 80 s), where rendering it whole reads its entries once
MOST_EDITS = 64
Signature = tuple[tuple[str, ...], str]


def locked(folder: Home) -> contextlib.AbstractContextManager[None]:
    return locking.locked(folder.markdown_lock)


class Edit(NamedTuple):
    """An entry's block in one file before and after the events (None: not in it)."""

    old: str | None
    new: str | None
    key: tuple[int, str]


class Changes(NamedTuple):
    """The files the events changed, with the projects (or branch keys) each shows, and
    the blocks that changed in the files made of blocks."""

    files: dict[str, set[str]]
    edits: dict[str, list[Edit]]


def blocks(entry: Entry) -> dict[str, str]:
    """The block of ``entry`` in each file made of blocks that shows it."""
    if not entry.live:
        return {}
    found = {render.project_path(entry): render.project_block(entry)}
    if render.global_path(entry.category) in render.paths_of(entry):
        found[render.global_path(entry.category)] = render.global_block(entry)
    return found


def changed_files(
    touched: list[Entry], before: dict[str, Signature], old_blocks: dict[str, dict[str, str]]
) -> Changes:
    """The files whose content changed with ``touched``, the projects each shows, and the
    blocks that changed (``old_blocks``: each entry's before the events)."""
    changes = Changes({}, {})
    for entry in touched:
        old, new = before.get(entry.id), render.signature(entry)
        if old == new:
            continue
        paths = set(new[0]) | (set(old[0]) if old is not None else set())
        for path in paths:
            keys = render.branch_keys(entry, path) if branch.is_branch_file(path) else set()
            changes.files.setdefault(path, set()).update(keys or {entry.source_project})
        was, now = old_blocks.get(entry.id, {}), blocks(entry)
        for path in set(was) | set(now):
            if was.get(path) != now.get(path):
                edit = Edit(was.get(path), now.get(path), (entry.created_seq, entry.id))
                changes.edits.setdefault(path, []).append(edit)
    return changes


def follow(
    folder: Home, db_path: Path, changed: Changes, before: store.Stored, after: store.Stored
) -> list[str]:
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
                files, gone = _render_changed(db, folder, changed, state)
            else:
                files, gone = render.plan(store.load_entries(db).values()), set(state.files)
                state.last = {}
        notes = remove_unplanned(folder, set(state.files) - (gone - set(files)), state)
        return notes + write_markdown(folder, files, state, now)


def _render_changed(
    db: sqlite3.Connection, folder: Home, changed: Changes, state: MarkdownState
) -> tuple[dict[str, str], set[str]]:
    """The changed files, rendered or patched; and those no entry belongs to any longer
    (a replay makes no such file: they are removed)."""
    files, gone = {}, set()
    for path, projects in sorted(changed.files.items()):
        edits = changed.edits.get(path, [])
        patched = _patched(folder, path, edits, state)
        members = _members(db, path, projects) if patched is None else None
        emptied = not members if members is not None else any(e.new is None for e in edits)
        if emptied and not _held_by_any(db, path, projects):
            gone.add(path)
            state.last.pop(path, None)
        elif patched is not None:
            files[path] = patched
        else:
            files[path] = render.render_file(path, members or [])
            _note_last(state, path, members or [])
    return files, gone


def _note_last(state: MarkdownState, path: str, members: list[Entry]) -> None:
    """Remember the order key of the last entry of a file rendered whole."""
    live = [(e.created_seq, e.id) for e in members if e.live]
    if live and not branch.is_branch_file(path):
        state.last[path] = max(live)
    else:
        state.last.pop(path, None)


def _patched(folder: Home, path: str, edits: list[Edit], state: MarkdownState) -> str | None:
    """The file at ``path`` with ``edits`` made in place, when it is the one memlog last
    wrote and every edit can be made where the whole file would have it; else None."""
    if branch.is_branch_file(path) or not edits or path not in state.files:
        return None
    if len(edits) > MOST_EDITS:
        return None  # each edit is a pass over the text: rendered whole, in one
    try:
        text = no_links(folder.markdown(path), folder).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, HomeError):
        return None  # rendered whole: ``write_files`` says what is wrong
    if digest(text.encode("utf-8")) != state.files[path]:
        return None  # edited by hand: rendered again, a copy of it kept
    for edit in sorted(edits, key=lambda e: e.key):
        if edit.old is not None:
            found = "\n" + edit.old
            if text.count(found) != 1:
                return None
            text = text.replace(found, "\n" + edit.new if edit.new is not None else "")
            if edit.new is None and state.last.get(path) == edit.key:
                del state.last[path]  # the new last one is not known
        elif edit.new is not None:
            last = state.last.get(path)
            if last is None or tuple(last) >= edit.key:
                return None  # it goes somewhere in the middle
            text += "\n" + edit.new
            state.last[path] = edit.key
    return text


def _members(db: sqlite3.Connection, path: str, projects: set[str]) -> list[Entry]:
    """The entries ``path`` shows (only live ones are rendered, so only they are read;
    a branch file: every entry that ever joined its memories, ``projects`` being their keys)."""
    if branch.is_branch_file(path):
        return [e for e in branch_members(db, projects) if path in render.paths_of(e)]
    return [e for e in live_members(db, *_file_of(db, path, projects))
            if path in render.paths_of(e)]  # fmt: skip


def _held_by_any(db: sqlite3.Connection, path: str, projects: set[str]) -> bool:
    """Whether an entry, live or not, belongs to the file at ``path`` (a replay writes a
    file for every path some entry has, even with none of them live)."""
    if branch.is_branch_file(path):
        return bool(_members(db, path, projects))
    return holds_any(db, *_file_of(db, path, projects))


def _file_of(db: sqlite3.Connection, path: str, projects: set[str]) -> tuple[str, set[str] | None]:
    """The category of a project or global file, and the projects whose entries it shows
    (None: the global file, of promoted entries): those of ``projects`` (the projects of
    the entries a catch-up touched, and the ones they left, which may name others) whose
    folder it is, else the view's projects whose folder it is.  An entry of another
    project's file never keeps this one, nor hides this one's."""
    category = path.rsplit("/", 1)[-1].removesuffix(".md")
    if not path.startswith("projects/"):
        return category, None
    folder = path.split("/")[1]
    own = {p for p in [*projects, folder, ""] if render.project_dir(p) == folder}
    if not own:  # a name changed to make the folder: the view knows it
        own = {p for p in source_projects(db, category) if render.project_dir(p) == folder}
    return category, own


def write_markdown(
    folder: Home, files: dict[str, str], state: MarkdownState, now: store.Stored
) -> list[str]:
    """Write ``files`` and record the position they reflect."""
    notes = write_files(folder, files, state)
    state.segment, state.offset, state.seq = now.position.segment, now.position.offset, now.seq
    state.format = FORMAT
    save_state(folder, state)
    return notes
