"""Each device signs its own lines: its signing key, the chain of its lines, and signed
statements.

Beside the team key (``sealed``: it seals, and every machine holds it), each
device has an Ed25519 key of its own, made at its first sync and kept in the
home (``sync.device.key``, mode 0600, never sent); its public key goes on the
remote in the roster (``roster``).

A device's lines form a hash chain: the digest after a line covers the digest
before it, its generation, ``prev``, ``seq`` and its bytes (``chain_next``),
starting from a digest of the device's id.  A signed line carries the device's
signature over the digest after it, so one good signature vouches for every
line of the device up to it: nothing before it can be changed, dropped,
reordered or replayed from an old version without that signature failing.
The generation counts the device's rewrites of its own lines (a redaction):
a rewrite signs the lines from the first one it changed again under the next
generation, and the device's head names where each generation starts, so an
old line put back is older than its place allows and refused.

Old lines (the format's first version, unsigned) join the chain too: the
first signed line of a device vouches for every line before it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import struct

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from memlog.eventlog.events import MAX_SEQ
from memlog.files import atomic_write
from memlog.home import Home
from memlog.sync.repo import SyncError

KEY_PREFIX = "memlog-device-key-1"
#: the most sequence numbers a signed line may skip: a device whose own log lost lines it
#: never sent (a repair) signs the gap; nothing else skips
MAX_GAP = 1 << 20
_LINE = b"memlog-line-2\0"
_CHAIN = b"memlog-chain-1\0"
_STATEMENT = b"memlog-statement-1\0"


class DeviceKey:
    """This device's signing key."""

    def __init__(self, device: str, private: Ed25519PrivateKey) -> None:
        self.device = device
        self._private = private
        self.public = private.public_key()

    @classmethod
    def generate(cls, device: str) -> DeviceKey:
        return cls(device, Ed25519PrivateKey.generate())

    def public_text(self) -> str:
        return public_text(self.public)

    def sign(self, message: bytes) -> bytes:
        return self._private.sign(message)

    def text(self) -> str:
        raw = self._private.private_bytes_raw()
        return f"{KEY_PREFIX}.{self.device}.{_b64url(raw)}"


def public_text(key: Ed25519PublicKey) -> str:
    return base64.b64encode(key.public_bytes_raw()).decode("ascii")


def parse_public(text: str) -> Ed25519PublicKey | None:
    try:
        raw = base64.b64decode(text, validate=True)
        return Ed25519PublicKey.from_public_bytes(raw) if len(raw) == 32 else None
    except (binascii.Error, ValueError):
        return None


def stored(home: Home) -> DeviceKey | None:
    """The signing key kept in ``home`` (None when there is none, or it is unreadable)."""
    try:
        text = home.signing_key.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    parts = text.split(".")
    if len(parts) != 3 or parts[0] != KEY_PREFIX:
        return None
    try:
        raw = base64.urlsafe_b64decode(parts[2] + "==")
        return DeviceKey(parts[1], Ed25519PrivateKey.from_private_bytes(raw))
    except (binascii.Error, ValueError):
        return None


def for_device(home: Home, device: str) -> tuple[DeviceKey, bool]:
    """This device's signing key, made (and kept in the home) when the home holds none for
    ``device``; whether it was made now."""
    found = stored(home)
    if found is not None and found.device == device:
        return found, False
    made = DeviceKey.generate(device)
    try:
        atomic_write(home.signing_key, (made.text() + "\n").encode("ascii"), home)
        os.chmod(home.signing_key, 0o600)
    except OSError as exc:
        raise SyncError(f"cannot keep this device's signing key in {home.signing_key}: "
                        f"{exc.strerror}") from None  # fmt: skip
    return made, True


# -- the chain of a device's lines -------------------------------------------------------


def chain_start(device: str) -> bytes:
    """The digest before a device's first line."""
    return hashlib.sha256(_CHAIN + device.encode()).digest()


def chain_next(before: bytes, gen: int | None, prev: int, seq: int, body: bytes) -> bytes:
    """The digest after a line (``body``: the event line without its newline; ``gen``
    None: an old, unsigned line)."""
    if not (0 <= prev < seq <= MAX_SEQ):
        raise ValueError(f"sequence {seq} after {prev}")
    signed = 0 if gen is None else 1
    packed = struct.pack(">BIQQ", signed, gen or 0, prev, seq)
    return hashlib.sha256(before + packed + body).digest()


def line_message(device: str, gen: int, prev: int, seq: int, digest: bytes) -> bytes:
    """What a device signs for one line: the digest after it, where it stands, and its
    generation."""
    return _LINE + device.encode() + b"\0" + struct.pack(">IQQ", gen, prev, seq) + digest


def verifies(key: Ed25519PublicKey, signature: bytes, message: bytes) -> bool:
    try:
        key.verify(signature, message)
    except InvalidSignature:
        return False
    return True


# -- signed statements (heads, roster entries) -------------------------------------------


def statement_message(kind: str, body: bytes) -> bytes:
    return _STATEMENT + kind.encode() + b"\0" + body


def sign_statement(key: DeviceKey, kind: str, body: bytes) -> str:
    """``body`` signed, as ``<signature>.<body>`` (both base64)."""
    sig = key.sign(statement_message(kind, body))
    return f"{_b64(sig)}.{_b64(body)}"


def open_statement(public: Ed25519PublicKey, kind: str, text: str) -> bytes | None:
    """The body of a signed statement when ``public``'s signature over it holds, else None."""
    sig, _, body = text.partition(".")
    try:
        raw_sig, raw_body = (
            base64.b64decode(sig, validate=True),
            base64.b64decode(body, validate=True),
        )
    except (binascii.Error, ValueError):
        return None
    return raw_body if verifies(public, raw_sig, statement_message(kind, raw_body)) else None


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")
