"""The UserPromptSubmit hook: a few lessons for the prompt at hand, or nothing.

Reads the hook's JSON from stdin (``session_id``, ``cwd``, ``prompt``),
ranks the prompt (through the home's resident ranker when one runs, else in
its own process) and prints
``{"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
"additionalContext": …}}`` only when entries pass the relevance floor and
the session does not hold them yet (``api.recall.for_prompt``: at most 3,
2,500 characters); otherwise it prints nothing, which Claude Code takes as
no context.  It always exits 0 within ``memory_prompt_budget_ms``; failures
go to ``hook-errors.log``.  ``memory_prompt_recall: false`` turns it off.
A recall is recorded after the output (an ``entry.recalled`` event, trigger
``prompt``) by the start's recorder, and noted as received by the session
before it is printed, so no later hook of the session repeats it.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from memlog import digests
from memlog.home import Home, resolve_home
from memlog.hooks.common import MARGIN, log_error, read_payload, workspace
from memlog.hooks.session_start import RANK_RESERVE, after_output, answered, hand_on, pin_blas, tell
from memlog.retrieval.prompt import prompt_text


def envelope(context: str) -> str:
    output = {"hookEventName": "UserPromptSubmit", "additionalContext": context}
    return json.dumps({"hookSpecificOutput": output}, ensure_ascii=False)


def claim_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """What a prompt's claim is keyed by: its session and the prompt's digest (the plugin
    and ``memlog setup``'s entry both run for one prompt; only one recalls)."""
    prompt = str(payload.get("prompt") or "")
    digest = digests.sha256(prompt.encode("utf-8", "replace")).hexdigest()[:32]
    return {"session_id": payload.get("session_id"), "source": "prompt", "prompt_id": digest}


def work(payload: dict[str, Any], home: Home, started: float, box: dict[str, Any]) -> None:
    """Rank the prompt: its text, the recall to record and the space go into ``box``."""
    from memlog.api.recall import for_prompt
    from memlog.hooks.claims import claim

    cwd = str(payload.get("cwd") or os.getcwd())
    ws = workspace(cwd, home)
    box["space"], box["resident"] = tuple(ws.space), ws.config.memory_resident_minutes
    config = ws.config
    budget = config.memory_prompt_budget_ms / 1000
    box["budget"] = str(budget)
    if not (config.memory_prompt_recall and config.memory_injection_enabled):
        return
    result = for_prompt(
        ws, str(payload.get("prompt") or ""), started + budget - MARGIN - RANK_RESERVE,
        str(payload.get("session_id") or ""), cwd if Path(cwd).is_dir() else None,
        claim=lambda: claim(home, claim_payload(payload)),
        keep=lambda recall: box.__setitem__("recall", recall),
    )  # fmt: skip
    box["context"] = result.text
    for note in result.notes:
        tell(home, note, "prompt: ")


def main() -> None:
    """Entry point of ``memlog hook user-prompt``: prints the context or nothing, exits 0."""
    from memlog.hooks.sessions import guarded

    started = time.monotonic()
    pin_blas()
    home = resolve_home()
    context, payload, served = "", {}, False
    box: dict[str, Any] = {}
    try:
        payload = read_payload() if not guarded() else {}  # not within memlog's extraction
        if prompt_text(str(payload.get("prompt") or "")) is not None:  # it names a topic
            context, served = answered(payload, home, started, box, "prompt", work)
    except BaseException as exc:  # noqa: BLE001 - the hook must never fail
        log_error(home, f"prompt failed: {type(exc).__name__}: {exc}", exc)
    if context:
        sys.stdout.write(envelope(context) + "\n")
    sys.stdout.flush()
    after_output(home, lambda: hand_on(payload, home, box, served, leave), "prompt ")
    os._exit(0)  # a late worker thread must not hold the exit


def leave(payload: dict[str, Any], home: Home, box: dict[str, Any]) -> None:
    """After the output: hand the recall to the recorder (or write it here)."""
    from memlog.errors import MemlogError
    from memlog.eventlog.snapshot import is_snapshot
    from memlog.hooks.recorder import Handover, hand_over

    recall = box.get("recall")
    if recall is None or is_snapshot(home):
        return
    space = box.get("space")
    handover = Handover(payload=payload, marker="", recall=recall, space=space, kind="prompt")
    try:
        hand_over(home, handover)
    except (OSError, ValueError, MemlogError) as exc:
        log_error(home, f"recorder not started ({exc}); recording in the hook")
        from memlog.retrieval.record import write

        for note in write(home, recall, "prompt", wait=False):
            log_error(home, note)
