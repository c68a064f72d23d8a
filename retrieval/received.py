"""What a session has already received from memlog, so nothing is given to it twice.

Each injection into a session (a start's block, a prompt's recall) appends one
line to the session's file in ``.received/`` (named by a digest of the session
id), written by the hook before its output, so the next hook of the session
sees it however soon it runs: ``{"trigger": …, "ids": […]}``.

What counts as received: everything since the session's latest ``startup``,
``clear`` or ``compact``.  A resumed session has its whole transcript back,
so what it received before is still there and is not injected again.  A
compaction replaces the conversation by a summary that keeps little of an
injected block, and a clear empties it: both begin afresh, so the start
block is injected again in full and the prompts may recall again what they
recalled before.  The ``entry.recalled`` events say the same for good (their
``session_id`` and ``trigger``); these files are the hooks' quick record of
it, swept after ``KEEP_DAYS`` (Claude Code deletes a session's transcript
after 30 days by default, so it cannot be resumed after that).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable
from pathlib import Path

from memlog import digests
from memlog.home import Home

#: triggers after which a session's context holds nothing memlog gave it before
FRESH = ("startup", "clear", "compact")
KEEP_DAYS = 30
#: what one session's file may take (a session recalls a few entries per prompt)
MAX_BYTES = 1 << 20


def path(home: Home, session: str) -> Path:
    name = digests.sha256(session.encode("utf-8", "replace")).hexdigest()[:32]
    return home.received / name


def add(home: Home, session: str, trigger: str, ids: Iterable[str]) -> list[str]:
    """Note that ``session`` received ``ids`` at ``trigger`` (nothing without a session);
    a note when it cannot be kept (a read-only home: the next hooks may repeat them)."""
    given, where = sorted(set(ids)), path(home, session)
    if not session or not (given or (trigger in FRESH and where.exists())):
        return []  # nothing received, and nothing received before to forget
    line = json.dumps({"trigger": trigger, "ids": given}) + "\n"
    try:
        where.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(where, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)
    except OSError as exc:
        return [f"what the session received was not noted ({exc.strerror or exc})"]
    return []


def received(home: Home, session: str) -> set[str]:
    """The ids ``session`` holds from memlog: those since its latest fresh start."""
    if not session:
        return set()
    try:
        fd = os.open(path(home, session), os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return set()
    with os.fdopen(fd, "rb") as handle:
        text = handle.read(MAX_BYTES).decode("utf-8", "replace")
    found: set[str] = set()
    for line in text.splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue  # a torn last line: what it held is taken as not received
        if not isinstance(item, dict) or not isinstance(item.get("ids"), list):
            continue
        if item.get("trigger") in FRESH:
            found = set()
        found.update(str(i) for i in item["ids"])
    return found


def sweep(home: Home, now: float | None = None) -> None:
    """Remove the files of sessions untouched for ``KEEP_DAYS``."""
    limit = (time.time() if now is None else now) - KEEP_DAYS * 86400
    try:
        entries = list(os.scandir(home.received))
    except OSError:
        return
    for entry in entries:
        try:
            if entry.stat(follow_symlinks=False).st_mtime < limit:
                os.unlink(entry.path)
        except OSError:
            continue
