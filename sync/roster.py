"""The roster: who may write to the remote, and each device's own signed word on it.

The roster is one file (``roster.sealed``, sealed under the team key) on a
branch of its own, ``memlog-roster``, pushed with ``memlog`` in one atomic
push.  It holds, per device:

* its public signing key, with the device's own signature over it (put there
  at the device's first sync of this format: its join, or its upgrade);
* its latest *head*, signed by the device: the last sequence it offered and
  the chain digest there, the generation of its lines and where each one
  starts, the first sequence it signed, how far it had received every other
  device, the redactions it asks of other devices and its answers to those
  asked of it;
* its eviction, if a machine evicted it (signed by that machine): its lines
  after the sequence named are refused;

and, for the team: the last sequence of each device's old, unsigned lines
when the remote took the second format (``legacy``), and who may confirm a
redaction of another device's text (``policy``).

Every machine pins the roster on first sight (``Pins``, kept with the sync
state): a device's key never changes, an eviction never goes away, a head
never goes back.  A remote whose roster disagrees is named and outvoted by
the pins, which the next push carries back.  The heads being on their own
branch, a remote whose ``memlog`` branch was forced back to an older commit
holds lines older than its heads say, which a joining machine is told.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from typing import Literal, NamedTuple

import msgspec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from memlog.sync import signing
from memlog.sync.sealed import Key, Unopenable
from memlog.sync.signing import DeviceKey

ROSTER_FORMAT = "memlog-roster-1"
BRANCH = "memlog-roster"
FILE = "roster.sealed"
#: a roster larger than this is refused before it is opened
MAX_BYTES = 32 << 20
#: a head larger than this keeps its device's newest redaction requests for later
MAX_HEAD_BYTES = 1 << 20
Redactions = Literal["owner", "any"]


class Member(msgspec.Struct, frozen=True, omit_defaults=True):
    """A device of the roster: its public signing key, and its signature over it."""

    key: str
    added: str = ""
    proof: str = ""


class Request(msgspec.Struct, frozen=True, omit_defaults=True):
    """A device asks the device ``target`` to take text out of its line ``seq`` (event
    ``event``): ``line`` is that line as the asker has it now, text replaced by
    ``[REDACTED]``; never the text itself."""

    id: str
    target: str
    seq: int
    event: str
    line: str
    reason: str = ""
    at: str = ""


class Head(msgspec.Struct, frozen=True, omit_defaults=True):
    """A device's signed word on the remote (``n``: when it was signed, in microseconds,
    always more than its previous head's)."""

    device: str
    n: int
    seq: int = 0
    #: the chain digest after line ``seq`` (hex)
    tip: str = ""
    gen: int = 0
    #: (generation, first sequence it signed again): where each rewrite started
    rewrites: tuple[tuple[int, int], ...] = ()
    #: the device's first signed sequence (0: none yet)
    first: int = 0
    seen: dict[str, int] = msgspec.field(default_factory=dict)
    requests: tuple[Request, ...] = ()
    #: request id → "done" or "declined" (requests other devices made of this one)
    answers: dict[str, str] = msgspec.field(default_factory=dict)
    #: device → the fingerprint of the signing key this device pinned for it (a roster
    #: that gives one of them another key was changed by a holder of the team key)
    keys: dict[str, str] = msgspec.field(default_factory=dict)
    at: str = ""

    def required(self, seq: int) -> int:
        """The generation a line at ``seq`` must at least have (an older one was signed
        before a rewrite that replaced it)."""
        return max((gen for gen, start in self.rewrites if start <= seq), default=0)

    def same_as(self, other: Head) -> bool:
        """Whether ``other`` says the same (its time aside)."""
        return msgspec.structs.replace(other, n=self.n, at=self.at) == self


class Eviction(msgspec.Struct, frozen=True):
    device: str
    by: str
    at: str
    #: the last sequence of the evicted device taken; later ones are refused
    after: int


class Policy(msgspec.Struct, frozen=True):
    """Who confirms a redaction of another device's text: its owner only, or any machine
    (every machine applies a request from a machine of the roster as it arrives)."""

    redactions: Redactions
    by: str
    at: str
    n: int


class Roster(msgspec.Struct, omit_defaults=True):
    format: str = ROSTER_FORMAT
    devices: dict[str, Member] = msgspec.field(default_factory=dict)
    #: device → its newest head (a signed statement)
    heads: dict[str, str] = msgspec.field(default_factory=dict)
    #: device → the last sequence of its unsigned lines (None: not set yet)
    legacy: dict[str, int] | None = None
    #: device → its eviction (a statement signed by the evicting device)
    evicted: dict[str, str] = msgspec.field(default_factory=dict)
    #: the redaction policy (a statement signed by the device that set it; "": owner)
    policy: str = ""


# -- statements --------------------------------------------------------------------------


def member(key: DeviceKey, added: str) -> Member:
    proof = signing.sign_statement(key, "member", _member_body(key.device, key.public_text()))
    return Member(key.public_text(), added, proof)


def _member_body(device: str, public: str) -> bytes:
    return f"{device}\0{public}".encode()


def proven(device: str, entry: Member) -> Ed25519PublicKey | None:
    """The member's public key when its own signature over it holds."""
    public = signing.parse_public(entry.key)
    if public is None:
        return None
    body = signing.open_statement(public, "member", entry.proof)
    return public if body == _member_body(device, entry.key) else None


def fingerprint(public: str) -> str:
    """A short digest of a public key as the roster writes it."""
    return hashlib.sha256(public.encode()).hexdigest()[:16]


def sign_head(key: DeviceKey, head: Head) -> str:
    return signing.sign_statement(key, "head", msgspec.json.encode(head))


def open_head(public: Ed25519PublicKey, device: str, text: str) -> Head | None:
    body = signing.open_statement(public, "head", text)
    if body is None:
        return None
    try:
        head = msgspec.json.decode(body, type=Head)
    except msgspec.DecodeError:
        return None
    return head if head.device == device else None


def sign_eviction(key: DeviceKey, eviction: Eviction) -> str:
    return signing.sign_statement(key, "eviction", msgspec.json.encode(eviction))


def sign_policy(key: DeviceKey, policy: Policy) -> str:
    return signing.sign_statement(key, "policy", msgspec.json.encode(policy))


def _opened(
    keys: dict[str, Ed25519PublicKey], kind: str, text: str, type_: type[Eviction] | type[Policy]
) -> Eviction | Policy | None:
    """A statement of another device (named by its ``by``) when that device's signature
    holds."""
    _, _, body = text.partition(".")
    try:
        claimed = msgspec.json.decode(base64.b64decode(body, validate=True), type=type_)
    except (binascii.Error, ValueError, msgspec.DecodeError):
        return None
    public = keys.get(claimed.by)
    if public is None or signing.open_statement(public, kind, text) is None:
        return None
    return claimed


# -- sealing -----------------------------------------------------------------------------


def seal(key: Key, roster: Roster) -> bytes:
    body = msgspec.json.encode(roster, order="sorted")
    return base64.b64encode(key.seal(body, [b"roster"])) + b"\n"


def open_roster(key: Key, data: bytes) -> Roster:
    """The roster sealed in ``data``; Unopenable naming what is wrong."""
    if len(data) > MAX_BYTES:
        raise Unopenable(f"{len(data) >> 20} MiB, longer than a roster may be")
    try:
        sealed = base64.b64decode(data.strip(), validate=True)
    except (binascii.Error, ValueError):
        raise Unopenable("not a sealed roster") from None
    body = key.open(sealed, [b"roster"])
    try:
        found = msgspec.json.decode(body, type=Roster)
    except msgspec.DecodeError as exc:
        raise Unopenable(f"not a roster ({str(exc)[:80]})") from None
    if found.format != ROSTER_FORMAT:
        raise Unopenable(f"a roster format this memlog does not know ({found.format[:40]!r})")
    return found


# -- what a machine trusts ---------------------------------------------------------------


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
            found = _opened(keys, "eviction", text, Eviction)
            if isinstance(found, Eviction) and found.device == device:
                self.evictions[device] = found
        found_policy = _opened(keys, "policy", roster.policy, Policy) if roster.policy else None
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
        if device not in evicted and isinstance(
            _opened(keys, "eviction", text, Eviction), Eviction
        ):
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
        if text and isinstance(policy := _opened(keys, "policy", text, Policy), Policy)
    ]
    return max(found)[1] if found else ""
