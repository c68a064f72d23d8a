"""Periodic maintenance, due by the times ``maintenance.ran`` events record.

* ``weekly`` consolidation: up to 20 branch memories that changed since the
  last consolidation (and hold at least two items) are evolved again with
  no new extractions: the model may merge duplicates and resolve conflicts
  through ``update``/``remove``/``keep``, validated and applied as events
  like any evolution (``memory.evolved`` with mode ``consolidated``);
* ``monthly`` reindex: every live entry is checked for a vector in the
  configured space and for valid keyword labels, and given what it lacks.

Each run appends one ``maintenance.ran``; a task that could do nothing (no
model available) still counts as run, with a note, so it is not retried at
every session start.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import msgspec

from memlog.capture.extraction import answers, evolve, prompts
from memlog.capture.extraction.prompts import Scope
from memlog.capture.extraction.session import Deferred, Run, ask
from memlog.capture.pipeline import capture, settle
from memlog.errors import MemlogError
from memlog.eventlog.events import EventBase, MaintenanceRan
from memlog.eventlog.log import EventLog
from memlog.home import Home
from memlog.projections import branch_memory
from memlog.projections.markdown_view.branch import split_key
from memlog.projections.sqlite_view import ledger, queries
from memlog.workspace import Workspace

TASKS = ("weekly", "monthly")
INTERVALS = {"weekly": timedelta(days=7), "monthly": timedelta(days=30)}
MAX_BRANCHES = 20


class Done(msgspec.Struct):
    task: str
    branches: list[str]
    entries: int
    notes: list[str]


def parse_time(ts: str) -> datetime | None:
    try:
        return datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    except ValueError:
        return None


def first_event_time(home: Home) -> str:
    for record in EventLog(home).read():
        return record.event.ts
    return ""


def due(home: Home, now: datetime) -> list[str]:
    """The tasks whose interval has passed since they last ran (or, for a task that
    never ran, since the log began: fresh memory is not consolidated at once)."""
    last = ledger.maintenance_times(home)
    began = first_event_time(home)
    found = []
    for task in TASKS:
        when = parse_time(last.get(task) or began)
        if when is not None and now - when >= INTERVALS[task]:
            found.append(task)
    return found


def changed_branches(home: Home, since: str, limit: int = MAX_BRANCHES) -> list[str]:
    """Branch memories with at least two live items, changed after ``since``, latest first."""
    latest: dict[str, str] = {}
    for entry in queries.entries(home, vectors=False):
        for item in entry.branch_stamps:
            key, _, ts = item.partition("\t")
            latest[key] = max(latest.get(key, ""), ts)
    sizes = {k: sum(v.values()) for k, v in queries.branch_summary(home).items()}
    keys = [k for k, ts in latest.items() if ts > since and sizes.get(k, 0) >= 2]
    return sorted(keys, key=lambda k: (latest[k], k), reverse=True)[:limit]


def consolidate(ws: Workspace, run: Run, key: str) -> tuple[list[EventBase], str]:
    """One branch memory evolved again; the events, or why there are none."""
    project, name = split_key(key)
    existing = branch_memory.live_entries(ws.home, project, name)
    known = [(e.section, e.description) for e in existing]
    prompt = prompts.evolution_prompt(known, [], name)
    tokens = prompts.estimate_tokens(prompts.EVOLUTION_SYSTEM, prompt)
    try:
        answer = ask(run, prompts.EVOLUTION_SYSTEM, prompt, prompts.evolution_schema(), tokens)
    except (MemlogError, Deferred) as exc:
        return [], f"{key}: not consolidated ({exc})"
    plan = evolve.Plan(Scope(project, name), "consolidated")
    try:
        ops = answers.operations(answer.data, len(existing), 0)
    except answers.Invalid as exc:
        plan.notes.append(f"answer rejected ({exc}); nothing changed")
        return [plan.audit("", answer.usage)], f"{key}: answer rejected ({exc})"
    plan = evolve.evolved(Scope(project, name), existing, [], ops, "")
    plan.mode = "consolidated"
    return [*plan.events, plan.audit("", answer.usage)], ""


def weekly(ws: Workspace, run: Run, since: str) -> Done:
    keys = changed_branches(ws.home, since)
    events: list[EventBase] = []
    notes: list[str] = []
    for key in keys:
        found, note = consolidate(ws, run, key)
        events += found
        notes += [note] if note else []
    ran = MaintenanceRan(task="weekly", branches=tuple(keys), note="; ".join(notes))
    notes += capture(ws, [*events, ran], "maintenance").notes
    return Done("weekly", keys, 0, notes)


def monthly(ws: Workspace) -> Done:
    ws.catch_up()
    live = [e.id for e in queries.entries(ws.home, vectors=False) if e.live]
    notes = settle(ws, live)
    ran = MaintenanceRan(task="monthly", entries=len(live), note="; ".join(notes))
    notes += capture(ws, [ran], "maintenance").notes
    return Done("monthly", [], len(live), notes)


def run_tasks(ws: Workspace, run: Run, tasks: Sequence[str]) -> list[Done]:
    """Run ``tasks`` in order (``weekly``, ``monthly``)."""
    last = ledger.maintenance_times(ws.home)
    done = []
    for task in tasks:
        if task == "weekly":
            done.append(weekly(ws, run, last.get("weekly", "")))
        elif task == "monthly":
            done.append(monthly(ws))
    return done
