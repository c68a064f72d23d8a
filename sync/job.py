"""What one sync works with: its asks, and everything its exchange with the remote holds."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from memlog.eventlog.log import EventLog
from memlog.sync import local, team
from memlog.sync.repo import Git
from memlog.sync.roster import Roster
from memlog.sync.sealing import Sealer
from memlog.sync.signing import DeviceKey
from memlog.sync.state import Outcome, SyncState
from memlog.sync.trust import Trust


class Asks(NamedTuple):
    """What a sync is asked to change in the roster or of this device's lines."""

    #: a device to evict
    evict: str | None = None
    #: who confirms a redaction of another device's text ("owner" or "any")
    redactions: str | None = None
    #: requests of other devices this device's owner confirms, or declines ("all": every one)
    confirm: tuple[str, ...] = ()
    decline: tuple[str, ...] = ()


#: a sync asked for nothing beyond itself
NO_ASKS = Asks()


@dataclass
class Exchange:
    """Everything one exchange with the remote works with."""

    git: Git
    log: EventLog
    files: local.Files
    sealer: Sealer
    own: str
    url: str
    state: SyncState
    outcome: Outcome
    asks: Asks
    #: the roster as merged with the pins, and what it refused
    team: team.Taken = field(default_factory=lambda: team.take(Roster(), None))
    signer: DeviceKey | None = None
    offered: local.Offered | None = None

    @property
    def trust(self) -> Trust:
        return self.team.trust


def once(job: Exchange, lines: list[str]) -> list[str]:
    """The lines this machine has not told before (each is told at the sync that finds it)."""
    told = job.state.told
    fresh = [line for line in dict.fromkeys(lines) if line not in told]
    job.state.told = [*told, *fresh][-256:]
    return fresh
