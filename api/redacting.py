"""Taking a secret out after the fact: from the log, every view and every copy in the home.

``redact`` rewrites the lines that hold the text (``eventlog.expunge``: one
``entry.redacted`` event records what was removed and why), rebuilds the
views from the rewritten log, truncates the database's write-ahead log,
removes the text from the other files of the home (quarantine, backups,
``.last-injection.json``, error logs), and embeds and labels the entries
again from their cleaned text.
"""

from __future__ import annotations

from typing import NamedTuple

from memlog.capture.pipeline import settle
from memlog.eventlog.events import Redacted
from memlog.eventlog.expunge import Target, check_target, expunge
from memlog.projections.runner import rebuild
from memlog.projections.scrub import scrub_home, truncate_wal
from memlog.projections.sqlite_view import queries
from memlog.sync.repo import GIT_DIR
from memlog.workspace import Workspace


class Redaction(NamedTuple):
    """What a redaction did."""

    event: Redacted
    #: lines of the log rewritten, and damaged lines scrubbed
    events: int
    damaged: int
    #: other files of the home the text was removed from
    files: list[str]
    notes: list[str]


def redact(ws: Workspace, prefix: str | None, match: str | None, reason: str) -> Redaction:
    """Remove ``match`` (or the secrets the rules find) from the entry ``prefix`` (or from
    everything); InvalidInput, with nothing changed, when there is nothing to remove."""
    check_target(Target(prefix, match))
    entry_id = None
    if prefix is not None:
        ws.catch_up()
        entry_id = queries.find_entry(ws.home, prefix).id
    done = expunge(ws.log("redact"), Target(entry_id, match), reason)
    files = scrub_home(ws.home, done.removed)  # first, in case the rebuild fails
    rebuilt = rebuild(ws.home, ws.space)
    notes = list(rebuilt.notes)
    if not truncate_wal(ws.home):
        notes.append(
            "memory.db-wal was held by a reader and still has pages from before; "
            "memlog replay removes them once nothing reads the view"
        )
    files += [f for f in scrub_home(ws.home, done.removed) if f not in files]  # new backups
    notes += settle(ws, done.event.ids)
    if (ws.home / GIT_DIR).is_dir():
        notes.append(
            f"the old text stays in the history of {GIT_DIR} and of its remote: memlog sync "
            "carries the rewritten segments, rewriting git history is yours to do"
        )
    return Redaction(done.event, done.events, done.scrubbed, files, notes)
