"""Getting knowledge out: what to inject for a project or a prompt, and search by query.

What a session start injects (``for_hook``, and ``inject`` for ``memlog
inject`` and the page) is one text within ``memory_injection_max_chars``:
the Engineering Memory block, the Branch Memory block of the branch checked
out, and a last line saying how many more entries matched and how to reach
them.  Each lesson appears once: what the session already holds (a CLAUDE.md,
Claude Code's auto memory, what memlog gave it earlier, the Branch Memory
block itself) is passed over by the ranking (``retrieval.in_context``).  A
prompt's recall (``for_prompt``) adds at most a few entries that pass the
relevance floor and that the session has not received.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import msgspec

from memlog.eventlog.devices import known_device_id
from memlog.git import current_branch
from memlog.projections.holds import foreign
from memlog.projections.markdown_view.branch import injected
from memlog.projections.sqlite_view import queries
from memlog.retrieval import in_context, received
from memlog.retrieval.budget import size
from memlog.retrieval.inject import build, caught_up
from memlog.retrieval.prompt import prompt_text
from memlog.retrieval.record import Recall, recall_of, record, write
from memlog.retrieval.request import Chosen, Injection, LeftOut, Request
from memlog.vocabulary import BRANCH_BLOCK_MAX_CHARS, LESSONS_NOTE
from memlog.workspace import Workspace

__all__ = [
    "Chosen", "Injection", "LeftOut", "Recall", "Request", "for_hook", "for_prompt", "inject",
    "preview", "search",
]  # fmt: skip

NO_ROOM = "no room: the block is at memory_injection_max_chars"
#: the largest count the last line is sized for
MORE_RESERVED = 10**7
#: the entries a prompt's ranking looks at, best first, before the relevance floor
PROMPT_CANDIDATES = 10


def more_line(count: int, matched: bool = True) -> str:
    """The block's last line: how many more matched (or, without a query, are in memory),
    and how to reach them."""
    what = "matched and were left out" if matched else "are in memory"
    return (
        f"*{count} more entries {what}: the search_memory tool, or "
        '`memlog search "<words>"`, finds them.*'
    )


def inject(
    ws: Workspace,
    limit: int | None = None,
    remember: bool = False,
    session_id: str = "",
    drop_in: bool = False,
) -> Injection:
    """What the hook would inject for the workspace's project (recorded when asked).

    ``drop_in``: as iflow's memory.py, which the markdown pipeline then reproduces exactly
    (the block alone: no line on how it was chosen, no branch memory, no budget).
    """
    request = msgspec.structs.replace(Request.interactive(ws, limit=limit), drop_in=drop_in)
    if drop_in and not ws.config.memory_semantic_enabled:
        result = build(request)
    else:
        result = delivered(request, str(ws.root) if ws.root else None)
    if remember:
        result.notes += record(request, result, session_id)
    return result


def preview(ws: Workspace, request: Request) -> Injection:
    """What a start would inject (``request``: its ranking) and, in ``left_out``, every
    entry it would have chosen that it leaves out, with the reason (the page)."""
    result, passed = assembled(request, str(ws.root) if ws.root else None)
    plain = build(request)  # no budget, nothing passed over: what the ranking alone picks
    held = {c.id for c in result.chosen} | {o.id for o in result.left_out}
    result.left_out += [
        LeftOut(c.id, c.name, c.category, passed[c.id])
        for c in plain.chosen
        if c.id not in held and c.id in passed
    ]  # fmt: skip
    return result


def search(
    ws: Workspace, query: str, limit: int = 10, categories: Sequence[str] | None = None
) -> Injection:
    """The hook's hybrid ranking for any query: best first, no category balance."""
    return build(Request.interactive(ws, limit=limit, query=query, categories=categories))


def for_hook(
    ws: Workspace,
    deadline: float,
    session_id: str = "",
    claim: Callable[[], bool] | None = None,
    keep: Callable[[Recall], None] | None = None,
    trigger: str = "startup",
    cwd: str | None = None,
) -> Injection:
    """The SessionStart injection within ``deadline``, recorded as a recall.

    ``claim``, asked once there is something to inject, says whether this run
    injects (several registrations of the hook may run for one start); when
    it says no, nothing is injected or recorded.  ``keep``, when given, takes
    the recall to record instead of it being written here (the hook has it
    written after its output, by a process of its own).  What is injected is
    noted as received by the session (``trigger``: the start's source) before
    anything is printed.
    """
    request = Request.hook(ws, deadline)
    where = cwd if cwd is not None else (str(ws.root) if ws.root else None)
    result = delivered(request, where, session_id, trigger)
    if not (result.chosen or result.text):  # a fresh start still forgets what was received
        result.notes += received.add(ws.home, session_id, trigger, [])
        return result
    return handed(request, result, session_id, trigger, claim, keep)


def handed(
    request: Request,
    result: Injection,
    session_id: str,
    trigger: str,
    claim: Callable[[], bool] | None,
    keep: Callable[[Recall], None] | None,
) -> Injection:
    """``result`` once this run may give it (``claim``): noted as received by the session
    and recorded as a recall (handed to ``keep``, or written here)."""
    if claim is not None and not claim():
        return Injection(text="", mode=result.mode)
    given = [c.id for c in result.chosen] + result.branch_ids
    result.notes += received.add(request.home, session_id, trigger, given)
    recall = recall_of(request, result, session_id, trigger)
    if recall is not None and keep is not None:
        keep(recall)
    elif recall is not None:
        result.notes += write(request.home, recall, "prompt" if trigger == "prompt" else "inject")
    return result


def for_prompt(
    ws: Workspace,
    prompt: str,
    deadline: float,
    session_id: str = "",
    cwd: str | None = None,
    claim: Callable[[], bool] | None = None,
    keep: Callable[[Recall], None] | None = None,
) -> Injection:
    """A prompt's recall within ``deadline``: at most ``PROMPT_RECALL_ENTRIES`` entries
    (``PROMPT_RECALL_MAX_CHARS``) whose relevance to the prompt reaches the floor and that
    the session does not hold; an empty text otherwise.  Recorded as a recall (trigger
    ``prompt``) and noted as received, as ``for_hook`` does."""
    text = prompt_text(prompt)
    if text is None:
        return Injection(text="", mode="none")
    request, notes = caught_up(Request.prompt(ws, deadline, text, PROMPT_CANDIDATES))
    try:
        holds = in_context.excluded(ws.home, cwd, session_id)
        here = in_context.checkout(ws.root, ws.project, current_branch(ws.root) if ws.root else "")
        holds = {**in_context.branch_excluded(ws.home, here)[1], **holds}
    except Exception as exc:  # noqa: BLE001 - sqlite3 errors among others: a note, never a failure
        notes.append(f"what the session holds was not read ({type(exc).__name__}: {exc})")
        holds = {}
    request = msgspec.structs.replace(request, excluded=holds)
    result = build(request)
    result.notes = notes + result.notes
    if result.mode == "legacy" or not result.chosen:
        return Injection(text="", mode=result.mode, query=result.query, notes=result.notes)
    return handed(request, result, session_id, "prompt", claim, keep)


def delivered(
    request: Request, cwd: str | None, session: str = "", trigger: str = "startup"
) -> Injection:
    """A session start's whole context for ``request``, within the budget, each lesson
    once: what the session holds (seen from ``cwd``; what it received, after a start
    that is not ``received.FRESH``) is passed over."""
    return assembled(request, cwd, session, trigger)[0]


def assembled(
    request: Request, cwd: str | None, session: str = "", trigger: str = "startup"
) -> tuple[Injection, dict[str, str]]:
    """``delivered``'s context, and every entry it passed over with the reason."""
    ws = request.ws
    request, notes = caught_up(request)  # what the session holds is read from the views
    cap = ws.config.memory_injection_max_chars
    got: set[str] = set()
    try:
        holds = in_context.excluded(ws.home, cwd)
        if trigger not in received.FRESH:  # a resumed session still has what it received
            got = received.received(ws.home, session)
        seen = {**dict.fromkeys(got, in_context.RECEIVED), **holds}
        branch_text, branch_ids, passed = branch_part(ws, seen, cap)
    except Exception as exc:  # noqa: BLE001 - sqlite3 errors among others: a note, never a failure
        notes.append(f"what the session holds was not read ({type(exc).__name__}: {exc})")
        holds, branch_text, branch_ids, passed = {}, "", [], {}
    excluded = {**passed, **holds, **dict.fromkeys(branch_ids, in_context.IN_BRANCH_MEMORY)}
    reserved = size(more_line(MORE_RESERVED)) + 2 + (size(branch_text) + 2 if branch_text else 0)
    request = msgspec.structs.replace(
        request, excluded=excluded, received=frozenset(got - excluded.keys()),
        max_chars=cap - reserved,
    )  # fmt: skip
    result = build(request)
    if result.mode == "legacy":
        result = fit_legacy(request, result)
    result.notes = notes + result.notes
    result.branch_ids = branch_ids
    if result.text and branch_text:  # said once, under the first block's title
        branch_text = branch_text.replace(f"\n{LESSONS_NOTE}", "", 1)
    held = result.text or branch_text
    last = more_line(result.more, result.query is not None) if result.more and held else ""
    result.text = joined(result.text, branch_text, last)
    return result, {**dict.fromkeys(request.received, in_context.RECEIVED), **excluded}


def branch_part(
    ws: Workspace, holds: dict[str, str], cap: int
) -> tuple[str, list[str], dict[str, str]]:
    """The Branch Memory block of the branch checked out (what the session does not hold
    yet), the ids it gives, and the other branches' entries, which are not given here."""
    branch = current_branch(ws.root) if ws.root is not None else ""
    here = in_context.checkout(ws.root, ws.project, branch)
    mine, others = in_context.branch_excluded(ws.home, here)
    if not mine:
        return "", [], others
    entries = [e for e in queries.entries(ws.home, mine, vectors=False) if e.id not in holds]
    entries.sort(key=lambda e: (e.created_seq, e.id))
    elsewhere = foreign(entries, known_device_id(ws.home))
    text, ids = injected(entries, min(BRANCH_BLOCK_MAX_CHARS, cap // 2), elsewhere)
    return text, ids, others


def fit_legacy(request: Request, result: Injection) -> Injection:
    """The markdown pipeline's block held to the budget: the last entries left out, whole
    (its entries are printed as their files have them, never condensed)."""
    assert request.max_chars is not None
    fitted = result
    while fitted.chosen and size(fitted.text) > request.max_chars:
        fewer = msgspec.structs.replace(request, limit=len(fitted.chosen) - 1)
        fitted = build(fewer)
    kept = {c.id for c in fitted.chosen}
    fitted.left_out += [
        LeftOut(c.id, c.name, c.category, NO_ROOM) for c in result.chosen if c.id not in kept
    ]
    return fitted


def joined(*parts: str) -> str:
    """The blocks of a context, a blank line between them."""
    kept = [p.rstrip("\n") for p in parts if p.strip()]
    return "\n\n".join(kept) + "\n" if kept else ""
