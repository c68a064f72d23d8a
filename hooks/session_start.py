"""The SessionStart hook: memories in, never a broken start.

Reads the hook's JSON from stdin (missing or invalid means ``startup``),
prints ``{"hookSpecificOutput": {"hookEventName": "SessionStart",
"additionalContext": …}}`` and exits 0, whatever fails.  The work runs in
a worker thread; when the budget (``memory_hook_budget_ms``, 2.5 s by
default) is about to run out the hook prints an empty context and leaves.
Failures never reach stdout and are never silent: they go to
``hook-errors.log`` in the memlog home, which ``memlog stats`` reports.
When several registrations run the hook for one start (the plugin and
``memlog setup``'s entries), only the first injects (``claims``).  Once the
output is out, the recall, the session's start and the catch-up of the views
are handed to a detached recorder (``recorder``): Claude Code waits for the
hook's exit, not for them.  The plugin's first start also tells its user,
once, what extraction sends where (``notice``).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlog.errors import MemlogError
from memlog.eventlog.snapshot import is_snapshot
from memlog.home import Home, resolve_home
from memlog.hooks import notice
from memlog.hooks.common import MARGIN, log_error, read_payload, workspace
from memlog.spawn import BLAS_PINNED

if TYPE_CHECKING:
    from collections.abc import Callable

    #: what fills a hook's box: its context, the recall to record, the budget …
    Work = Callable[[dict[str, Any], Home, float, dict[str, Any]], None]
    #: what a hook hands to the recorder after its output (``leave``)
    Leave = Callable[[dict[str, Any], Home, dict[str, Any]], None]

DEFAULT_BUDGET = 2.5
#: the prompt hook's budget until its configuration is read (``memory_prompt_budget_ms``)
PROMPT_BUDGET = 1.0
#: time kept after the query embedding's deadline for ranking and recording, so a
#: late embedding drops the vector signal rather than the whole injection
RANK_RESERVE = 0.35
SOURCES = ("startup", "resume", "clear", "compact")


def envelope(context: str, message: str = "") -> str:
    """The hook's output; ``message`` is shown to the user, never given to the model."""
    output: dict[str, Any] = {"hookEventName": "SessionStart", "additionalContext": context}
    shown = {"systemMessage": message} if message else {}
    return json.dumps({**shown, "hookSpecificOutput": output}, ensure_ascii=False)


def _work(payload: dict[str, Any], home: Home, started: float, box: dict[str, Any]) -> None:
    """Build the injection: its text, the recall to record and the space go into ``box``."""
    from memlog.api.adoption import adopt
    from memlog.api.recall import for_hook
    from memlog.hooks.claims import claim

    cwd = str(payload.get("cwd") or os.getcwd())
    ws = workspace(cwd, home)
    box["space"] = tuple(ws.space)
    for warning in ws.warnings:
        log_error(home, f"config: {warning}")
    config = ws.config
    box["resident"] = config.memory_resident_minutes
    if not _wanted(payload, config.memory_injection_enabled, config.memory_inject_on_compact):
        return
    adopted = adopt(ws, settle=False)  # an iflow store in the home, before the first write
    if adopted is not None:
        box["adopted"] = adopted  # told to the user with the output (``adoption_said``)
    budget = config.memory_hook_budget_ms / 1000
    box["budget"] = str(budget)
    deadline = started + budget - MARGIN - RANK_RESERVE
    session = str(payload.get("session_id") or "")
    result = for_hook(
        ws, deadline, session, claim=lambda: claim(home, payload),
        keep=lambda recall: box.__setitem__("recall", recall), trigger=source_of(payload),
        cwd=cwd if Path(cwd).is_dir() else None,
    )  # fmt: skip
    box["context"] = result.text
    for note in result.notes:
        tell(home, note)


def tell(home: Home, note: str, prefix: str = "") -> None:
    """Keep a hook's note in its error log; damaged views are said on stderr too (the user
    learns why a hook injects less than the log knows)."""
    log_error(home, prefix + note)
    if "is damaged (" in note:
        sys.stderr.write(f"memlog hook: {note}\n")


def source_of(payload: dict[str, Any]) -> str:
    """The start's source (``startup`` when it names none Claude Code sends)."""
    source = str(payload.get("source") or "startup")
    return source if source in SOURCES else "startup"


def _wanted(payload: dict[str, Any], enabled: bool, on_compact: bool) -> bool:
    return enabled and (source_of(payload) != "compact" or on_compact)


def run(
    payload: dict[str, Any],
    home: Home,
    started: float,
    kept: dict[str, Any] | None = None,
    told: Callable[[float], None] | None = None,
    work: Work | None = None,
) -> str:
    """The context to inject, or empty when anything fails or time runs out; ``kept``
    receives the recall to record (only with a context injected), the space and the
    resident's minutes, and ``late`` or ``failed`` when so; ``told`` is given the
    budget as soon as it is known.  ``work`` fills the box (default: a start's)."""
    box: dict[str, Any] = {"default": DEFAULT_BUDGET if work is None else PROMPT_BUDGET}
    failure: list[BaseException] = []
    chosen = _work if work is None else work

    def target() -> None:
        try:
            chosen(payload, home, started, box)
        except BaseException as exc:  # noqa: BLE001 - the hook must never fail
            failure.append(exc)

    worker = threading.Thread(target=target, name="memlog-hook", daemon=True)
    worker.start()
    while worker.is_alive():
        if told is not None and "budget" in box:
            told(_budget(box))
            told = None
        remaining = _budget(box) - MARGIN - (time.monotonic() - started)
        if remaining <= 0:
            break
        worker.join(min(remaining, 0.05 if told is None else 0.005))
    if told is not None:
        told(_budget(box))
    kept = {} if kept is None else kept
    for name in ("space", "resident", "adopted"):  # kept even after a failure
        if name in box:
            kept[name] = box[name]
    if worker.is_alive():
        kept["late"] = True
        log_error(home, "deadline reached; injected nothing")
        return ""
    if failure:
        kept["failed"] = True
        log_error(home, f"failed: {type(failure[0]).__name__}: {failure[0]}", failure[0])
        return ""
    if "recall" in box:
        kept["recall"] = box["recall"]
    return str(box.get("context", ""))


def _budget(box: dict[str, Any]) -> float:
    # The configured budget is known once the worker has read the configuration; until
    # then the default (``box["default"]``: the prompt hook's is shorter).
    return float(box.get("budget", box.get("default", DEFAULT_BUDGET)))


def main() -> None:
    """Entry point of ``memlog hook session-start``: always prints valid JSON, exits 0."""
    from memlog.hooks.sessions import guarded

    started = time.monotonic()
    pin_blas()
    home = resolve_home()
    context, payload, told = "", {}, ""
    box: dict[str, Any] = {}  # the recall and the space, for ``leave``
    served = False
    try:
        if not guarded():  # not inside memlog's own extraction
            payload = read_payload()
            context, served = answered(payload, home, started, box)
            told = notice.first_time(payload, home)
    except BaseException as exc:  # noqa: BLE001 - the hook must never fail
        log_error(home, f"failed: {type(exc).__name__}: {exc}", exc)
    said = "\n".join(part for part in (adoption_said(box), told) if part)
    sys.stdout.write(envelope(context, said) + "\n")
    sys.stdout.flush()

    def afterwards() -> None:
        if told:
            notice.remember(told)
        hand_on(payload, home, box, served, leave)

    after_output(home, afterwards)
    os._exit(0)  # a late worker thread must not hold the exit


def adoption_said(box: dict[str, Any]) -> str:
    """What adopting an iflow store at this start tells the user, as the CLI says it on
    stderr (the hook's stderr reaches no one): the store adopted, the backups kept."""
    adopted = box.get("adopted")
    if adopted is None:
        return ""
    return "\n".join(f"memlog: {line}" for line in (adopted.line, *adopted.notes))


def answered(
    payload: dict[str, Any],
    home: Home,
    started: float,
    box: dict[str, Any],
    op: str = "start",
    work: Work | None = None,
) -> tuple[str, bool]:
    """The context the home's resident ranked for ``op`` (``from_resident``), else the
    one ranked here (``run`` with ``work``: a start's by default); and whether the
    resident served it."""
    answer = from_resident(payload, home, started, op)
    if answer is not None:
        return answer, True
    return run(payload, home, started, box, None, work), False


def after_output(home: Home, step: Callable[[], None], what: str = "") -> None:
    """Run what a hook does once its output is out; a failure goes to the error log (with
    ``what`` before it), never to Claude Code."""
    try:
        step()
    except BaseException as exc:  # noqa: BLE001 - the hook must never fail
        log_error(home, f"{what}failed after the output: {type(exc).__name__}: {exc}", exc)


def hand_on(
    payload: dict[str, Any], home: Home, box: dict[str, Any], served: bool, leave: Leave
) -> None:
    """Unless the resident served the output (it records what it served): hand what is
    to be recorded over (``leave``, the hook's own), then start a resident for the next."""
    if not served:
        leave(payload, home, box)
        start_resident(home, box, payload)


def from_resident(
    payload: dict[str, Any], home: Home, started: float, op: str = "start"
) -> str | None:
    """The context as the home's resident ranks it (``op``: a ``start``, or a ``prompt``);
    None when none serves it."""
    from memlog.hooks import resident

    try:
        return resident.ask(payload, home, started, op)
    except resident.ResidentError as exc:
        log_error(home, str(exc))
        return "" if exc.spent else None  # no time left to rank here


def start_resident(home: Home, box: dict[str, Any], payload: dict[str, Any]) -> None:
    """After a start ranked here, start a resident for the next ones (when wanted)."""
    minutes = box.get("resident", 0)
    if not minutes or "space" not in box or is_snapshot(home):
        return
    from memlog.hooks.resident import start

    start(home, int(minutes), str(payload.get("cwd") or os.getcwd()))


def pin_blas() -> None:
    """One BLAS thread for this process, set before numpy loads: the hook embeds one
    query, which one thread serves best, and numpy then starts no thread pool.  Children
    (the recorder, the sweep it starts) get the environment without it (``spawn``)."""
    if "OPENBLAS_NUM_THREADS" not in os.environ and "numpy" not in sys.modules:
        os.environ["OPENBLAS_NUM_THREADS"] = "1"
        os.environ[BLAS_PINNED] = "1"


def leave(payload: dict[str, Any], home: Home, box: dict[str, Any]) -> None:
    """After the output: hand the recall and the start to the recorder, a process of its
    own (``hooks.recorder``); when it cannot start, write them here."""
    from memlog.hooks.recorder import Handover, hand_over
    from memlog.hooks.sessions import after_start

    recall, space = box.get("recall"), box.get("space")
    if not to_record(payload, home, box):
        return
    try:
        hand_over(home, Handover(payload=payload, marker="", recall=recall, space=space))
    except (OSError, ValueError, MemlogError) as exc:
        log_error(home, f"recorder not started ({exc}); recording in the hook")
        if recall is not None:
            from memlog.retrieval.record import write

            for note in write(home, recall, "inject", wait=False):
                log_error(home, note)
        after_start(payload, home)


def to_record(payload: dict[str, Any], home: Home, box: dict[str, Any]) -> bool:
    """Whether a start leaves anything to record: a recall, or a start of a home in use."""
    from memlog.hooks.sessions import start_wanted

    if is_snapshot(home):  # a snapshot is read, never written
        return False
    if box.get("recall") is not None or start_wanted(payload, home):
        return True
    return auto_memory_changed(payload, home)


def auto_memory_changed(payload: dict[str, Any], home: Home) -> bool:
    """Whether the start's project has auto memory files memlog has not read yet."""
    from memlog.hooks.recorder import native_changed
    from memlog.hooks.sessions import guarded

    cwd = str(payload.get("cwd") or "")
    try:
        return not guarded() and bool(cwd) and os.path.isdir(cwd) and native_changed(home, cwd)
    except OSError:
        return False
