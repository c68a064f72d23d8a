"""Extraction for the interfaces: memorize sessions, dry runs, maintenance.

``memorize`` runs the sweep (``capture.extraction.sweep``) over the sessions
asked for: one by id (found in the log, or by its transcript under Claude
Code's ``projects`` folder when no hook recorded it), the pending ones of a
branch, or every pending one.  ``dry_run`` shows what would be sent for each,
with its estimated tokens and cost, and sends nothing.  ``background`` is
the detached worker the hooks start: after the sessions it runs the
maintenance that is due, within the same deadline.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

import msgspec

from memlog.api import proposals
from memlog.api.branches import claude_md
from memlog.capture.extraction import maintenance, prompts, sweep
from memlog.capture.extraction.session import Request, Run, prepare
from memlog.errors import InvalidInput, MemlogError
from memlog.eventlog.events import SessionPending
from memlog.llm.base import Chain, cost_micros
from memlog.llm.http import make_client
from memlog.llm.registry import make_chain
from memlog.projections.fold import Session
from memlog.projections.sqlite_view import ledger
from memlog.workspace import Workspace

#: how long a detached run may take, all included
BACKGROUND_SECONDS = 900.0
#: how long a command run may take
INTERACTIVE_SECONDS = 3600.0


class DryRun(msgspec.Struct, frozen=True):
    session_id: str
    #: why nothing would be sent ("" when something would)
    skipped: str = ""
    system: str = ""
    prompt: str = ""
    tokens_in: int = 0
    cost_micros: int = 0


def claude_projects(env: Mapping[str, str]) -> Path:
    """Where Claude Code keeps transcripts (``$CLAUDE_CONFIG_DIR`` or ``~/.claude``)."""
    config = env.get("CLAUDE_CONFIG_DIR", "").strip()
    if config:
        return Path(config).expanduser() / "projects"
    return Path(env.get("HOME", "~")).expanduser() / ".claude" / "projects"


def find_transcript(session_id: str, env: Mapping[str, str]) -> Path | None:
    if not session_id or "/" in session_id or session_id.startswith("."):
        return None
    found = sorted(claude_projects(env).glob(f"*/{session_id}.jsonl"))
    return found[0] if found else None


def known_session(ws: Workspace, session_id: str, env: Mapping[str, str]) -> Session:
    """The session by id; one the log does not know is recorded from its transcript."""
    ws.catch_up()
    found = ledger.sessions(ws.home, ids=[session_id])
    if found:
        return found[0]
    path = find_transcript(session_id, env)
    if path is None:
        raise InvalidInput(
            f"no session {session_id}: not in the log, and no transcript "
            f"{session_id}.jsonl under {claude_projects(env)}"
        )
    where = ws.root or Path.cwd()
    event = SessionPending(
        session_id=session_id, transcript=str(path), cwd=str(where), project=ws.project,
        trigger="manual", size=path.stat().st_size,
    )  # fmt: skip
    ws.log("memorize").append([event])
    ws.refresh()
    return ledger.sessions(ws.home, ids=[session_id])[0]


class Models:
    """The chain of models of each workspace's extraction mode, sharing one HTTP client."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = env
        self.client = make_client()
        self.made: dict[str, Chain] = {}

    def __call__(self, ws: Workspace) -> Chain:
        mode = ws.config.memory_extraction_provider
        if mode not in self.made:
            self.made[mode] = make_chain(mode, self.client, self.env)
        return self.made[mode]

    def close(self) -> None:
        for chain in self.made.values():
            chain.close()
        self.client.close()


def memorize(
    ws: Workspace,
    *,
    session_id: str | None = None,
    branch: str | None = None,
    limit: int = sweep.MAX_SESSIONS,
    seconds: float = INTERACTIVE_SECONDS,
    wait: float = 30.0,
    env: Mapping[str, str] | None = None,
) -> sweep.Report:
    """Extract the sessions asked for (every pending one by default)."""
    environ = dict(os.environ if env is None else env)
    ids = [known_session(ws, session_id, environ).id] if session_id else []
    project = ws.project if branch is not None else None
    models = Models(environ)
    try:
        report = sweep.sweep(
            ws, models, time.monotonic() + seconds, ids=ids, branch=branch,
            project=project, limit=limit, wait=wait, env=environ,
        )  # fmt: skip
    finally:
        models.close()
    if ws.config.memory_claude_md and any(o.status == "extracted" for o in report.outcomes):
        report.notes += keep_claude_md(ws)
    return report


def keep_claude_md(ws: Workspace) -> list[str]:
    """Rewrite the project's CLAUDE.md block (``memory_claude_md: true``)."""
    try:
        done = claude_md(ws, write=True)
    except (MemlogError, OSError) as exc:
        return [f"CLAUDE.md not updated: {exc}"]
    return [f"{done.path}: branch memory block updated"] if done.changed else []


def background(
    ws: Workspace, seconds: float = BACKGROUND_SECONDS, env: Mapping[str, str] | None = None
) -> list[str]:
    """The detached worker: pending sessions, then the maintenance that is due; notes of
    what went wrong (a session waiting because extraction is off is no news)."""
    deadline = time.monotonic() + seconds
    try:
        report = memorize(ws, seconds=seconds, wait=0.0, env=env)
    except sweep.Busy:
        return []  # another worker is at it (a start's sweep and an end's): no news
    waiting = [(s, why) for s, why in report.deferred if s not in report.off]  # off: as chosen
    notes = report.notes + [f"session {s}: {why}" for s, why in waiting]
    tasks = maintenance.due(ws.home, datetime.now(UTC))
    if tasks and time.monotonic() < deadline - 60:
        done = run_maintenance(ws, tasks, deadline - time.monotonic(), env)
        notes += [note for task in done for note in task.notes]
    return notes


def run_maintenance(
    ws: Workspace,
    tasks: Sequence[str],
    seconds: float = INTERACTIVE_SECONDS,
    env: Mapping[str, str] | None = None,
) -> list[maintenance.Done]:
    """Run maintenance tasks now, under the extraction lock."""
    models = Models(dict(os.environ if env is None else env))
    try:
        with sweep.locked(ws.home, wait=30.0):
            ws.catch_up()
            run = Run(models(ws), sweep.budget_for(ws), time.monotonic() + seconds)
            done = maintenance.run_tasks(ws, run, tasks)
            for task in done:
                if task.task == "weekly":  # the lessons that do not earn their place
                    made, notes = proposals.propose(ws)
                    task.notes += notes
                    if made:
                        task.notes.append(f"proposed retiring {len(made)} lessons")
            return done
    finally:
        models.close()


def dry_run(
    ws: Workspace, session_id: str | None = None, branch: str | None = None,
    env: Mapping[str, str] | None = None,
) -> list[DryRun]:  # fmt: skip
    """What memorize would send for each session it would take; nothing is sent."""
    environ = dict(os.environ if env is None else env)
    if session_id:
        ws.catch_up()
        found = ledger.sessions(ws.home, ids=[session_id])
        if not found:
            path = find_transcript(session_id, environ)
            if path is None:
                raise InvalidInput(f"no session {session_id} in the log or under Claude Code")
            found = [Session(id=session_id, transcript=str(path), project=ws.project)]
        sessions = found
    else:
        ws.catch_up()
        project = ws.project if branch is not None else None
        sessions = sweep.select(ws.home, branch=branch, project=project)
    return [_dry(s) for s in sessions]


def _dry(session: Session) -> DryRun:
    prepared = prepare(session)
    if not isinstance(prepared, Request):
        return DryRun(session.id, skipped=prepared.reason)
    cost = cost_micros("claude-haiku-4-5", prepared.tokens, prompts.ANSWER_TOKENS)
    return DryRun(
        session.id, system=prompts.EXTRACTION_SYSTEM, prompt=prepared.prompt,
        tokens_in=prepared.tokens, cost_micros=cost,
    )  # fmt: skip
