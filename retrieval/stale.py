"""Marking the lessons whose cited files are gone from the project a block is made for.

Only lessons seen in that project are checked (``Entry.projects``): a lesson
learned elsewhere cites another tree, and its files being absent here says
nothing.  The check reads the project's working tree through ``citations.Tree``
(cached per commit), within what is left of the caller's time: a citation
that cannot be answered in time leaves its lesson unmarked.  A stale lesson
keeps its place in the ranking and is injected with one more line,
``- Stale: refers to src/x.py, gone`` (``benchmarks/bench_stale.py`` says why
a mark and not a lower rank).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import msgspec

from memlog.citations import Checked, Tree, cited
from memlog.projections.fold import Entry
from memlog.vocabulary import STALE_KEY
from memlog.workspace import Workspace

#: the most a block's check may take, and what it leaves of the caller's deadline
CHECK_SECONDS = 0.5
MARGIN_SECONDS = 0.3


def of_project(ws: Workspace, entries: Sequence[Entry]) -> dict[str, Checked]:
    """The checked citations of the entries seen in ``ws``'s project that cite a file."""
    return checked(ws, entries, time.monotonic() + 30.0)


def checked(ws: Workspace, entries: Sequence[Entry], deadline: float) -> dict[str, Checked]:
    if ws.root is None or not ws.config.memory_stale_check:
        return {}
    project = ws.project
    found = {e.id: cited(e.description, e.reasoning, e.details, e.references)
             for e in entries if project in e.projects}  # fmt: skip
    found = {k: v for k, v in found.items() if v.files}
    if not found:
        return {}
    tree = Tree(ws.root)
    if not tree.usable:
        return {}
    return dict(zip(found, tree.check(found.values(), deadline), strict=True))


def marked(ws: Workspace, entries: Sequence[Entry], deadline: float) -> dict[str, str]:
    """The stale mark of each stale entry of ``entries``, within ``deadline``."""
    until = min(deadline - MARGIN_SECONDS, time.monotonic() + CHECK_SECONDS)
    return {i: c.mark() for i, c in checked(ws, entries, until).items() if c.stale}


def with_mark(entry: Entry, mark: str) -> Entry:
    """``entry`` as a block shows it once its mark is added (its first metadata line)."""
    return msgspec.structs.replace(entry, details=[f"{STALE_KEY}: {mark}", *entry.details])
