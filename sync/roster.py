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
from typing import Literal

import msgspec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from memlog.sync import signing
from memlog.sync.sealed import Key, Unopenable, open_document
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


def opened(
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
    found = open_document(key, data, "roster", [b"roster"], Roster)
    if found.format != ROSTER_FORMAT:
        raise Unopenable(f"a roster format this memlog does not know ({found.format[:40]!r})")
    return found


# -- what a machine trusts ---------------------------------------------------------------
