"""Adopting an iflow global store found in the home before memlog writes anything.

iflow kept its global store (``anti-patterns.md``, ``heuristics.md``,
``patterns.md``) in the folder memlog uses as its home.  When such files
are there, the log is still empty and memlog never wrote them, the first
command imports their entries as ``import`` events (promoted, since they
are the global store; their ``Last observed`` kept as the time recency
uses) before anything else is appended.  The markdown view then rewrites
the files from the log and keeps each original beside it as a backup, so
nothing the user had is lost and every lesson stays searchable.

A lock and a second look under it keep two processes starting at once (the
hook and the MCP server of a first session) from importing twice.  Looking
for a store costs a few ``stat`` calls and loads nothing heavy.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from memlog.errors import MemlogError
from memlog.home import Home, ensure_dir
from memlog.locking import locked

if TYPE_CHECKING:
    from memlog.capture.pipeline import Meter
    from memlog.eventlog.events import EventBase
    from memlog.workspace import Workspace

STORE_FILES = ("anti-patterns.md", "heuristics.md", "patterns.md")
REASON = "adopted from the iflow global store"


class Adopted(NamedTuple):
    """What the adoption imported, and what it noticed."""

    home: Home
    files: list[str]
    entries: int
    events: int
    notes: list[str]

    @property
    def line(self) -> str:
        if not self.events:
            return f"found an iflow global store in {self.home} but no entries in it"
        return (
            f"adopted the iflow global store in {self.home}: {self.entries} entries from "
            f"{', '.join(self.files)} recorded as import events (the originals are kept as "
            "backups beside them)"
        )


def pending_store(home: Home) -> list[Path]:
    """The iflow store files waiting to be adopted (none once the log has begun)."""
    files = [home.markdown(n) for n in STORE_FILES if home.markdown(n).is_file()]
    from memlog.eventlog.scan import has_events

    if not files or has_events(home):
        return []
    from memlog.projections.markdown_view.writer import load_state

    written = load_state(home).files
    return [path for path in files if path.name not in written]


def adopt(ws: Workspace, *, settle: bool = True, meter: Meter | None = None) -> Adopted | None:
    """Import a waiting iflow store (None when there is none).

    ``settle``: embed and label the entries now (the CLI); otherwise they are
    appended and the views updated, and a detached ``memlog reembed`` embeds
    them (the hook and the MCP server, which cannot wait).
    """
    if not pending_store(ws.home):
        return None
    try:
        with _locked(ws.home):
            files = pending_store(ws.home)  # another process may have adopted meanwhile
            return _import(ws, files, settle, meter) if files else None
    except (MemlogError, OSError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        note = f"the iflow global store in {ws.home} was not adopted: {reason}"
        return Adopted(ws.home, [], 0, 0, [note])


def _import(ws: Workspace, files: list[Path], settle: bool, meter: Meter | None) -> Adopted:
    # capture loads numpy and the providers: only here, never on a reading command's path
    from memlog.capture.importer import plan_import
    from memlog.capture.pipeline import capture
    from memlog.eventlog.events import Observed
    from memlog.spawn import spawn_memlog

    plan = plan_import(files, {}, None)
    events = promoted(plan.events)
    if settle:
        notes = capture(ws, events, "adopt", meter=meter).notes
    else:
        ws.log("adopt").append(events)
        notes = ws.refresh()
        if any(isinstance(e, Observed) for e in events):
            spawn_memlog(["reembed"], ws.home, project=ws.root)
    names = [path.name for path in files]
    return Adopted(ws.home, names, plan.parsed, len(events), plan.warnings + notes)


def promoted(events: list[EventBase]) -> list[EventBase]:
    """``events`` with every observed entry promoted: the store's files are the global store."""
    from memlog.eventlog.events import Observed, Promoted

    done = {e.entry_id for e in events if isinstance(e, Promoted)}
    more: list[EventBase] = []
    for event in events:
        if isinstance(event, Observed) and event.entry_id not in done:
            done.add(event.entry_id)
            more.append(Promoted(entry_id=event.entry_id, reason=REASON))
    return [*events, *more]


def _locked(home: Home) -> AbstractContextManager[None]:
    ensure_dir(home)
    return locked(home.adopt_lock)
