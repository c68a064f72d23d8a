"""Sessions in the hooks: SessionEnd and PreCompact record and start extraction, and
SessionStart records the start and starts a sweep of sessions still pending.

Claude Code gives SessionEnd hooks about 1.5 s in all and kills slower ones,
so no model is ever called here: the hook appends one ``session.pending``
event (session id, transcript path and size, cwd, project, the git branch of
the transcript's last line, the hook's reason or trigger), starts ``memlog
memorize --background`` detached, prints ``{}`` and exits 0, whatever fails
(failures go to ``hook-errors.log``).  Only the event log is imported on this
path: no click, no SQLite, no numpy, no HTTP.

After the SessionStart hook's output, its recorder (``hooks.recorder``)
records the session's start (so a session Claude Code never ends, because it
crashed or was killed, is still found) and starts ``memlog memorize
--background`` for what is pending, at most once every ``SWEEP_INTERVAL``
seconds; both only for a home already in use, never beside the injection
(they would compete with it for time).  When the recorder cannot be
started, the hook does it itself in a thread waited for
``AFTER_START_SECONDS`` at most: a held log lock can never keep the hook.

Every memlog hook exits at once with valid empty output when
``MEMLOG_EXTRACTING`` is set: that is the environment of the ``claude`` an
extraction runs, so extraction never records or extracts itself.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

from memlog.home import Home
from memlog.hooks.common import log_error, read_payload

GUARD = "MEMLOG_EXTRACTING"
#: how much of a transcript's end is read for its git branch
TAIL_BYTES = 64 << 10
_BRANCH = re.compile(rb'"gitBranch"\s*:\s*"((?:[^"\\]|\\.)*)"')
EVENTS = {"session-end": "SessionEnd", "pre-compact": "PreCompact"}
#: the payload field each hook's own word comes from
REASONS = {"SessionEnd": "reason", "PreCompact": "trigger", "SessionStart": "source"}
SWEEP_INTERVAL = 300.0
#: the longest the SessionStart hook waits, after its output, for the start to be recorded
AFTER_START_SECONDS = 0.5


def guarded() -> bool:
    """Whether this process runs inside memlog's own extraction."""
    return bool(os.environ.get(GUARD))


def tail_branch(path: Path) -> str:
    """The ``gitBranch`` of the last transcript line that has one ("" when none)."""
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - TAIL_BYTES))
            tail = handle.read()
    except OSError:
        return ""
    found = _BRANCH.findall(tail)
    if not found:
        return ""
    import json

    try:
        branch = json.loads(b'"' + found[-1] + b'"')
    except ValueError:
        return ""
    return branch if isinstance(branch, str) else ""


def pending_event(payload: dict[str, Any], hook: str) -> Any:
    """The ``session.pending`` event for a hook's payload (None without a session id)."""
    from memlog.eventlog.events import SessionPending
    from memlog.project import find_project_root

    session_id = str(payload.get("session_id") or "")
    if not session_id:
        return None
    transcript = str(payload.get("transcript_path") or "")
    cwd = str(payload.get("cwd") or os.getcwd())
    root = find_project_root(Path(cwd)) if Path(cwd).is_dir() else None
    branch = tail_branch(Path(transcript)) if transcript else ""
    if not branch and root is not None:
        from memlog.git import current_branch  # (git.py loads subprocess: only when needed)

        branch = current_branch(root)
    try:
        size = os.stat(transcript).st_size if transcript else 0
    except OSError:
        size = 0
    reason = payload.get(REASONS.get(hook, "reason"))
    return SessionPending(
        session_id=session_id, transcript=transcript, cwd=cwd,
        project=root.name if root is not None else "", branch=branch, trigger=hook,
        reason=str(reason or ""), size=size,
    )  # fmt: skip


def record(payload: dict[str, Any], home: Home, hook: str) -> bool:
    """Append the session's ``session.pending``; whether there was one to append."""
    from memlog.eventlog.log import EventLog

    event = pending_event(payload, hook)
    if event is None:
        return False
    EventLog(home, command=f"hook {hook}").append_or_spool([event])  # never waits for the lock
    return True


def start_extraction(home: Home, cwd: str = "") -> int:
    """``memlog memorize --background``, detached, for the session's folder ``cwd`` (its
    project's configuration) and this process's environment: nothing waits for it.
    Returns its pid."""
    from memlog.spawn import spawn_memlog

    project = cwd if cwd and os.path.isdir(cwd) else None
    return spawn_memlog(["memorize", "--background"], home, project=project)


def start_sweep(home: Home, now: float, cwd: str = "") -> bool:
    """Start the background sweep unless one started less than ``SWEEP_INTERVAL`` ago."""
    stamp = home.sweep_started
    try:
        if now - stamp.stat().st_mtime < SWEEP_INTERVAL:
            return False
    except FileNotFoundError:
        pass
    from memlog.files import open_private

    fd = open_private(stamp, os.O_WRONLY | os.O_CREAT)  # never through a link
    try:
        os.utime(fd, (now, now))
    finally:
        os.close(fd)
    start_extraction(home, cwd)
    return True


def start_wanted(payload: dict[str, Any], home: Home) -> bool:
    """Whether a start is recorded: not within extraction, with a payload, in a home in use."""
    return not guarded() and bool(payload) and home.events.is_dir()


def record_start(payload: dict[str, Any], home: Home) -> None:
    """Record the session's start and start the sweep when one is due, for a home
    already in use (the hook's recorder does it after the hook's output)."""
    import time

    if not start_wanted(payload, home):
        return
    record(payload, home, "SessionStart")
    start_sweep(home, time.time(), str(payload.get("cwd") or ""))


def after_start(payload: dict[str, Any], home: Home) -> None:
    """``record_start`` in this process, when the hook could not start its recorder: waited
    for ``AFTER_START_SECONDS`` at most (the thread dies with the hook).  Never raises."""
    import threading

    def work() -> None:
        try:
            record_start(payload, home)
        except BaseException as exc:  # noqa: BLE001 - the hook must never fail
            log_error(home, f"SessionStart: {type(exc).__name__}: {exc}", exc)

    worker = threading.Thread(target=work, name="memlog-session", daemon=True)
    worker.start()
    worker.join(AFTER_START_SECONDS)


def main(name: str) -> None:
    """Entry point of ``memlog hook session-end`` / ``pre-compact``: prints ``{}``, exits 0."""
    from memlog.home import resolve_home

    hook = EVENTS.get(name, name)
    if not guarded():
        home = resolve_home()
        try:
            payload = read_payload()
            if record(payload, home, hook):
                start_extraction(home, str(payload.get("cwd") or os.getcwd()))
            if hook == "SessionEnd":
                from memlog.hooks.sync_at_end import start_sync

                start_sync(home, str(payload.get("cwd") or os.getcwd()))
        except BaseException as exc:  # noqa: BLE001 - the hook must never fail
            log_error(home, f"{hook}: {type(exc).__name__}: {exc}", exc)
    sys.stdout.write("{}\n")
    sys.stdout.flush()
    os._exit(0)
