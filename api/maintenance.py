"""Keeping the home sound: catch up, replay, verify, re-embed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from memlog.errors import InvalidInput
from memlog.eventlog import redaction_journal, snapshot
from memlog.eventlog.bounds import Bound, parse_bound
from memlog.eventlog.log import DamageHandler, EventLog
from memlog.eventlog.verify import Report, repair_log, verify_log
from memlog.home import Home
from memlog.projections.audit import Audit, audit
from memlog.projections.fold import Entry
from memlog.projections.markdown_view.writer import markdown_digest
from memlog.projections.runner import CatchUp, Rebuilt, rebuild
from memlog.projections.scrub import truncate_wal
from memlog.projections.sqlite_view import damage, queries, soundness
from memlog.projections.sqlite_view.digest import sqlite_digest
from memlog.workspace import Workspace

if TYPE_CHECKING:  # embedding loads numpy: only ``reembed`` needs it, not a catch-up
    from memlog.capture.embed import Outcome

Progress = Callable[[int], None]


class Replayed(NamedTuple):
    result: Rebuilt
    folder: Path
    sqlite_digest: str
    markdown_digest: str


class Verification(NamedTuple):
    clean: bool
    moved: list[str]
    log: Report
    views: Audit | None


def catch_up(ws: Workspace, on_damage: DamageHandler | None = None) -> CatchUp:
    """Bring the views up to the end of the log, once every page of ``memory.db`` and every
    block of its packed files is checked (damage found: the views are rebuilt)."""
    found = soundness.check(ws.home) if not snapshot.is_snapshot(ws.home) else None
    if found is not None:
        damage.mark(ws.home, found)
    return ws.catch_up(on_damage)


def log_lines(ws: Workspace) -> int:
    """How many lines the log holds (for progress bars)."""
    total = 0
    for path in ws.log().segments():
        with open(path, "rb") as handle:
            while chunk := handle.read(8 << 20):
                total += chunk.count(b"\n")
    return total


def check_replay(ws: Workspace, until: str | None, target: Path | None) -> Bound | None:
    """The bound of a replay, once its arguments make sense together."""
    snapshot.refuse_writes(ws.home, "rebuild the views of")
    if until and target is None:
        raise InvalidInput("--until needs --to DIR (the live views always follow the whole log)")
    if target is not None and target.resolve() == ws.home.root.resolve():
        raise InvalidInput("--to must be another directory than the memlog home")
    if target is not None and EventLog(target).segments():
        raise InvalidInput(f"{target} holds a memlog log; --to needs a new directory or a snapshot")
    return parse_bound(until) if until else None


def replay(
    ws: Workspace,
    until: str | None = None,
    target: Path | None = None,
    progress: Progress | None = None,
) -> Replayed:
    """Rebuild every view from zero; with ``until``/``target`` the views as they were, elsewhere."""
    bound = check_replay(ws, until, target)
    aside = Home(target) if target is not None else None
    result = rebuild(ws.home, ws.space, bound, aside, progress)
    folder = aside or ws.home
    truncate_wal(folder)  # no page of the database before the replay stays on disk
    return Replayed(result, folder.root, sqlite_digest(folder), markdown_digest(folder))


def verify(ws: Workspace, repair: bool = False, log_only: bool = False) -> Verification:
    """Check the log end to end (moving bad lines out with ``repair``), then audit the views:
    drift found is noted for the next catch-up to rebuild, or, with ``repair``, rebuilt
    now and audited again."""
    log = ws.log("verify")
    moved = repair_log(log) if repair else []
    report = verify_log(log)
    views = None if log_only else audit(ws.home, ws.space)
    if views is not None and not views.clean and not snapshot.is_snapshot(ws.home):
        damage.mark(ws.home, f"memlog verify found drift: {views.drift[0]}")
        if repair:
            moved.append(f"views rebuilt from the log ({views.drift[0]})")
            views = audit(ws.home, ws.space)  # its catch-up rebuilds them first
    if views is not None and redaction_journal.pending(ws.home) is not None:
        views.drift.append(
            f"{ws.home.redaction_journal.name}: a redaction is unfinished (its text may be "
            "left in the home): run memlog redact again"
        )
    clean = report.clean and (views is None or views.clean)
    return Verification(clean, moved, report, views)


def to_embed(ws: Workspace, everything: bool = False) -> list[Entry]:
    """Live entries lacking a vector in the space in force (every live one with ``everything``)."""
    ws.catch_up()
    return queries.pending_entries(ws.home, ws.space, everything=everything)


def reembed(
    ws: Workspace, entries: list[Entry], progress: Progress | None = None
) -> tuple[Outcome, list[str]]:
    """Embed ``entries`` in batches, one ``entry.reembedded`` event each; then the views."""
    provider = ws.provider()
    try:
        from memlog.capture.embed import embed_entries

        outcome = embed_entries(ws.log("reembed"), entries, provider, ws.space, progress)
    finally:
        provider.close()
    return outcome, ws.refresh()
