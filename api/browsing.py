"""Browsing what memlog knows, now or as it was: what the page (``memlog ui``) calls.

A ``View`` is where reads go: the live home (caught up first), or a
snapshot of the views as of a past sequence number or time, rebuilt from
the log into a folder of the caller's (``Snapshots``) and never caught up
again.  Every function reads through a ``View``, so each page works the
same in the present and in the past: lists with filters, the hook's own
ranking for a query, an entry with its whole timeline and lineage, what
the next session would get in a project, the events of the log (any type,
extraction audits among them once they exist) and the markdown files
(branch memory among them once it exists).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import stat
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import msgspec

from memlog.api import recall
from memlog.api.reading import Filters, cost_said, extraction, tag
from memlog.citations import Checked
from memlog.errors import InvalidInput, MemlogError
from memlog.eventlog import scan
from memlog.eventlog.bounds import Bound, parse_bound, within
from memlog.eventlog.events import Event
from memlog.files import alive, atomic_write
from memlog.home import Home
from memlog.projections.fold import Entry
from memlog.projections.markdown_view.writer import load_state
from memlog.projections.runner import rebuild
from memlog.projections.sqlite_view import listing, queries
from memlog.projections.sqlite_view.queries import Listing
from memlog.retrieval import stale
from memlog.retrieval.inject import build
from memlog.retrieval.request import Chosen, Injection, Request
from memlog.untrusted import shown
from memlog.workspace import Workspace

#: snapshots kept built at once (each is a memory.db and its files)
KEPT_SNAPSHOTS = 4


@dataclasses.dataclass(frozen=True)
class View:
    """Where a page reads: the live home, or the views as of ``until`` in ``folder``."""

    ws: Workspace
    folder: Home
    until: str = ""
    seq: int | None = None

    @property
    def live(self) -> bool:
        return not self.until

    @property
    def bound(self) -> Bound | None:
        return Bound(self.seq, None) if self.seq is not None else None

    def workspace(self, where: Path | None = None, exact: bool = False) -> Workspace:
        """A workspace reading this view's folder (for ``where``'s project when given;
        ``exact``: ``where`` is the project root itself)."""
        ws = Workspace.open(where, home=self.ws.home, exact=exact) if where else self.ws
        return msgspec.structs.replace(ws, home=self.folder)

    @property
    def has_view(self) -> bool:
        return self.folder.db.exists()


#: where a running page says, in the home, which folder holds its snapshots (one file per
#: page, named by its process id), and the generation a redaction raises
GENERATION = "generation"


class Snapshots:
    """Views as of past points, rebuilt on first use into folders under ``root``.

    With ``home``, the folder is registered there, so ``memlog redact`` can remove the
    copies of text it takes out (``forget_snapshots``); every snapshot built before a
    redaction is then dropped and built again from the rewritten log.
    """

    def __init__(self, root: Path, home: Home | None = None) -> None:
        self.root = root
        self.home = home
        self.built: dict[str, tuple[View, str]] = {}
        self.made = 0
        self.lock = threading.Lock()
        self.registered = _register(home, root) if home is not None else None

    def at(self, ws: Workspace, until: str) -> View:
        """The view as of ``until`` (a sequence number or an ISO time)."""
        bound = parse_bound(until)
        key = str(bound.seq) if bound.seq is not None else str(bound.ts)
        with self.lock:
            generation = self._generation()
            if any(made != generation for _, made in self.built.values()):
                self._drop(list(self.built))  # a redaction came after them
            if key not in self.built:
                self._drop(list(self.built)[: max(0, len(self.built) - KEPT_SNAPSHOTS + 1)])
                self.made += 1
                folder = Home(self.root / f"as-of-{self.made}")
                done = rebuild(ws.home, ws.space, bound, folder)
                self.built[key] = (View(ws, folder, until.strip(), done.seq), generation)
            return self.built[key][0]

    def _generation(self) -> str:
        return _read(self.home.pages / GENERATION) if self.home is not None else ""

    def _drop(self, keys: list[str]) -> None:
        for key in keys:
            view, _ = self.built.pop(key)
            shutil.rmtree(view.folder.root, ignore_errors=True)


def _register(home: Home, root: Path) -> Path | None:
    """Say in ``home`` that this process keeps snapshots in ``root`` (None when the home
    cannot take it: a read-only snapshot home, say)."""
    folder = home.pages
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        path = folder / str(os.getpid())
        atomic_write(path, str(root).encode("utf-8", "surrogateescape"), home)
    except (OSError, MemlogError):  # a link where it goes is refused, never followed
        return None
    return path


def unregister(home: Home) -> None:
    """This process keeps no snapshots of ``home`` any more (it removes its folder)."""
    (home.pages / str(os.getpid())).unlink(missing_ok=True)


def forget_snapshots(home: Home) -> list[str]:
    """Remove every snapshot a page of ``home`` built (a redaction's text may be in them)
    and make running pages build them again; a page no longer running loses its whole
    folder.  The folders removed."""
    folder = home.pages
    if folder.is_symlink() or not folder.is_dir():
        return []
    generation = _read(folder / GENERATION)
    atomic_write(folder / GENERATION, str(int(generation or 0) + 1).encode("ascii"), home)
    removed = []
    for registration in folder.iterdir():
        if not registration.name.isdigit():
            continue
        root = Path(_read(registration))
        if not root.name.startswith("memlog-ui-") or not _own_folder(root):
            registration.unlink(missing_ok=True)
            continue
        running = alive(int(registration.name))
        for path in [root] if not running else sorted(root.glob("as-of-*")):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(str(path))
        if not running:
            registration.unlink(missing_ok=True)
    return removed


def _own_folder(path: Path) -> bool:
    """A folder (not a link) of this user: what a page of this user made."""
    try:
        info = path.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="surrogateescape").strip()
    except OSError:
        return ""


def live(ws: Workspace) -> tuple[View, list[str]]:
    """The present: the views caught up with the log first."""
    return View(ws, ws.home), ws.refresh()


def entries(view: View, filters: Filters, limit: int = 50, offset: int = 0) -> Listing:
    if not view.has_view:
        return Listing(0, [])
    return listing.list_entries(view.folder, filters, limit, offset)


def facets(view: View) -> dict[str, dict[str, int]]:
    return listing.facets(view.folder) if view.has_view else {}


def search(
    view: View, query: str, categories: Sequence[str] | None = None, limit: int = 20
) -> Injection:
    """The hook's hybrid ranking for ``query`` in this view (read only: nothing recorded)."""
    if not query.strip():
        raise InvalidInput("the query is empty")
    request = Request.interactive(view.workspace(), limit=limit, query=query, categories=categories)
    return build(msgspec.structs.replace(request, catch_up=view.live))


def ranked(
    view: View, query: str, filters: Filters, limit: int = 50
) -> tuple[Injection, list[tuple[Entry, Chosen]]]:
    """The ranking for ``query`` (live entries of the filter's category, best first), and
    the entries it chose that pass the other filters, each with its scores."""
    wanted = [filters.category] if filters.category else None
    result = search(view, query, wanted, limit)
    found = queries.entries(view.folder, [c.id for c in result.chosen], vectors=False)
    by_id = {e.id: e for e in found if listing.matches(e, filters)}
    return result, [(by_id[c.id], c) for c in result.chosen if c.id in by_id]


def next_session(view: View, directory: Path, limit: int | None = None) -> Injection:
    """What the SessionStart hook would inject for the project whose root is ``directory``
    (as ``memlog inject --project-root`` prints it; nothing is recorded), with every entry
    the ranking chose that it leaves out and why (``recall.preview``)."""
    if not directory.is_dir():
        raise InvalidInput(f"{directory} is not a directory")
    ws = view.workspace(directory.resolve(), exact=True)
    request = msgspec.structs.replace(Request.interactive(ws, limit=limit), catch_up=view.live)
    return recall.preview(ws, request)


def stale_lessons(view: View, directory: Path) -> list[tuple[Entry, Checked]]:
    """The lessons of the project at ``directory`` whose cited files are gone from its
    working tree (``memlog stale``), each with what is gone."""
    ws = view.workspace(directory.resolve(), exact=True)
    if ws.root is None:
        return []
    mine = [e for e in queries.entries(view.folder, vectors=False)
            if e.live and ws.project in e.projects]  # fmt: skip
    by_id = {e.id: e for e in mine}
    found = stale.of_project(ws, mine)
    return sorted(((by_id[i], c) for i, c in found.items() if c.stale),
                  key=lambda pair: pair[0].name.lower())  # fmt: skip


class Detail(NamedTuple):
    entry: Entry
    timeline: list[Event]
    replaced: list[Entry]
    replaced_by: list[Entry]


def detail(view: View, entry_id: str) -> Detail:
    """An entry as the view has it, every event about it up to the view, and its lineage."""
    entry = queries.find_entry(view.folder, entry_id)
    timeline = [
        event
        for event in scan.about(view.ws.log("ui"), entry.id, entry.description)
        if within(event.seq, event.ts, None, view.bound)
    ]
    before, after = listing.lineage(view.folder, entry)
    return Detail(entry, timeline, before, after)


def events(
    view: View, types: Sequence[str] = (), limit: int = 100, before: int | None = None
) -> list[Event]:
    """The last ``limit`` events of the given types (all without), newest first, up to the
    view's point and below sequence ``before`` when given."""
    limits = [n for n in (view.seq, None if before is None else before - 1) if n is not None]
    up_to = min(limits) if limits else None
    found = scan.latest(view.ws.log("ui"), limit, types, up_to)
    return [e for e in found if not types or tag(e) in types]


def costs(view: View) -> list[str]:
    """What extraction cost today and in all as of the view, as ``memlog stats`` says it:
    every call counted once, whether an audit carries it or not (a session that learned
    nothing leaves no audit)."""
    return cost_said(extraction(view.workspace())) if view.has_view else []


def names(view: View, ids: Sequence[str]) -> dict[str, str]:
    """The names of the entries of ``ids`` the view holds."""
    return {e.id: e.name for e in _entries(view, ids)}


def descriptions(view: View, ids: Sequence[str]) -> dict[str, str]:
    """The whole descriptions of the entries of ``ids`` the view holds."""
    return {e.id: e.description for e in _entries(view, ids)}


def _entries(view: View, ids: Sequence[str]) -> list[Entry]:
    if not view.has_view or not ids:
        return []
    return queries.entries(view.folder, sorted(set(ids)), vectors=False)


def files(view: View) -> list[tuple[str, int]]:
    """The markdown files of the view (the global store, each project's, branch memory …)."""
    found = []
    for rel in sorted(load_state(view.folder).files):
        path = view.folder.markdown(rel)
        if path.is_file():
            found.append((rel, path.stat().st_size))
    return found


def file_text(view: View, rel: str) -> str:
    """One markdown file the view wrote (no other path is ever read)."""
    if rel not in load_state(view.folder).files:
        raise InvalidInput(f"{shown(rel)} is not a file of the markdown view")
    return view.folder.markdown(rel).read_text(encoding="utf-8", errors="replace")
