"""The remote's format: every event line sealed on its own with the team key, and (from
the format's second version, ``memlog-sealed-2``) signed by the device that wrote it.

The remote is a git repository whose branch ``memlog`` holds:

* ``memlog-sync.json``: the format's name and a check value of the team key (the
  seal of nothing, so a machine given the wrong key says so before anything
  else), and who last rotated the key;
* ``<device>/<first seq>.sealed``: one sealed segment per segment of a device,
  one line per event line: ``<seq> <prev> <sealed>``, where ``prev`` is the
  sequence of the device's line before it (0 for its first) and ``sealed``
  the base64 of the line sealed with AES-SIV (RFC 5297, a 512-bit key) under
  associated data binding the format, the device, the segment, ``seq`` and
  ``prev``.  A line of the second version seals, before the event line, what
  its device signed (``signing``): the generation of its lines, the Ed25519
  signature and, on a segment's first line (or one after an unsigned line),
  the chain digest of the device's lines before it.  A line of the first
  version (sealed under that version's name) carries no signature: it is an
  old line, taken as it was until its device's first signed line;
* ``<device>/head`` (first version only): that device's sealed statement of
  the last sequence it offered; the second version keeps signed heads in the
  roster (``roster``), on a branch of its own.

AES-SIV is deterministic and misuse-resistant: it needs no nonce, so a line
rewritten in place by a redaction (same sequence, other text) repeats
nothing an attacker could use, and the same line always seals to the same
bytes, so a growing segment keeps its sealed prefix and git's deltas still
work.  Without the team key nothing can be read, and no line can be made,
changed, moved to another device, segment or place, or dropped from the
middle of a device's lines (the next line names it as ``prev``) without
failing to open; without a device's signing key, not even a holder of the
team key can make a line that device's signature vouches for.
"""

from __future__ import annotations

import base64
import binascii
import os
from typing import NamedTuple, TypeVar

import msgspec
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESSIV

from memlog.vocabulary import MAX_EVENT_BYTES

_T = TypeVar("_T")

#: the format this memlog writes, and the first one (lines sealed, not signed), still read
FORMAT = "memlog-sealed-2"
FORMAT_V1 = "memlog-sealed-1"
FORMATS = (FORMAT_V1, FORMAT)
FORMAT_FILE = "memlog-sync.json"
HEAD_NAME = "head"
SUFFIX = ".sealed"
KEY_BYTES = 64
#: how a key is written (``memlog sync --print-key``): a prefix, then base64url
KEY_PREFIX = "memlog-key-1."
_AEAD_TAG = 16
#: what a signed line seals before its event line: flags, generation, signature, and
#: (flag 1) the chain digest before it
_SIGNED_HEAD = 1 + 4 + 64
_LINK = 32
_HAS_LINK = 1
#: a sealed line is never longer than this: ``<seq> <prev> `` and the base64 of the
#: largest event with its tag and signature (anything longer is refused before it is opened)
MAX_SEALED_LINE = 2 * 21 + 4 * ((MAX_EVENT_BYTES + _AEAD_TAG + _SIGNED_HEAD + _LINK + 2) // 3) + 1
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
        """A value that tells this key apart, and says nothing about it (the same in every
        version of the format)."""
        return _b64(self._siv.encrypt(b"", [FORMAT_V1.encode(), b"key check"]))

    def seal(self, data: bytes, context: list[bytes], version: str = FORMAT) -> bytes:
        return self._siv.encrypt(data, [version.encode(), *context])

    def open(self, sealed: bytes, context: list[bytes], version: str = FORMAT) -> bytes:
        try:
            return self._siv.decrypt(sealed, [version.encode(), *context])
        except InvalidTag:
            raise Unopenable("fails authentication (forged, or sealed with another key)") from None

    def opens(self, sealed: bytes, context: list[bytes], version: str) -> bytes | None:
        """``open``, None instead of Unopenable."""
        try:
            return self._siv.decrypt(sealed, [version.encode(), *context])
        except InvalidTag:
            return None


# -- lines and segments ------------------------------------------------------------------


class Signature(NamedTuple):
    """What a signed line carries beside its event line (``signing``)."""

    gen: int
    sig: bytes
    #: the chain digest of the device's lines before this one (b"": not carried)
    link: bytes = b""


class Opened(NamedTuple):
    seq: int
    prev: int
    line: bytes  # the event line as the log holds it, newline included
    #: None: a line of the first version, unsigned
    signature: Signature | None = None


def seal_line(
    key: Key, device: str, segment: str, seq: int, prev: int, line: bytes,
    signature: Signature | None = None,
) -> bytes:  # fmt: skip
    """``line`` (one event line of ``device``'s ``segment``, with its newline) sealed; with
    ``signature``, as a signed line of this version, else as an old, unsigned one."""
    body = line[:-1] if line.endswith(b"\n") else line
    context = _line_context(device, segment, seq, prev)
    if signature is None:
        sealed = key.seal(body, context, FORMAT_V1)
    else:
        flags = _HAS_LINK if signature.link else 0
        head = bytes([flags]) + signature.gen.to_bytes(4, "big") + signature.sig
        sealed = key.seal(head + signature.link + body, context)
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
    context = _line_context(device, segment, seq, prev)
    plain = key.opens(sealed, context, FORMAT)
    if plain is None:
        return Opened(seq, prev, key.open(sealed, context, FORMAT_V1) + b"\n")
    if len(plain) < _SIGNED_HEAD or plain[0] not in (0, _HAS_LINK):
        raise Unopenable("not a signed line")
    at = _SIGNED_HEAD + (_LINK if plain[0] == _HAS_LINK else 0)
    link = plain[_SIGNED_HEAD:at]
    signature = Signature(int.from_bytes(plain[1:5], "big"), plain[5:_SIGNED_HEAD], link)
    return Opened(seq, prev, plain[at:] + b"\n", signature)


def reseal(old: Key, new: Key, device: str, segment: str, data: bytes) -> bytes:
    """A sealed segment sealed again with the key ``new`` (a new team key): each line as
    it was (what its device signed stays inside), a line ``old`` does not open left out."""
    out = []
    for raw in data.split(b"\n"):
        parts = raw.split(b" ")
        if len(parts) != 3 or not all(_number(p) for p in parts[:2]):
            continue
        context = _line_context(device, segment, int(parts[0]), int(parts[1]))
        try:
            sealed = base64.b64decode(parts[2], validate=True)
        except (binascii.Error, ValueError):
            continue
        for version in (FORMAT, FORMAT_V1):
            plain = old.opens(sealed, context, version)
            if plain is not None:
                again = new.seal(plain, context, version)
                out.append(b"%s %s %s\n" % (parts[0], parts[1], _b64(again).encode("ascii")))
                break
    return b"".join(out)


def reseal_head(old: Key, new: Key, device: str, data: bytes) -> bytes:
    """A head of the format's first version sealed again with ``new``."""
    return seal_head(new, open_head(old, device, data))


def last_seq(data: bytes) -> int:
    """The sequence a sealed segment's last line says it holds (unauthenticated; 0: none)."""
    cut = data.rfind(b"\n", 0, len(data) - 1)
    return sealed_seq(data[cut + 1 :]) or 0


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
    """A device's own word on the remote in the format's first version (``<device>/head``,
    sealed, not signed): the last sequence it offered, and the last of every other device
    it held then (a remote that drops those is caught by it).  The second version keeps
    signed heads in the roster."""

    device: str
    seq: int
    seen: dict[str, int] = msgspec.field(default_factory=dict)


def seal_head(key: Key, head: Head) -> bytes:
    sealed = key.seal(msgspec.json.encode(head), [b"head", head.device.encode()], FORMAT_V1)
    return _b64(sealed).encode("ascii") + b"\n"


def open_document(
    key: Key, data: bytes, what: str, context: list[bytes], type_: type[_T], version: str = FORMAT
) -> _T:
    """A ``what`` (a head, the roster) sealed in ``data`` as one base64 line; Unopenable
    naming what is wrong.  Its size is checked by the caller, before anything is read."""
    try:
        sealed = base64.b64decode(data.strip(), validate=True)
    except (binascii.Error, ValueError):
        raise Unopenable(f"not a sealed {what}") from None
    body = key.open(sealed, context, version)
    try:
        return msgspec.json.decode(body, type=type_)
    except msgspec.DecodeError as exc:
        raise Unopenable(f"not a {what} ({str(exc)[:80]})") from None


def open_head(key: Key, device: str, data: bytes) -> Head:
    if len(data) > MAX_SEALED_LINE:
        raise Unopenable("longer than a head can be")
    head = open_document(key, data, "head", [b"head", device.encode()], Head, FORMAT_V1)
    if head.device != device:
        raise Unopenable(f"the head of {head.device} under {device}")
    return head


# -- the format file ---------------------------------------------------------------------


class FormatFile(msgspec.Struct, frozen=True, omit_defaults=True):
    format: str
    cipher: str = ""
    signatures: str = ""
    key_check: str = ""
    #: the device that last made a new team key (``memlog sync --rotate-key``), and when
    rotated_by: str = ""
    rotated_at: str = ""


CIPHER = "AES-SIV (RFC 5297), 512-bit key, one seal per line"
SIGNATURES = (
    "Ed25519, one key per device (public keys in the roster, branch memlog-roster), over "
    "each line's chain digest"
)


def format_file(key: Key, rotated_by: str = "", rotated_at: str = "") -> bytes:
    found = FormatFile(FORMAT, CIPHER, SIGNATURES, key.check(), rotated_by, rotated_at)
    return msgspec.json.format(msgspec.json.encode(found), indent=2) + b"\n"


def read_format(data: bytes) -> FormatFile | None:
    """The format file's content, or None when it is not one."""
    try:
        return msgspec.json.decode(data[:4096], type=FormatFile)
    except msgspec.DecodeError:
        return None


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")
