"""What a machine trusts of the roster: its pins and the remote's roster merged.

Every machine pins the roster on first sight (``state.SyncState.pins``): a
device's key never changes, an eviction never goes away, a head never goes
back.  ``merge`` joins the remote's roster into the pins; ``Trust`` is what a
sync then holds of each device (its key, its newest head, its eviction, the
last sequence of its old lines, and whether another device's head disputes
its key).  A pinned key the other devices' heads do not name, where the
remote gives the one they do, is taken from the remote: the machine pinned a
key a holder of the team key had put there before it joined.
"""

from __future__ import annotations

from typing import NamedTuple

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from memlog.sync import signing
from memlog.sync.roster import (
    ROSTER_FORMAT,
    Eviction,
    Head,
    Member,
    Policy,
    Redactions,
    Roster,
    fingerprint,
    open_head,
    opened,
    proven,
)


class Device(NamedTuple):
    """What this machine trusts of one device of the roster."""

    name: str
    key: Ed25519PublicKey
    head: Head | None
    #: the last sequence of its unsigned lines the remote had when it took this format
    legacy: int
    #: the last sequence taken before it was evicted (None: not evicted)
    evicted: int | None
    #: why its lines are refused whatever they are ("": they are not)
    disputed: str = ""

    @property
    def first(self) -> int:
        """Its first signed sequence: every line from there on must be signed."""
        if self.head is not None and self.head.first:
            return self.head.first
        return self.legacy + 1

    def required(self, seq: int) -> int:
        return self.head.required(seq) if self.head is not None else 0


class Trust:
    """The roster as this machine takes it (pins and the remote's roster merged)."""

    def __init__(self, roster: Roster, keys: dict[str, Ed25519PublicKey], own: str = "") -> None:
        self.roster = roster
        self.own = own
        self.keys = keys
        self.heads: dict[str, Head] = {}
        for device, text in roster.heads.items():
            head = open_head(keys[device], device, text) if device in keys else None
            if head is not None:
                self.heads[device] = head
        self.evictions: dict[str, Eviction] = {}
        for device, text in roster.evicted.items():
            found = opened(keys, "eviction", text, Eviction)
            if isinstance(found, Eviction) and found.device == device:
                self.evictions[device] = found
        found_policy = opened(keys, "policy", roster.policy, Policy) if roster.policy else None
        self.policy = found_policy if isinstance(found_policy, Policy) else None
        self.disputed = self._disputes()

    def _disputes(self) -> dict[str, str]:
        """Devices whose key in the roster is not the one another device's head names: a
        holder of the team key changed the roster (a machine that pinned the key keeps it;
        one that did not takes none of that device's lines)."""
        found: dict[str, str] = {}
        for named_by, head in sorted(self.heads.items()):
            if named_by in self.evictions or named_by == self.own:
                continue  # (this device's own head names what it pinned: no witness)
            for device, print_ in sorted(head.keys.items()):
                member = self.roster.devices.get(device)
                if member is not None and fingerprint(member.key) != print_:
                    found.setdefault(device, f"device {device}'s signing key in the roster is "
                                     f"not the one device {named_by}'s head names (the roster "
                                     "was changed); its lines wait")  # fmt: skip
        return found

    @property
    def redactions(self) -> Redactions:
        return self.policy.redactions if self.policy is not None else "owner"

    def of(self, device: str) -> Device | None:
        key = self.keys.get(device)
        if key is None:
            return None
        eviction = self.evictions.get(device)
        legacy = (self.roster.legacy or {}).get(device, 0)
        return Device(device, key, self.heads.get(device), legacy,
                      eviction.after if eviction is not None else None,
                      self.disputed.get(device, ""))  # fmt: skip

    def unsigned(self, device: str, seq: int) -> str:
        """ "" when an unsigned line of ``device`` at ``seq`` may be taken, else why not."""
        found = self.of(device)
        if found is not None:
            if seq >= found.first:
                return f"unsigned, yet device {device} signs its lines from seq {found.first} on"
            return ""
        legacy = self.roster.legacy
        if legacy is None or seq <= legacy.get(device, 0):
            return ""
        if device in legacy:
            return (f"unsigned, past the last old line of device {device} (seq "
                    f"{legacy[device]}), and the roster holds no key of it")  # fmt: skip
        return f"unsigned, from device {device}, which the roster does not list"


def empty_trust() -> Trust:
    return Trust(Roster(), {})


class Merged(NamedTuple):
    """Two rosters joined: the roster, the keys it holds that were proven, and what was
    refused of the remote's (one line each)."""

    roster: Roster
    keys: dict[str, Ed25519PublicKey]
    refused: list[str]
    notes: list[str]


def merge(pins: Roster, theirs: Roster | None, own: str = "") -> Merged:
    """The remote's roster joined into this machine's pins: a device's key as pinned, an
    eviction never undone, each device's newest head.  (``own``: this device, whose head
    is no witness of the keys it pinned itself.)"""
    theirs = theirs or Roster()
    refused: list[str] = []
    notes: list[str] = []
    devices = dict(pins.devices)
    keys = {d: k for d, m in devices.items() if (k := signing.parse_public(m.key)) is not None}
    other_key: list[str] = []
    for device, entry in sorted(theirs.devices.items()):
        known = devices.get(device)
        if known is not None:
            if known.key != entry.key:
                other_key.append(device)
            continue
        public = proven(device, entry)
        if public is None:
            refused.append(f"the roster on the remote lists device {device} without its "
                           "own signature over its key; left out")  # fmt: skip
            continue
        devices[device], keys[device] = entry, public
    heads, went_back = _newest_heads(pins, theirs, keys)
    refused += went_back
    switched = _named_keys(devices, keys, theirs, {d: h for d, h in heads.items() if d != own})
    notes += [f"device {d}'s signing key pinned here is not the one the other devices pinned; "
              "theirs is taken" for d in switched]  # fmt: skip
    if switched:
        heads, _ = _newest_heads(pins, theirs, keys)
    refused += [
        f"the roster on the remote gives device {d} another signing key than the one pinned "
        "here; the pinned one stands"
        for d in other_key
        if d not in switched
    ]
    legacy = pins.legacy if pins.legacy is not None else theirs.legacy
    evicted = dict(pins.evicted)
    for device, text in theirs.evicted.items():
        if device not in evicted and isinstance(opened(keys, "eviction", text, Eviction), Eviction):
            evicted[device] = text
    for device in sorted(set(pins.evicted) - set(theirs.evicted)):
        if theirs.devices:
            notes.append(f"the roster on the remote had lost the eviction of device {device}; "
                         "it is put back")  # fmt: skip
    policy = _newest_policy(pins.policy, theirs.policy, keys)
    roster = Roster(ROSTER_FORMAT, devices, heads, legacy, evicted, policy)
    return Merged(roster, keys, refused, notes)


def _named_keys(
    devices: dict[str, Member], keys: dict[str, Ed25519PublicKey], theirs: Roster,
    heads: dict[str, str],
) -> list[str]:  # fmt: skip
    """A key pinned here that the other devices' heads do not name, where the remote's
    roster gives the one they do name: that one is taken (this machine pinned a key a
    holder of the team key had put in the roster before it joined); the devices."""
    said = []
    named: dict[str, set[str]] = {}
    for device, text in heads.items():
        head = open_head(keys[device], device, text) if device in keys else None
        for pinned, print_ in (head.keys if head is not None else {}).items():
            named.setdefault(pinned, set()).add(print_)
    for device, prints in sorted(named.items()):
        mine, offered = devices.get(device), theirs.devices.get(device)
        if mine is None or offered is None or len(prints) != 1 or fingerprint(mine.key) in prints:
            continue
        public = proven(device, offered)
        if public is not None and fingerprint(offered.key) in prints:
            devices[device], keys[device] = offered, public
            said.append(device)
    return said


def _newest_heads(
    pins: Roster, theirs: Roster, keys: dict[str, Ed25519PublicKey]
) -> tuple[dict[str, str], list[str]]:
    heads: dict[str, str] = {}
    refused: list[str] = []
    for device in sorted(set(pins.heads) | set(theirs.heads)):
        public = keys.get(device)
        if public is None:
            continue
        ours = _head_or_none(public, device, pins.heads.get(device))
        other = _head_or_none(public, device, theirs.heads.get(device))
        if device in theirs.heads and other is None:
            refused.append(f"device {device}: its head in the remote's roster is not signed by "
                           "it; left out")  # fmt: skip
        if ours is not None and other is not None and other.n < ours.n:
            refused.append(f"device {device}: its head in the remote's roster went back (to "
                           f"seq {other.seq} from seq {ours.seq}): an older copy of the roster; "
                           "the newer one stands")  # fmt: skip
        if other is not None and (ours is None or other.n > ours.n):
            heads[device] = theirs.heads[device]
        elif ours is not None:
            heads[device] = pins.heads[device]
    return heads, refused


def _head_or_none(public: Ed25519PublicKey, device: str, text: str | None) -> Head | None:
    return open_head(public, device, text) if text else None


def _newest_policy(ours: str, theirs: str, keys: dict[str, Ed25519PublicKey]) -> str:
    found = [
        (policy.n, text)
        for text in (ours, theirs)
        if text and isinstance(policy := opened(keys, "policy", text, Policy), Policy)
    ]
    return max(found)[1] if found else ""
