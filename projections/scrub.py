"""Removing text from every file of the home besides the log and the views.

After a redaction has rewritten the log and the views were rebuilt from it,
copies of the removed text can still sit in files memlog keeps beside them:
the quarantine file (bytes taken out of the log, base64), markdown backups
of hand-edited files, ``.last-injection.json``, the error logs.  The
markdown view itself is rebuilt, not scrubbed (a scrubbed file would look
edited by hand).  Each file
that holds the text (as written, or JSON-escaped) is rewritten atomically
with ``[REDACTED]`` in its place.  ``memory.db`` is rebuilt, not scrubbed;
its write-ahead log is checkpointed and truncated so no page of the old
database stays on disk.
"""

from __future__ import annotations

import base64
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import msgspec

from memlog.eventlog import redaction_journal
from memlog.eventlog import segments as seg
from memlog.eventlog.redaction import REDACTED
from memlog.files import atomic_write
from memlog.home import Home
from memlog.projections.markdown_view.writer import load_state
from memlog.projections.sqlite_view import store

_CHECKPOINT_TRIES = 20


def forms(texts: Iterable[str]) -> list[re.Pattern[bytes]]:
    """The byte forms a text takes in files, as patterns: its words as written, or escaped
    inside JSON strings, with any whitespace (or JSON's ``\\n``, ``\\t``) between them
    (the markdown view folds a private key's newlines into spaces)."""
    found: dict[bytes, re.Pattern[bytes]] = {}
    for text in texts:
        words = text.split()
        if not words:
            continue
        plain = rb"\s+".join(re.escape(w.encode("utf-8")) for w in words)
        escaped = rb"(?:\s|\\[nrt])+".join(re.escape(msgspec.json.encode(w)[1:-1]) for w in words)
        for form in (plain, escaped):
            found.setdefault(form, re.compile(form))
    # the longest first: a form inside another
    return [found[k] for k in sorted(found, key=len, reverse=True)]


def scrub_home(home: Home, texts: Iterable[str]) -> list[str]:
    """Remove ``texts`` from every file of the home but the log and the views; the files
    changed, relative to the home."""
    patterns = forms(texts)
    if not patterns:
        return []
    changed = [home.quarantine.name] if scrub_quarantine(home, patterns) else []
    views = {home.markdown(rel) for rel in load_state(home).files}  # rebuilt, not scrubbed
    for path in _files(home):
        if path not in views and _scrub_file(home, path, patterns):
            changed.append(str(path.relative_to(home.root)))
    return changed


def _scrub_file(home: Home, path: Path, patterns: list[re.Pattern[bytes]]) -> bool:
    """Whether ``path`` held the text and was rewritten without it.  A file that vanishes
    meanwhile (a recorder's marker, a claim) is passed over, never made again."""
    try:
        data = path.read_bytes()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return False
    cleaned = _replace(data, patterns)
    if cleaned == data:
        return False
    if not path.exists():
        return False
    atomic_write(path, cleaned, home)
    return True


def views_hold(home: Home, texts: Iterable[str]) -> bool:
    """Whether ``memory.db`` (with its write-ahead log) or a file of the markdown view
    still holds any of ``texts``: a redaction that stopped before it rebuilt them."""
    patterns = forms(texts)
    views = [home.db, home.db.with_name(f"{home.db.name}-wal")]
    views += [home.markdown(rel) for rel in load_state(home).files]
    for path in views:
        try:
            data = path.read_bytes()
        except OSError:
            continue
        if any(p.search(data) for p in patterns):
            return True
    return False


def scrub_quarantine(home: Home, patterns: list[re.Pattern[bytes]]) -> bool:
    """The quarantine file with the text taken out of the bytes each record keeps."""
    path = home.quarantine
    records = seg.read_quarantine(home)
    if not records:
        return False
    out, touched = [], False
    for record in records:
        data = base64.b64decode(record.data)
        cleaned = _replace(data, patterns)
        if cleaned != data:
            touched = True
            encoded = base64.b64encode(cleaned).decode("ascii")
            record = msgspec.structs.replace(record, data=encoded, size=len(cleaned))
        out.append(msgspec.json.encode(record) + b"\n")
    raw = path.read_bytes()
    if touched or _replace(raw, patterns) != raw:  # a torn record holding it is dropped too
        atomic_write(path, b"".join(out), home)
        return True
    return False


def truncate_wal(home: Home) -> bool:
    """Checkpoint ``memory.db`` and truncate its write-ahead log (old pages leave the disk).

    Retried while a reader holds the log; False when it never let go.
    """
    path = home.db
    if not path.exists():
        return True
    for _ in range(_CHECKPOINT_TRIES):
        with store.opened(path) as db:
            busy = db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        if not busy:
            return True
        time.sleep(0.05)
    return False


def _files(home: Home) -> Iterator[Path]:
    """Every file of the home but the log (rewritten by the redaction itself), the views
    (rebuilt; ``legacy_vectors``: where earlier versions kept the packed vectors), the
    quarantine (scrubbed record by record) and the journal of what is being removed (it
    goes once all else is clean)."""
    skip_dirs = {home.events, home.index, home.legacy_vectors}
    skip = {home.db.with_name(home.db.name + side) for side in ("", *store.SIDE_FILES)}
    skip |= {home.quarantine, home.redaction_journal}
    aside = home.db_aside("").name
    for folder, dirs, names in os.walk(home):
        here = Path(folder)
        dirs[:] = [d for d in dirs if here / d not in skip_dirs]
        for name in names:
            path = here / name
            if path in skip or name.startswith(aside) or path.is_symlink():
                continue  # the log, the views, a database being rebuilt
            yield path


def _replace(data: bytes, patterns: list[re.Pattern[bytes]]) -> bytes:
    for pattern in patterns:
        data = pattern.sub(REDACTED.encode(), data)
    return data


def finish_redaction(home: Home, rebuild_views: Callable[[], object]) -> list[str]:
    """Finish the redaction a run left unfinished (its journal, ``redaction_journal``):
    the log rewritten if its rewrite never committed, the text out of every other file
    of the home, the views rebuilt (``rebuild_views``), the write-ahead log truncated;
    then the journal goes.  A line saying so (none when there was nothing to finish)."""
    from memlog.eventlog.expunge import NothingFound, Target, expunge
    from memlog.eventlog.log import EventLog

    pending = redaction_journal.pending(home)
    if pending is None:
        return []
    texts = [*pending.texts, *([pending.needle] if pending.needle else [])]
    if pending.entry_id is not None or pending.needle is not None:
        try:  # a rewrite that never committed is made now; one that did finds nothing
            target = Target(pending.entry_id, pending.needle)
            done = expunge(EventLog(home, command="redact"), target, pending.reason)
            texts += done.removed
        except NothingFound:
            pass
    scrub_home(home, texts)
    rebuild_views()
    scrub_home(home, texts)  # the backups the rebuild made of hand-edited files
    truncate_wal(home)
    redaction_journal.done(home)
    return ["a redaction a run left unfinished was finished: the text is out of every file"]
