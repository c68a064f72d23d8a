"""Taking a secret out after the fact: from the log, every view and every copy in the home.

``redact`` rewrites the lines that hold the text (``eventlog.expunge``: one
``entry.redacted`` event records what was removed and why), rebuilds the
views from the rewritten log, truncates the database's write-ahead log,
removes the text from the other files of the home (quarantine, backups,
``.last-injection.json``, error logs), and embeds and labels the entries
again from their cleaned text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple, TypeVar

from memlog.api.browsing import forget_snapshots
from memlog.capture.pipeline import settle
from memlog.errors import InvalidInput, Unfinished, describe
from memlog.eventlog import redaction_journal
from memlog.eventlog.events import Redacted
from memlog.eventlog.expunge import Expunged, NothingFound, Target, check_target, expunge
from memlog.home import Home
from memlog.projections.runner import rebuild
from memlog.projections.scrub import scrub_home, truncate_wal, views_hold
from memlog.projections.sqlite_view import queries
from memlog.workspace import Workspace


class Redaction(NamedTuple):
    """What a redaction did (``event`` None: the log no longer held the text, a run that
    finished what an earlier one started)."""

    event: Redacted | None
    #: lines of the log rewritten, and damaged lines scrubbed
    events: int
    damaged: int
    #: other files of the home the text was removed from
    files: list[str]
    notes: list[str]


def redact(ws: Workspace, prefix: str | None, match: str | None, reason: str) -> Redaction:
    """Remove ``match`` (or the secrets the rules find) from the entry ``prefix`` (or from
    everything); InvalidInput, with nothing changed, when there is nothing to remove.

    Once the log is rewritten the redaction goes on whatever fails: a step that fails
    raises ``Unfinished`` (what was done, what failed, how to finish), and running the
    same ``--match`` again finishes it: the text no longer in the log is still looked
    for in the views and every file of the home.
    """
    check_target(Target(prefix, match))
    entry_id = None
    if prefix is not None:
        ws.catch_up()
        entry_id = queries.find_entry(ws.home, prefix).id
    try:
        done = expunge(ws.log("redact"), Target(entry_id, match), reason)
    except NothingFound:
        if match is None:
            raise
        return finish(ws, match)
    redacted = _after(ws, done)
    redaction_journal.done(ws.home)  # the text is nowhere in the home now
    return redacted


def _after(ws: Workspace, done: Expunged) -> Redaction:
    """Everything after the log's rewrite: views, copies, vectors; each step said if it fails."""
    said = f"the text is out of the log (entry.redacted, seq {done.event.seq})"
    files, notes = _views_and_copies(ws, done.removed, said, rebuild_views=True)
    notes += _step(said, "embedding the entries again", lambda: settle(ws, done.event.ids), ws.home)
    if ws.home.sync_repo.is_dir():
        notes.append(
            f"the old text stays in the history of {ws.home.sync_repo.name} and of its remote, "
            "sealed (only the sync key opens it): memlog sync signs this device's rewritten "
            "lines again and sends them, and asks the device that wrote any other line to take "
            "the text out of it (its owner confirms: memlog sync --requests there); rewriting "
            "git history is yours to do"
        )
    return Redaction(done.event, done.events, done.scrubbed, files, notes)


def after_replaced(ws: Workspace, done: Expunged) -> Redaction:
    """Everything after this device's lines were replaced by the ones other devices asked
    for (``expunge.replace_lines``): views, copies, vectors, as after a redaction."""
    redacted = _after(ws, done)
    redaction_journal.done(ws.home)
    return redacted


def finish(ws: Workspace, match: str) -> Redaction:
    """A redaction of ``match`` run again: the log no longer holds it, the views and the
    other files of the home may (a run that stopped half way, a backup made since)."""
    in_views = views_hold(ws.home, [match])
    said = "the text was already out of the log"
    files, notes = _views_and_copies(ws, (match,), said, rebuild_views=in_views)
    if not in_views and not files:
        raise InvalidInput(
            "the text given with --match is nowhere in the log, the views or the other files "
            "of the home; nothing was changed"
        )
    views = ["memory.db and the markdown view (rebuilt)"] if in_views else []
    redaction_journal.done(ws.home)
    return Redaction(None, 0, 0, views + files, notes)


def _views_and_copies(
    ws: Workspace, texts: tuple[str, ...], said: str, rebuild_views: bool
) -> tuple[list[str], list[str]]:
    """The text out of every other file of the home, the views rebuilt, then out of the
    backups the rebuild made of hand-edited files: the files changed, and notes."""
    scrub = "removing it from the other files of the home"
    home = ws.home
    files = _step(said, scrub, lambda: scrub_home(home, texts), home)
    notes = _step(said, "rebuilding the views", lambda: _rebuild(ws), home) if rebuild_views else []
    files += [
        f for f in _step(said, scrub, lambda: scrub_home(home, texts), home) if f not in files
    ]
    pages = _step(said, "removing the page's snapshots", lambda: forget_snapshots(home), home)
    if pages:
        notes.append(f"removed {len(pages)} snapshots a running memlog ui had built before")
    return files, notes


def _rebuild(ws: Workspace) -> list[str]:
    notes = list(rebuild(ws.home, ws.space).notes)
    if not truncate_wal(ws.home):
        notes.append(
            "memory.db-wal was held by a reader and still has pages from before; "
            "memlog replay removes them once nothing reads the view"
        )
    return notes


T = TypeVar("T")


def _step(said: str, doing: str, work: Callable[[], T], home: Home | None = None) -> T:
    """``work()``; a failure becomes ``Unfinished`` saying what was done before it (a crash's
    traceback kept in ``home``'s error log)."""
    try:
        return work()
    except Exception as exc:  # noqa: BLE001 - whatever stops it, the user learns how far it got
        cause = describe(exc, home.errors_log if home is not None else None).message
        raise Unfinished(
            f"{said}; {doing} failed: {cause}; run the same memlog redact again to finish"
        ) from exc
