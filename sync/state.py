"""What sync remembers between runs, beside its repository (``sync.git/memlog-sync.json``).

Losing the file costs a re-read of the segments and reports of refused
versions again, and the pins: the roster as this machine first saw it (each
device's signing key, evictions, the newest heads), which then are taken
again from the remote on first sight.
"""

from __future__ import annotations

import msgspec

from memlog.files import atomic_write
from memlog.home import Home
from memlog.sync.roster import Roster


class Asking(msgspec.Struct, kw_only=True):
    """A redaction another device asks of one of this device's lines."""

    id: str
    by: str
    seq: int
    event: str
    #: the line as asked for (text replaced by ``[REDACTED]``)
    line: str
    #: whether the team's policy applies it without asking (``any``)
    applied_without_asking: bool = False


class Outcome(msgspec.Struct, kw_only=True):
    """What one sync did."""

    remote: str
    device: str
    #: flat segments moved into this device's directory (the first sync only)
    migrated: int = 0
    #: events of this device the remote did not have
    sent: int = 0
    #: events written here from the remote
    received: int = 0
    devices: int = 0
    #: versions from the remote that were refused (quarantined, never applied)
    refused: list[str] = msgspec.field(default_factory=list)
    #: what stayed on this machine, and why
    held: list[str] = msgspec.field(default_factory=list)
    #: lock files a killed git had left, removed
    swept: list[str] = msgspec.field(default_factory=list)
    #: anything else worth knowing (a fast clock elsewhere, a key made)
    notes: list[str] = msgspec.field(default_factory=list)
    #: redactions other devices ask of this one's lines, waiting for its owner
    asked: list[Asking] = msgspec.field(default_factory=list)
    #: whether this sync made the sync key (``--init`` on a remote without memlog data)
    key_made: bool = False
    views: str = ""
    #: how long bringing the views up to date took (seconds)
    views_seconds: float = 0.0
    finished: str = ""


class SyncState(msgspec.Struct, kw_only=True):
    #: segment path → [size, mtime_ns, inode, blob id] as last seen
    cache: dict[str, list[int | str]] = msgspec.field(default_factory=dict)
    #: blob ids of versions refused once (not reported again)
    refused: list[str] = msgspec.field(default_factory=list)
    #: sealed blob id → [plain blob id, plain size, lines, first prev, last seq]
    sealed: dict[str, list[int | str]] = msgspec.field(default_factory=dict)
    #: the highest head seen of every other device (a remote going back is told)
    heads: dict[str, int] = msgspec.field(default_factory=dict)
    #: the roster as this machine took it: keys, evictions and heads never go back
    pins: Roster = msgspec.field(default_factory=Roster)
    #: this device's answers to requests of other devices: id → "done" or "declined"
    answers: dict[str, str] = msgspec.field(default_factory=dict)
    #: requests this device's owner confirmed, to apply at the next sync
    confirmed: list[str] = msgspec.field(default_factory=list)
    #: the remote's roster commit as this machine last left it (merged into the pins)
    roster_commit: str = ""
    #: problems told once (a remote missing lines is told at the sync that finds it)
    told: list[str] = msgspec.field(default_factory=list)
    last: Outcome | None = None


def load_state(home: Home) -> SyncState:
    try:
        return msgspec.json.decode(home.sync_state.read_bytes(), type=SyncState)
    except (OSError, msgspec.DecodeError, UnicodeDecodeError):
        return SyncState()


def save_state(home: Home, state: SyncState) -> None:
    atomic_write(home.sync_state, msgspec.json.encode(state), home)
