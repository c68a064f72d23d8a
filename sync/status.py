"""``memlog sync --status``: what sync knows without asking the remote."""

from __future__ import annotations

import msgspec

from memlog.eventlog import devices
from memlog.eventlog import segments as seg
from memlog.home import Home
from memlog.sync import keys, team
from memlog.sync.local import last_seq
from memlog.sync.repo import LOCAL_REF, REMOTE_REF, Git, set_up
from memlog.sync.roster import fingerprint
from memlog.sync.sealing import Sealer
from memlog.sync.state import Outcome, load_state


class DeviceStatus(msgspec.Struct):
    device: str
    segments: int
    last_seq: int
    this_home: bool


class Status(msgspec.Struct, kw_only=True):
    set_up: bool
    remote: str = ""
    device: str = ""
    devices: list[DeviceStatus] = msgspec.field(default_factory=list)
    #: events of this device the remote did not have when last seen
    unsent: int = 0
    #: versions from the remote refused so far (kept in the quarantine file)
    refused: int = 0
    #: set up by an earlier memlog that sent plain text (no key): ``--init`` again
    plain: bool = False
    #: the team's roster as pinned here: each device and its signing key's fingerprint
    roster: dict[str, str] = msgspec.field(default_factory=dict)
    #: devices evicted from the team (their later lines are refused)
    evicted: list[str] = msgspec.field(default_factory=list)
    #: who confirms a redaction of another device's text: "owner" or "any"
    redactions: str = "owner"
    last: Outcome | None = None


def status(home: Home) -> Status:
    if not set_up(home):
        return Status(set_up=False)
    own = devices.known_device_id(home) or devices.device_id(home)
    git = Git(home, own)
    state = load_state(git.home)
    found = Status(set_up=True, remote=git.remote_url(), device=own, last=state.last)
    found.refused = len(state.refused)
    trust = team.take(state.pins, None, own).trust
    found.roster = {d: fingerprint(m.key) for d, m in sorted(state.pins.devices.items())}
    found.evicted, found.redactions = sorted(trust.evictions), trust.redactions
    for name in devices.device_dirs(home):
        paths = seg.list_segments(home.device(name))
        found.devices.append(DeviceStatus(name, len(paths), last_seq(paths), name == own))
    key = keys.stored(home)
    if key is not None:
        found.unsent = _unsent(Sealer(key, git, state.sealed), home, own)
    elif git.ref(LOCAL_REF) is not None:  # else nothing was ever synced from here
        found.plain = True
    else:
        return Status(set_up=False)
    return found


def _unsent(sealer: Sealer, home: Home, own: str) -> int:
    """Lines of this device's segments past what the remote held when last seen."""
    remote = sealer.git.tree(sealer.git.ref(REMOTE_REF))
    held = sealer.count_lines({p: e for p, e in remote.items() if p.startswith(own + "/")})
    here = sum(path.read_bytes().count(b"\n") for path in seg.list_segments(home.device(own)))
    return max(0, here - held)
