"""One Claude Code session, read from where the last run stopped and turned into events.

The transcript is read from the session's offset; an Agent SDK session, an
empty or a trivial one is ``skipped`` without a call.  Otherwise one call
asks for extractions (an invalid answer is asked again, twice at most, then
the session is marked ``error``); each scope (project and branch) the items
belong to is then evolved (``evolve``) and everything is appended as one
batch through the capture pipeline: the entries, one ``memory.evolved`` per
scope whose memory changed (with what its calls cost; a scope that learned
nothing has no audit) and the ``session.progress`` that moves the offset, so
a session is never extracted twice.

Nothing is spent beyond the limits: a call whose estimated input exceeds
``memory_extraction_max_input_tokens``, or whose estimated cost would take
the day past ``memory_extraction_daily_budget_usd``, is not made and the
session stays pending (``Deferred``); a rate limit stops the whole run
(``Stopped``); a passing failure is recorded and retried by a later run, up
to ``MAX_ATTEMPTS`` times.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import msgspec

from memlog.capture.extraction import answers, evolve, influence, prompts
from memlog.capture.extraction.prompts import Scope
from memlog.capture.extraction.transcript import Transcript, Turn, read_transcript
from memlog.capture.pipeline import capture
from memlog.errors import MemlogError, ProviderError, ProviderUnavailable, RateLimited
from memlog.eventlog.events import EventBase, Influenced, SessionProgress, Usage
from memlog.git import current_branch
from memlog.llm.base import Answer, Chain
from memlog.project import find_project_root
from memlog.projections import branch_memory
from memlog.projections.fold import Entry, Session
from memlog.projections.sqlite_view import queries
from memlog.workspace import Workspace

#: answers asked for in all: the first and two retries
ASKS = 3
#: passing failures (timeouts, server errors) before a session is marked ``error``
MAX_ATTEMPTS = 3


class Deferred(Exception):
    """The session stays pending: no call was made (budget, input cap, no provider)."""


class Stopped(Deferred):
    """The run stops here: the provider is rate limiting."""


class Off(Deferred):
    """The session stays pending because extraction is off: what its user chose, no error."""


class Outcome(msgspec.Struct, frozen=True):
    """What became of one session."""

    session_id: str
    status: str
    reason: str
    added: int = 0
    usage: Usage = Usage()


@dataclass
class Budget:
    """Today's spend against the daily budget, in millionths of a dollar."""

    limit: int
    spent: int
    max_input_tokens: int

    def allows(self, micros: int) -> bool:
        return self.spent + micros <= self.limit


@dataclass
class Run:
    """What one run shares across sessions: the models, the budget, the clock."""

    chain: Chain
    budget: Budget
    deadline: float
    call_timeout: float = 180.0
    similar: evolve.Similar | None = None
    clock: Callable[[], float] = time.monotonic
    notes: list[str] = field(default_factory=list)

    def timeout(self) -> float:
        left = self.deadline - self.clock()
        if left < 5:
            raise Deferred("the run's deadline is near")
        return min(self.call_timeout, left)


def add_usage(total: Usage, more: Usage) -> Usage:
    return Usage(
        provider=more.provider or total.provider, model=more.model or total.model,
        calls=total.calls + more.calls, tokens_in=total.tokens_in + more.tokens_in,
        tokens_out=total.tokens_out + more.tokens_out,
        cost_micros=total.cost_micros + more.cost_micros,
    )  # fmt: skip


# -- where turns belong -----------------------------------------------------------------------


def scope_of(turn: Turn, session: Session, roots: dict[str, Path | None]) -> Scope:
    """The project and branch of a turn: its own ``cwd`` and ``gitBranch``, else the session's."""
    cwd = turn.cwd or session.cwd
    if cwd not in roots:
        here = Path(cwd) if cwd else None
        roots[cwd] = find_project_root(here) if here is not None and here.is_dir() else None
    root = roots[cwd]
    project = root.name if root is not None else session.project
    if root is not None and not (root / ".git").exists():
        return Scope(project, "")  # no repository: no branch
    return Scope(project, turn.branch or session.branch or (current_branch(root) if root else ""))


# -- one session ---------------------------------------------------------------------------------


class Request(NamedTuple):
    """A session ready to be asked about: its transcript, scopes and prompt, and the
    lessons it received that the answer judges."""

    transcript: Transcript
    scopes: list[Scope]
    labels: list[str]
    prompt: str
    schema: dict[str, Any]
    tokens: int
    lessons: Sequence[influence.Given] = ()
    session_id: str = ""


class Skip(NamedTuple):
    """No call is needed: why, and how far the transcript was read."""

    reason: str
    offset: int


def prepare(session: Session, lessons: Sequence[influence.Given] = ()) -> Request | Skip:
    """The request for ``session`` (which also judges ``lessons``), or why none is
    needed."""
    path = Path(session.transcript)
    if not session.transcript:
        return Skip("no transcript: Claude Code gave no transcript path", session.offset)
    if not path.is_file():
        why = f"no transcript: {path} is not there (never written, or deleted)"
        return Skip(why, session.offset)
    transcript = read_transcript(path, session.offset)
    if transcript.sdk:
        return Skip("Agent SDK session", transcript.end)
    reason = prompts.fallback(transcript.turns)
    if reason is not None:
        return Skip(f"{reason} session", transcript.end)
    roots: dict[str, Path | None] = {}
    scopes = [scope_of(t, session, roots) for t in transcript.turns]
    distinct = list(dict.fromkeys(scopes))
    labels = [prompts.label(s, distinct) for s in distinct]
    rendered = prompts.render(transcript.turns, scopes)
    prompt = prompts.extraction_prompt(rendered, labels)
    prompt += influence.section(lessons, transcript.turns)
    schema = prompts.extraction_schema(labels)
    if lessons:
        schema["properties"]["lessons"] = influence.schema()
        schema["required"] = [*schema["required"], "lessons"]
    tokens = prompts.estimate_tokens(prompts.EXTRACTION_SYSTEM, prompt, str(schema))
    return Request(transcript, distinct, labels, prompt, schema, tokens, lessons, session.id)


def _afford(run: Run, tokens: int) -> None:
    if tokens > run.budget.max_input_tokens:
        raise Deferred(
            f"needs about {tokens} input tokens, more than memory_extraction_max_input_tokens "
            f"({run.budget.max_input_tokens})"
        )
    if run.chain.empty:
        raise Off("extraction is off (memory_extraction_provider)")
    try:
        model = run.chain.current()
    except ProviderUnavailable as exc:
        raise Deferred(str(exc)) from None
    cost = model.estimate(tokens, prompts.ANSWER_TOKENS)
    if not run.budget.allows(cost):
        limit, spent = run.budget.limit / 1e6, run.budget.spent / 1e6
        raise Deferred(
            f"the daily budget (${limit:.2f}, ${spent:.4f} spent today) leaves too little "
            f"for a call of about ${cost / 1e6:.4f}"
        )


def ask(run: Run, system: str, prompt: str, schema: dict[str, Any], tokens: int) -> Answer:
    """One call within the limits; its cost counts against today's budget at once."""
    _afford(run, tokens)
    answer = run.chain.ask(system, prompt, schema, run.timeout())
    run.budget.spent += answer.usage.cost_micros
    return answer


class Extracted(NamedTuple):
    items: list[answers.Extraction]
    usage: Usage
    #: why the last answer was rejected ("" when one was valid)
    problem: str = ""
    #: what ended the asking: a provider error, a rate limit, a limit reached (Deferred)
    failure: ProviderError | Deferred | None = None
    #: what the answer said of the lessons the session received
    judged: list[Influenced] = []


def extract(run: Run, request: Request) -> Extracted:
    """The validated items, after at most two retries; what every call cost."""
    usage, problem = Usage(), ""
    system = prompts.EXTRACTION_SYSTEM
    for _ in range(ASKS):
        try:
            answer = ask(run, system, request.prompt, request.schema, request.tokens)
        except (ProviderError, Deferred) as exc:
            return Extracted([], usage, problem, exc)
        usage = add_usage(usage, answer.usage)
        try:
            items = answers.extractions(answer.data, request.labels)
            judged = influence.judged(answer.data, request.lessons, request.session_id)
            return Extracted(items, usage, judged=judged)
        except (answers.Invalid, influence.Invalid) as exc:
            problem = f"{answer.problem}: {exc}" if answer.problem else str(exc)
    return Extracted([], usage, problem)


def lessons_of(ws: Workspace, session: Session) -> list[influence.Given]:
    """The lessons ``session`` received that its extraction may still judge."""
    ids = [line.split(" ", 1)[0] for line in session.received]
    entries = {e.id: e for e in queries.entries(ws.home, ids, vectors=False)} if ids else {}
    return influence.to_judge(influence.received(session, entries), session.id, "extraction")


def estimated(session: Session, lessons: Sequence[influence.Given]) -> list[Influenced]:
    """The local estimate of ``lessons`` from the session's transcript (none without one)."""
    path = Path(session.transcript) if session.transcript else None
    if not lessons or path is None or not path.is_file():
        return []
    done, times = influence.actions(path)
    return influence.estimate(lessons, done, times, session.id)


def memorize(ws: Workspace, run: Run, session: Session) -> Outcome:
    """Extract ``session`` and append what it teaches and what it did with the lessons it
    received (``Deferred`` leaves it pending)."""
    lessons = lessons_of(ws, session)
    prepared = prepare(session, lessons)
    if isinstance(prepared, Skip):
        done = Outcome(session.id, "skipped", prepared.reason)
        return _record(ws, run, estimated(session, lessons), session, done, prepared.offset, 0)
    items, usage, problem, failure, judged = extract(run, prepared)
    if isinstance(failure, RateLimited | Deferred):
        if usage.calls:  # what was spent before is recorded; the session stays pending
            done = Outcome(session.id, "pending", str(failure), 0, usage)
            _record(ws, run, [], session, done, session.offset, 0)
        raise Stopped(str(failure)) if isinstance(failure, RateLimited) else failure
    if failure is not None:
        status = "pending" if session.attempts + 1 < MAX_ATTEMPTS else "error"
        done = Outcome(session.id, status, f"extraction failed: {failure}", usage=usage)
        guessed = estimated(session, lessons) if status == "error" else []
        return _record(ws, run, guessed, session, done, session.offset, 0)
    if problem:
        done = Outcome(session.id, "error", f"invalid answer {ASKS} times: {problem}", usage=usage)
        return _record(ws, run, estimated(session, lessons), session, done, session.offset, 0)
    said = {e.entry_id for e in judged}
    judged += estimated(session, [g for g in lessons if g.entry.id not in said])
    plans = [
        _plan(ws, run, session, prepared, scope, label, items)
        for scope, label in zip(prepared.scopes, prepared.labels, strict=True)
    ]
    events, unaudited = audited(plans, session.id, usage)
    events += judged
    added = sum(plan.changes for plan, _ in plans)
    modes = ", ".join(f"{p.scope.branch or '(no branch)'}: {p.mode}" for p, _ in plans)
    total = add_usage(usage, functools.reduce(add_usage, (cost for _, cost in plans), Usage()))
    done = Outcome(session.id, "extracted", f"{len(items)} items ({modes})", added, total)
    transcript = prepared.transcript
    end, turns = transcript.end, len(transcript.turns)
    return _record(ws, run, events, session, done, end, turns, unaudited)


def audited(
    plans: Sequence[tuple[evolve.Plan, Usage]], session_id: str, extraction: Usage
) -> tuple[list[EventBase], Usage]:
    """Each plan's events and, when it changed its branch memory, its audit (a plan that
    learned nothing has none); an audit carries every call behind it, the extraction's
    going with the first.  What no audit carries is returned: the session's progress
    records it, so every call is counted once (``memlog stats``, the page's audits)."""
    events: list[EventBase] = []
    left = extraction
    for plan, cost in plans:
        left = add_usage(left, cost)
        if plan.changes:
            events += [*plan.events, plan.audit(session_id, left)]
            left = Usage()
    return events, left


def _record(
    ws: Workspace, run: Run, events: Sequence[EventBase], session: Session, done: Outcome,
    offset: int, turns: int, unaudited: Usage | None = None,
) -> Outcome:  # fmt: skip
    """Append ``events`` and the session's progress as one batch; the progress carries
    the cost of the calls no audit among ``events`` carries (all of them without)."""
    progress = SessionProgress(
        session_id=session.id, status=done.status, offset=offset,  # type: ignore[arg-type]
        reason=done.reason, turns=turns, usage=done.usage if unaudited is None else unaudited,
    )  # fmt: skip
    notes = capture(ws, [*events, progress], "memorize").notes
    run.notes += [f"session {session.id[:8]}: {note}" for note in notes]
    return done


def _plan(
    ws: Workspace, run: Run, session: Session, request: Request, scope: Scope, label: str,
    items: Sequence[answers.Extraction],
) -> tuple[evolve.Plan, Usage]:  # fmt: skip
    mine = [i for i in items if len(request.labels) < 2 or i.scope == label]
    existing = branch_memory.live_entries(ws.home, scope.project, scope.branch, vectors=True)
    if not existing:
        return evolve.created(scope, mine, session.id), Usage()
    if not mine:
        return evolve.Plan(scope, "evolved"), Usage()
    return _evolve(run, session, scope, existing, mine)


def _evolve(
    run: Run, session: Session, scope: Scope, existing: list[Entry],
    items: Sequence[answers.Extraction],
) -> tuple[evolve.Plan, Usage]:  # fmt: skip
    known = [(e.section, e.description) for e in existing]
    new = [(i.section, i.content) for i in items]
    prompt = prompts.evolution_prompt(known, new, scope.branch)
    tokens = prompts.estimate_tokens(prompts.EVOLUTION_SYSTEM, prompt)
    try:
        answer = ask(run, prompts.EVOLUTION_SYSTEM, prompt, prompts.evolution_schema(), tokens)
    except (MemlogError, Deferred) as exc:
        why = f"evolution not possible ({exc})"
        return evolve.fallback(scope, existing, items, session.id, run.similar, why), Usage()
    try:
        ops = answers.operations(answer.data, len(existing), len(items))
    except answers.Invalid as exc:
        why = f"evolution answer rejected ({exc})"
        plan = evolve.fallback(scope, existing, items, session.id, run.similar, why)
        return plan, answer.usage
    return evolve.evolved(scope, existing, items, ops, session.id), answer.usage
