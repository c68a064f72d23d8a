"""Getting knowledge out: what to inject for a project, and search by query."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import msgspec

from memlog.git import current_branch
from memlog.projections.branch_memory import block
from memlog.retrieval.inject import build
from memlog.retrieval.record import Recall, recall_of, record, write
from memlog.retrieval.request import Chosen, Injection, Request
from memlog.workspace import Workspace

__all__ = ["Chosen", "Injection", "Recall", "Request", "for_hook", "inject", "search"]


def inject(
    ws: Workspace,
    limit: int | None = None,
    remember: bool = False,
    session_id: str = "",
    drop_in: bool = False,
) -> Injection:
    """What the hook would inject for the workspace's project (recorded when asked).

    ``drop_in``: as iflow's memory.py, which the markdown pipeline then reproduces exactly
    (the block alone: no line on how it was chosen, no branch memory).
    """
    request = msgspec.structs.replace(Request.interactive(ws, limit=limit), drop_in=drop_in)
    result = build(request)
    if not (drop_in and result.mode == "legacy"):
        result = with_branch_memory(ws, result)
    if remember:
        result.notes += record(request, result, session_id)
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
) -> Injection:
    """The SessionStart injection within ``deadline``, recorded as a recall.

    ``claim``, asked once there is something to inject, says whether this run
    injects (several registrations of the hook may run for one start); when
    it says no, nothing is injected or recorded.  ``keep``, when given, takes
    the recall to record instead of it being written here (the hook has it
    written after its output, by a process of its own).
    """
    request = Request.hook(ws, deadline)
    result = with_branch_memory(ws, build(request))
    if (result.chosen or result.text) and claim is not None and not claim():
        return Injection(text="", mode=result.mode)
    recall = recall_of(request, result, session_id)
    if recall is not None and keep is not None:
        keep(recall)
    elif recall is not None:
        result.notes += write(ws.home, recall, "inject")
    return result


def with_branch_memory(ws: Workspace, result: Injection) -> Injection:
    """``result`` followed by the branch memory of the branch checked out, if it has any."""
    branch = current_branch(ws.root) if ws.root is not None else ""
    try:
        text = block(ws.home, ws.project, branch)
    except Exception as exc:  # noqa: BLE001 - sqlite3 errors among others: a note, never a failure
        result.notes.append(f"branch memory not read ({type(exc).__name__}: {exc})")
        return result
    if text:
        result.text = f"{result.text}\n{text}" if result.text else text
    return result
