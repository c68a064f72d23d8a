"""The journal of a redaction under way: what it removes, kept until every copy is gone.

``memlog redact`` rewrites the log, then rebuilds the views and takes the text
out of every other file of the home.  A redaction killed half way left the
text in the views or in a markdown backup, and nothing went back for it.  So
before its rewrite commits, the redaction writes this journal (what it
targets, why, and the texts it removes, in a file of the home only its user
can read, as the copies it hunts are); it is removed once the text is
nowhere in the home.  Every command that writes the views, and ``memlog
verify``, finishes a redaction whose journal they find before anything else
(``projections.scrub.finish_redaction``).
"""

from __future__ import annotations

import msgspec

from memlog.files import atomic_write
from memlog.home import Home


class Pending(msgspec.Struct, frozen=True):
    """A redaction under way: its target (the entry, the text given), its reason, and
    every text it removes (what the rules found, the labels cut from it)."""

    entry_id: str | None
    needle: str | None
    reason: str
    texts: tuple[str, ...] = ()


def begin(home: Home, pending: Pending) -> None:
    """Write the journal, synced, before the rewrite that removes the text commits."""
    atomic_write(home.redaction_journal, msgspec.json.encode(pending), home.root)


def pending(home: Home) -> Pending | None:
    """The redaction a run left unfinished (None when there is none)."""
    try:
        data = home.redaction_journal.read_bytes()
    except FileNotFoundError:
        return None
    except OSError:
        return Pending(None, None, "unreadable journal")
    try:
        return msgspec.json.decode(data, type=Pending)
    except (msgspec.DecodeError, UnicodeDecodeError):
        return Pending(None, None, "unreadable journal")


def done(home: Home) -> None:
    """The text is nowhere in the home: the journal goes."""
    home.redaction_journal.unlink(missing_ok=True)
