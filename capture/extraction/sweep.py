"""Running extraction: which sessions, under one lock, within a deadline.

``memlog hook session-end`` and ``pre-compact`` record a pending session and
start ``memlog memorize --background`` detached; the SessionStart hook
starts the same sweep for sessions still pending.  One extractor runs at a
time per home (``extraction.lock``, a ``flock``): a second one finds the
lock taken and leaves at once, and the one holding it looks for newly
pending sessions again after letting the lock go, so none is left behind.
A sweep takes at most ``MAX_SESSIONS`` sessions (Puffin's
``MAX_BRANCHES_PER_RUN``), oldest first, and stops starting new ones near
its deadline; a rate limit ends it.  A session that started but never
ended (Claude Code crashed or was killed) is taken once its transcript has
been idle for ``IDLE_SECONDS``.

Every session recorded on this machine settles: one whose transcript is not
there (``claude -p --no-session-persistence`` writes none; Claude Code
deletes old ones) is taken like the others and marked ``skipped`` with the
reason, so ``memlog stats`` and ``memorize --pending`` count the same
sessions.  In a home that syncs, a session another machine recorded stays
pending for that machine, whose transcript it is (``whose``).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from memlog.capture.extraction import influence
from memlog.capture.extraction import session as extraction
from memlog.capture.extraction.evolve import Similar
from memlog.capture.extraction.session import Budget, Deferred, Off, Outcome, Run, Stopped
from memlog.capture.extraction.whose import recorded_here, split_here, transcript_stat
from memlog.eventlog.bounds import utc_moment
from memlog.eventlog.events import SessionPending
from memlog.home import Home, ensure_dir
from memlog.llm.base import Chain
from memlog.locking import locked_within
from memlog.projections.fold import Entry, Session
from memlog.projections.sqlite_view import ledger, queries
from memlog.workspace import Workspace

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

MAX_SESSIONS = 20
IDLE_SECONDS = 3600
#: near-duplicates: cosine at or above this between a new item and an existing one
NEAR_DUPLICATE = 0.92


class Busy(Deferred):
    """Another extractor holds the lock."""


@contextlib.contextmanager
def locked(home: Home, wait: float = 0.0) -> Iterator[None]:
    """Hold ``extraction.lock`` (waiting up to ``wait`` seconds); ``Busy`` when taken."""
    ensure_dir(home)
    with locked_within(
        home.extraction_lock, wait, lambda: Busy("another extraction is running"), 0.2
    ):
        yield


def today() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d")


def budget_for(ws: Workspace) -> Budget:
    config = ws.config
    return Budget(
        limit=round(config.memory_extraction_daily_budget_usd * 1_000_000),
        spent=ledger.spend(ws.home, today()).cost_micros,
        max_input_tokens=config.memory_extraction_max_input_tokens,
    )


# -- which sessions ----------------------------------------------------------------------------


def stale_open(home: Home, now: float, idle: float = IDLE_SECONDS) -> list[Session]:
    """Sessions that started but never ended: their transcript grew and has been idle, or,
    recorded here, they have none and started that long ago."""
    found, missing = [], []
    for session in ledger.sessions(home, ["open"]):
        size, changed = transcript_stat(session.transcript)
        if size is None:
            started = utc_moment(session.updated_at)
            if started is not None and now - started.timestamp() >= idle:
                missing.append(session)
        elif size > session.offset and now - changed >= idle:
            found.append(session)
    ours = recorded_here(home, [s.id for s in missing])
    return found + [s for s in missing if s.id in ours]


def adopt(ws: Workspace, sessions: Sequence[Session]) -> None:
    """Record sessions left open as pending (``sweep``), so the fold says so too."""
    events = [
        SessionPending(
            session_id=s.id,
            transcript=s.transcript,
            cwd=s.cwd,
            project=s.project,
            branch=s.branch,
            trigger="sweep",
            reason="no SessionEnd; transcript idle"
            if size is not None
            else "no SessionEnd; no transcript",
            size=size or 0,
        )  # fmt: skip
        for s in sessions
        for size in [transcript_stat(s.transcript)[0]]
    ]
    if events:
        ws.log("memorize").append(events)
        ws.refresh()


def select(
    home: Home,
    ids: Sequence[str] = (),
    branch: str | None = None,
    project: str | None = None,
    limit: int = MAX_SESSIONS,
) -> list[Session]:
    """Pending sessions (of ``ids``, or of a branch and project), oldest first.

    A session whose transcript is not on this machine is taken when this
    machine recorded it (it is then skipped, with the reason); another
    machine's is left pending, for that machine (a synced log holds every
    machine's sessions).
    """
    if ids:
        return ledger.sessions(home, ids=ids, limit=limit)
    pending, _ = split_here(home, ledger.sessions(home, ["pending"]))
    if branch is not None:
        pending = [s for s in pending if s.branch == branch]
    if project is not None:
        pending = [s for s in pending if s.project == project]
    return pending[:limit]


def workspace_of(home: Home, session: Session, env: Mapping[str, str] | None) -> Workspace:
    """The workspace a session's project is configured by (its own name kept)."""
    cwd = Path(session.cwd) if session.cwd else None
    if cwd is not None and cwd.is_dir():
        ws = Workspace.open(cwd, home=home, env=env)
    else:
        ws = Workspace.at(None, home=home, env=env)
    return Workspace(ws.home, ws.root, ws.config, ws.warnings, project_name=session.project)


# -- running ---------------------------------------------------------------------------------


@dataclass
class Report:
    outcomes: list[Outcome] = field(default_factory=list)
    #: sessions left pending, and why
    deferred: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    stopped: str = ""
    #: of the sessions deferred, those waiting because extraction is off (no error)
    off: set[str] = field(default_factory=set)


ChainFor = Callable[[Workspace], Chain]


def process(
    home: Home,
    sessions: Sequence[Session],
    chain_for: ChainFor,
    deadline: float,
    report: Report,
    env: Mapping[str, str] | None = None,
) -> None:
    """Extract ``sessions`` in order until the deadline or a rate limit."""
    for session in sessions:
        if report.stopped:
            report.deferred.append((session.id, report.stopped))
            continue
        if session.status != "pending" and _size(session) <= session.offset:
            report.outcomes.append(
                Outcome(session.id, session.status, "nothing new since the last extraction")
            )
            continue
        ws = workspace_of(home, session, env)
        run = Run(chain_for(ws), budget_for(ws), deadline, similar=similar_for(ws))
        try:
            report.outcomes.append(extraction.memorize(ws, run, session))
        except Stopped as exc:
            report.stopped = str(exc)
            report.deferred.append((session.id, str(exc)))
        except Deferred as exc:
            report.deferred.append((session.id, str(exc)))
            if isinstance(exc, Off):
                report.off.add(session.id)
        report.notes += run.notes


def sweep(
    ws: Workspace,
    chain_for: ChainFor,
    deadline: float,
    *,
    ids: Sequence[str] = (),
    branch: str | None = None,
    project: str | None = None,
    limit: int = MAX_SESSIONS,
    wait: float = 0.0,
    env: Mapping[str, str] | None = None,
) -> Report:
    """Extract pending sessions under the lock; look again after letting it go.

    ``ws`` is the workspace the sweep was started for: the views are caught up in its
    embedding space, never in a default one (each session is then extracted in the
    workspace of its own project).
    """
    report, home = Report(), ws.home
    while len(report.outcomes) + len(report.deferred) < limit:
        with locked(home, wait):
            report.notes += fold_spool(ws) + ws.refresh()
            if not ids:
                adopt(ws, stale_open(home, time.time()))
            done = {o.session_id for o in report.outcomes} | {d for d, _ in report.deferred}
            todo = [s for s in select(home, ids, branch, project, limit) if s.id not in done]
            room = limit - len(report.outcomes) - len(report.deferred)
            process(home, todo[:room], chain_for, deadline, report, env)
            if not ids:
                report.notes += judge_rest(ws, limit)
        if ids or report.stopped or not todo or time.monotonic() >= deadline:
            break
        wait = 0.0  # another extractor that took the lock meanwhile carries on
    return report


def judge_rest(ws: Workspace, limit: int = MAX_SESSIONS) -> list[str]:
    """The local estimate of the lessons ended sessions of this machine received that no
    judge has spoken of (extraction off, no provider, a session waiting for its budget,
    or extracted before lessons were judged): newest first, at most ``limit`` sessions."""
    from memlog.capture.pipeline import capture

    found, _ = split_here(ws.home, ledger.unjudged(ws.home, limit))
    events = []
    for session in found:
        ids = [line.split(" ", 1)[0] for line in session.received]
        entries = {e.id: e for e in queries.entries(ws.home, ids, vectors=False)}
        given = [g for g in influence.received(session, entries)
                 if session.id not in g.entry.verdicts]  # fmt: skip
        events += extraction.estimated(session, given)
    return capture(ws, events, "memorize").notes if events else []


def fold_spool(ws: Workspace) -> list[str]:
    """Fold in the sessions hooks spooled while another writer held the log (waiting for
    it: this runs in the background), so none is left out of this sweep."""
    from memlog.errors import MemlogError
    from memlog.eventlog import spool

    if not spool.waiting(ws.home):
        return []
    try:
        ws.log("memorize").fold()
    except MemlogError as exc:
        return [f"spooled sessions not folded in yet: {exc}"]
    return []


def _size(session: Session) -> int:
    try:
        return os.stat(session.transcript).st_size if session.transcript else 0
    except OSError:
        return 0


def similar_for(ws: Workspace) -> Similar:
    """Near-duplicates by the cosine of the configured embedding space's vectors."""

    def similar(texts: Sequence[str], existing: Sequence[Entry]) -> list[str | None]:
        import numpy as np

        key = ws.space.key
        known = [(e.id, e.vectors[key].data) for e in existing if key in e.vectors]
        if not known or not texts:
            return [None] * len(texts)
        provider = ws.provider()
        try:
            fresh = provider.embed_batch(list(texts), "document")
        finally:
            provider.close()
        from memlog.eventlog.vectors import floats

        matrix = np.stack([floats(data) for _, data in known])  # the view keeps them as q8
        scores = _normalised(fresh) @ _normalised(matrix).T
        best = scores.argmax(axis=1)
        return [
            known[int(j)][0] if scores[i, int(j)] >= NEAR_DUPLICATE else None
            for i, j in enumerate(best)
        ]

    return similar


def _normalised(matrix: npt.ArrayLike) -> npt.NDArray[np.float32]:
    import numpy as np

    array = np.asarray(matrix, dtype=np.float32)
    norms = np.maximum(np.linalg.norm(array, axis=1, keepdims=True), 1e-12)
    normalised: npt.NDArray[np.float32] = (array / norms).astype(np.float32)
    return normalised
