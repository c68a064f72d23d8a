"""Branch memory for the interfaces: list, show, clear, and the CLAUDE.md block.

Branch memories are the entries extracted on a git branch of a project,
in four sections; ``clear`` retires each of them from that branch memory
only (an entry another branch also holds stays live there), with the
reason given, and records one ``memory.evolved`` audit.  ``claude_md``
renders the injected block into a project's ``CLAUDE.md`` between memlog's
markers and never touches any other byte; written, the block then follows the
branch checked out (``checkout``: a post-checkout hook runs ``checked_out``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import msgspec

from memlog.api import checkout
from memlog.capture.pipeline import capture
from memlog.errors import InvalidInput
from memlog.eventlog.bounds import slices
from memlog.eventlog.events import Event, MemoryEvolved, Operation, Retired
from memlog.files import atomic_write
from memlog.git import current_branch
from memlog.projections import branch_memory
from memlog.projections.fold import Entry, branch_key
from memlog.projections.markdown_view.branch import (
    puffin_time,
    splice_claude_md,
    split_key,
    unsplice_claude_md,
)
from memlog.projections.sqlite_view import queries
from memlog.untrusted import Refused, read_bytes, shown
from memlog.vocabulary import SECTIONS
from memlog.workspace import Workspace

CLAUDE_MD = "CLAUDE.md"


class BranchInfo(msgspec.Struct):
    project: str
    branch: str
    #: live entries by section
    sections: dict[str, int]
    live: int
    file: str
    #: when it last changed (Puffin's time format)
    updated: str


class BranchView(msgspec.Struct):
    project: str
    branch: str
    text: str
    entries: list[Entry]
    audits: list[MemoryEvolved]


class Written(NamedTuple):
    path: Path
    text: str
    changed: bool
    #: there was no CLAUDE.md before, and now there is one
    created: bool = False
    #: the CLAUDE.md held nothing but memlog's block, and the branch has none: it is gone
    removed: bool = False
    #: what was done so that the block follows checkouts ("" when nothing was needed)
    hook: str = ""


def branches(ws: Workspace, project: str | None = None) -> list[BranchInfo]:
    """Every branch memory (of one project when named), cleared ones included."""
    ws.catch_up()
    found = []
    for key, sections in queries.branch_summary(ws.home).items():
        owner, name = split_key(key)
        if project is not None and owner != project:
            continue
        counts: dict[str, int] = {s: sections.get(s, 0) for s in SECTIONS}
        path = branch_memory.file_path(ws.home, owner, name)
        updated = last_updated(ws, owner, name)
        found.append(BranchInfo(owner, name, counts, sum(counts.values()), str(path), updated))
    return found


def _events_of(ws: Workspace, project: str, name: str) -> Iterator[Event]:
    for record in ws.log("branch").read():
        event = record.event
        if isinstance(event, MemoryEvolved) and (event.project, event.branch) == (project, name):
            yield event


def show(ws: Workspace, name: str, project: str | None = None) -> BranchView:
    """A branch memory as its file shows it, its live entries and its audits."""
    ws.catch_up()
    owner = ws.project if project is None else project
    text = branch_memory.file_text(ws.home, owner, name)
    if text is None:
        raise InvalidInput(f"no branch memory for {shown(name)} in project {shown(owner)}")
    audits = [e for e in _events_of(ws, owner, name) if isinstance(e, MemoryEvolved)]
    audits.sort(key=lambda e: e.seq)
    entries = branch_memory.live_entries(ws.home, owner, name)
    return BranchView(owner, name, text, entries, audits)


def clear(
    ws: Workspace, name: str, reason: str, project: str | None = None
) -> tuple[list[Entry], list[str]]:
    """Retire every entry of the branch memory from it; its history stays."""
    if not reason.strip():
        raise InvalidInput("--reason is empty")
    ws.catch_up()
    owner = ws.project if project is None else project
    entries = branch_memory.live_entries(ws.home, owner, name)
    if not entries:
        raise InvalidInput(f"the branch memory of {shown(name)} in project {shown(owner)} is empty")
    key, why = branch_key(owner, name), reason.strip()
    retired = [Retired(entry_id=e.id, reason=why, branch=key) for e in entries]
    ops = [Operation(op="remove", entry_id=e.id, reason=why) for e in entries]
    audits = [
        MemoryEvolved(project=owner, branch=name, mode="cleared", operations=some, note=why)
        for some in slices(ops)
    ]  # one audit; several of one batch for a branch of many entries
    return entries, capture(ws, [*retired, *audits], "branch clear").notes


def last_updated(ws: Workspace, project: str, name: str) -> str:
    """When the branch memory last changed (Puffin's time format), "" when never."""
    members = queries.branch_file_members(ws.home, branch_key(project, name))
    stamps = [s.split("\t", 1)[1] for e in members for s in e.branch_stamps
              if s.split("\t", 1)[0] == branch_key(project, name)]  # fmt: skip
    return puffin_time(max(stamps, default=""))


#: the largest CLAUDE.md memlog rewrites (Claude Code itself reads a few tens of KB)
MAX_CLAUDE_MD_BYTES = 1 << 20


def claude_md(
    ws: Workspace, root: Path | None = None, name: str | None = None, write: bool = False
) -> Written:
    """The project's ``CLAUDE.md`` with the branch memory block (written with ``write``,
    and then kept to the branch checked out by a post-checkout hook: ``checkout``)."""
    where = _project_root(ws, root)
    branch = name if name is not None else current_branch(where)
    if not branch:
        raise InvalidInput(f"{where} has no git branch checked out; give --branch")
    hook = checkout.follow(where) if write else ""
    ws.catch_up()
    path = where / CLAUDE_MD
    current = _read(path)
    text = splice_claude_md(current, branch_memory.block(ws.home, ws.project, branch))
    changed = text != current
    if write and changed:
        _write(path, text, current)
    return Written(path, text, changed, created=changed and current is None, hook=hook)


def checked_out(ws: Workspace, root: Path | None = None) -> Written:
    """After a checkout (what the post-checkout hook runs): the block of the branch now
    checked out, none when it has no memory; a CLAUDE.md left holding nothing else is
    removed, and none is made for a branch without memory."""
    where = _project_root(ws, root)
    ws.catch_up()
    path = where / CLAUDE_MD
    current = _read(path)
    block = branch_memory.block(ws.home, ws.project, current_branch(where))
    if block.strip():
        text = splice_claude_md(current, block)
    elif current is None:
        return Written(path, "", False)  # nothing to write, nowhere to write it
    else:
        text = unsplice_claude_md(current)
        if not text.strip():  # memlog's block was all it held
            path.unlink()
            return Written(path, "", True, removed=True)
    if text != current:
        _write(path, text, current)
    return Written(path, text, text != current, created=current is None)


def _project_root(ws: Workspace, root: Path | None) -> Path:
    where = root or ws.root
    if where is None:
        raise InvalidInput("not in a project (no .git or .claude found); give its directory")
    return where


def _read(path: Path) -> str | None:
    try:  # every byte, CRs too: a project's file, read within bounds
        return read_bytes(path, MAX_CLAUDE_MD_BYTES).decode("utf-8")
    except FileNotFoundError:
        return None
    except (Refused, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{path}: {exc}; left as it is") from None


def _write(path: Path, text: str, current: str | None) -> None:
    mode = path.stat().st_mode & 0o777 if current is not None else 0o644
    atomic_write(path, text.encode("utf-8"))
    path.chmod(mode)  # a project file: its mode stays, a new one is shared like any other
