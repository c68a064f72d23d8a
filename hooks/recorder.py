"""What the SessionStart hook leaves to a process of its own: writing after its output.

Claude Code waits for a hook to exit before the session goes on, and the
hook's writes (the recall of what it injected, the session's start, the
views caught up with both) cost more than its ranking.  So after printing
its output the hook starts ``memlog hook record`` detached and hands it a
``Handover`` on stdin; the recorder appends the recall, writes
``.last-injection.json``, records the start, starts the extraction sweep
when one is due, and catches the views up, so the next start finds them
current and ranks without numpy.

While a recorder runs, its marker lies in ``.recording/`` (made by the hook
before the start, removed by the recorder when done, whatever happened):
``settled`` waits for them, and ``memlog doctor`` counts old ones.
Failures go to ``hook-errors.log``, as the hook's do.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import msgspec

from memlog.home import Home
from memlog.hooks.common import log_error, workspace
from memlog.retrieval.record import Recall

#: the recorder's command line after ``python -m memlog``
COMMAND = ("hook", "record")


class Handover(msgspec.Struct):
    """What the hook hands its recorder."""

    payload: dict[str, Any]
    marker: str
    recall: Recall | None = None
    #: the embedding space the views are caught up in (provider, model, dimensions)
    space: tuple[str, str, int] | None = None
    #: ``start`` (a session start: recorded, with its session) or ``prompt`` (a recall)
    kind: str = "start"


def hand_over(home: Home, handover: Handover) -> None:
    """Start the recorder for ``handover`` (its marker is made first); raises OSError or
    ValueError when it cannot be started, and then no marker is left."""
    from memlog.spawn import spawn_memlog

    handover.marker = mark(home)
    try:
        spawn_memlog(COMMAND, home, stdin=msgspec.json.encode(handover))
    except BaseException:
        (home.recording / handover.marker).unlink(missing_ok=True)
        raise


def mark(home: Home) -> str:
    """Make a recording's marker in ``.recording/`` and return its name."""
    from memlog.files import private_dir

    folder = private_dir(home.recording, home)  # a first start may make the home
    name = f"{os.getpid()}-{time.time_ns()}"
    os.close(os.open(folder / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    return name


def settled(home: Home, timeout: float = 30.0) -> bool:
    """Wait until no recorder of ``home`` runs (at most ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    folder = home.recording
    while time.monotonic() < deadline:
        if not folder.is_dir() or not any(folder.iterdir()):
            return True
        time.sleep(0.02)
    return False


def record(home: Home, handover: Handover) -> None:
    """Everything the handover asks for; each failure is logged and the rest still done."""
    try:
        if handover.recall is not None:
            from memlog.retrieval.record import write

            command = "prompt" if handover.kind == "prompt" else "inject"
            for note in write(home, handover.recall, command, wait=False):
                log_error(home, note)
        if handover.kind == "start":
            _after_start(home, handover.payload)
        if handover.space is not None and home.db.exists():
            _catch_up(home, handover.space)
    finally:
        (home.recording / handover.marker).unlink(missing_ok=True)


def _after_start(home: Home, payload: dict[str, Any]) -> None:
    """The session's start, then Claude Code's auto memory of its project (what changed
    since the last start), each failure logged."""
    from memlog.hooks.sessions import record_start

    try:
        record_start(payload, home)
    except Exception as exc:  # noqa: BLE001 - logged; the views are still caught up
        log_error(home, f"SessionStart: {type(exc).__name__}: {exc}", exc)
    try:
        from memlog.retrieval.received import sweep

        sweep(home)  # what sessions untouched for a month received
        _auto_memory(home, payload)
    except Exception as exc:  # noqa: BLE001 - logged; the views are still caught up
        log_error(home, f"auto memory not read: {type(exc).__name__}: {exc}", exc)


def _auto_memory(home: Home, payload: dict[str, Any]) -> None:
    """Record what changed in the auto memory of the start's project (``claude_memory``)."""
    from memlog.capture.claude_memory import at_start

    cwd = str(payload.get("cwd") or "")
    if not cwd or not os.path.isdir(cwd) or not native_changed(home, cwd):
        return
    done = at_start(workspace(cwd, home), cwd)
    for note in done[1] if done is not None else []:
        log_error(home, f"auto memory: {note}")


def native_changed(home: Home, cwd: str) -> bool:
    """Whether the auto memory folder of ``cwd``'s project changed since it was last read."""
    from memlog.capture.native_seen import changed, project_folder

    return changed(home, project_folder(cwd)[0]) is not None


def _catch_up(home: Home, space: tuple[str, str, int]) -> None:
    from memlog.errors import MemlogError
    from memlog.projections.runner import catch_up
    from memlog.vocabulary import Space

    try:
        catch_up(home, Space(*space))
    except (MemlogError, OSError) as exc:
        log_error(home, f"views not caught up after the start: {exc}")


def main() -> None:
    """Entry point of ``memlog hook record`` (started by the hook, never by hand)."""
    from memlog.home import resolve_home

    home = resolve_home()
    try:
        handover = msgspec.json.decode(sys.stdin.buffer.read(), type=Handover)
    except (OSError, msgspec.DecodeError, UnicodeDecodeError) as exc:
        log_error(home, f"recorder: no handover ({exc})")
        sys.exit(0)
    try:
        record(home, handover)
    except BaseException as exc:  # noqa: BLE001 - logged, like every hook failure
        log_error(home, f"recorder: {type(exc).__name__}: {exc}", exc)
    sys.exit(0)
