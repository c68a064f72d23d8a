"""The remote's format: every event line sealed on its own with a key only the user's
machines hold (``memlog-sealed-1``).

The remote is a git repository whose branch ``memlog`` holds:

* ``memlog-sync.json``: the format's name and a check value of the key (the
  seal of nothing, so a machine given the wrong key says so before anything
  else);
* ``<device>/<first seq>.sealed``: one sealed segment per segment of a device,
  one line per event line: ``<seq> <prev> <sealed>``, where ``prev`` is the
  sequence of the device's line before it (0 for its first) and ``sealed``
  the base64 of the line sealed with AES-SIV (RFC 5297, a 512-bit key) under
  associated data binding the format, the device, the segment, ``seq`` and
  ``prev``;
* ``<device>/head``: that device's own sealed statement of the last sequence
  it offered, and how far it had received every other device.

AES-SIV is deterministic and misuse-resistant: it needs no nonce, so a line
rewritten in place by a redaction (same sequence, other text) repeats
nothing an attacker could use, and the same line always seals to the same
bytes, so a growing segment keeps its sealed prefix and git's deltas still
work.  Without the key nothing can be read, and no line can be made,
changed, moved to another device, segment or place, or dropped from the
middle of a device's lines (the next line names it as ``prev``) without
failing to open.  What the remote sees: device ids, how many events each
device has and roughly how long each one is, and when sync pushed.
"""

from __future__ import annotations

import base64
import binascii
import os
from typing import NamedTuple

import msgspec
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESSIV

from memlog.vocabulary import MAX_EVENT_BYTES

FORMAT = "memlog-sealed-1"
FORMAT_FILE = "memlog-sync.json"
HEAD_NAME = "head"
SUFFIX = ".sealed"
KEY_BYTES = 64
#: how a key is written (``memlog sync --print-key``): a prefix, then base64url
KEY_PREFIX = "memlog-key-1."
_AEAD_TAG = 16
#: a sealed line is never longer than this: ``<seq> <prev> `` and the base64 of the
#: largest event with its tag (anything longer is refused before it is opened)
MAX_SEALED_LINE = 2 * 21 + 4 * ((MAX_EVENT_BYTES + _AEAD_TAG + 2) // 3) + 1
_MAX_DIGITS = 19


class Unopenable(Exception):
    """A sealed line, head or format file that cannot be opened; the message says why."""


class Key:
    """The sync key: 64 random bytes, kept on the user's machines only."""

    def __init__(self, raw: bytes) -> None:
        if len(raw) != KEY_BYTES:
            raise ValueError("a sync key has 64 bytes")
        self._siv = AESSIV(raw)
        self._raw = raw

    @classmethod
    def generate(cls) -> Key:
        return cls(os.urandom(KEY_BYTES))

    @classmethod
    def parse(cls, text: str) -> Key | None:
        """The key written as ``text`` (spaces around it ignored), or None."""
        body = text.strip()
        if not body.startswith(KEY_PREFIX):
            return None
        try:
            raw = base64.urlsafe_b64decode(body[len(KEY_PREFIX) :] + "==")
        except (binascii.Error, ValueError):
            return None
        return cls(raw) if len(raw) == KEY_BYTES else None

    def text(self) -> str:
        return KEY_PREFIX + base64.urlsafe_b64encode(self._raw).decode("ascii").rstrip("=")

    def check(self) -> str:
        """A value that tells this key apart, and says nothing about it."""
        return _b64(self._siv.encrypt(b"", [FORMAT.encode(), b"key check"]))

    def seal(self, data: bytes, context: list[bytes]) -> bytes:
        return self._siv.encrypt(data, [FORMAT.encode(), *context])

    def open(self, sealed: bytes, context: list[bytes]) -> bytes:
        try:
            return self._siv.decrypt(sealed, [FORMAT.encode(), *context])
        except InvalidTag:
            raise Unopenable("fails authentication (forged, or sealed with another key)") from None


# -- lines and segments ------------------------------------------------------------------


class Opened(NamedTuple):
    seq: int
    prev: int
    line: bytes  # the event line as the log holds it, newline included


def seal_line(key: Key, device: str, segment: str, seq: int, prev: int, line: bytes) -> bytes:
    """``line`` (one event line of ``device``'s ``segment``, with its newline) sealed."""
    body = line[:-1] if line.endswith(b"\n") else line
    sealed = key.seal(body, _line_context(device, segment, seq, prev))
    return b"%d %d %s\n" % (seq, prev, _b64(sealed).encode("ascii"))


def open_line(key: Key, device: str, segment: str, raw: bytes) -> Opened:
    """The event line sealed in ``raw`` (one sealed line, newline excluded); Unopenable
    naming what is wrong."""
    if len(raw) > MAX_SEALED_LINE:
        raise Unopenable(f"{len(raw)} bytes, longer than an event of at most "
                         f"{MAX_EVENT_BYTES // 1024} KiB can seal to")  # fmt: skip
    parts = raw.split(b" ")
    if len(parts) != 3 or not all(_number(p) for p in parts[:2]):
        raise Unopenable("not a sealed line")
    seq, prev = int(parts[0]), int(parts[1])
    try:
        sealed = base64.b64decode(parts[2], validate=True)
    except (binascii.Error, ValueError):
        raise Unopenable("not a sealed line (bad base64)") from None
    body = key.open(sealed, _line_context(device, segment, seq, prev))
    return Opened(seq, prev, body + b"\n")


def sealed_seq(raw: bytes) -> int | None:
    """The sequence a sealed line says it holds (unauthenticated), or None."""
    head = raw.split(b" ", 1)[0]
    return int(head) if _number(head) else None


def _line_context(device: str, segment: str, seq: int, prev: int) -> list[bytes]:
    return [device.encode(), segment.encode(), b"%d" % seq, b"%d" % prev]


def _number(text: bytes) -> bool:
    return 0 < len(text) <= _MAX_DIGITS and text.isdigit() and text.isascii()


# -- heads -------------------------------------------------------------------------------


class Head(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A device's own word on the remote: the last sequence it offered, and the last of
    every other device it held then (a remote that drops those is caught by it)."""

    device: str
    seq: int
    seen: dict[str, int] = msgspec.field(default_factory=dict)


def seal_head(key: Key, head: Head) -> bytes:
    sealed = key.seal(msgspec.json.encode(head), [b"head", head.device.encode()])
    return _b64(sealed).encode("ascii") + b"\n"


def open_head(key: Key, device: str, data: bytes) -> Head:
    if len(data) > MAX_SEALED_LINE:
        raise Unopenable("longer than a head can be")
    try:
        sealed = base64.b64decode(data.strip(), validate=True)
    except (binascii.Error, ValueError):
        raise Unopenable("not a sealed head") from None
    body = key.open(sealed, [b"head", device.encode()])
    try:
        head = msgspec.json.decode(body, type=Head)
    except msgspec.DecodeError as exc:
        raise Unopenable(f"not a head ({exc})") from None
    if head.device != device:
        raise Unopenable(f"the head of {head.device} under {device}")
    return head


# -- the format file ---------------------------------------------------------------------


class FormatFile(msgspec.Struct, frozen=True):
    format: str
    cipher: str = ""
    key_check: str = ""


def format_file(key: Key) -> bytes:
    found = FormatFile(FORMAT, "AES-SIV (RFC 5297), 512-bit key, one seal per line", key.check())
    return msgspec.json.format(msgspec.json.encode(found), indent=2) + b"\n"


def read_format(data: bytes) -> FormatFile | None:
    """The format file's content, or None when it is not one."""
    try:
        return msgspec.json.decode(data[:4096], type=FormatFile)
    except msgspec.DecodeError:
        return None


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")
