"""What an attacker builds, built here from the published formats alone (hashlib, json,
cryptography), never with memlog's own encoders: a test of a check must not share the
code it checks."""

from __future__ import annotations

import base64
import hashlib
import json
import struct
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.ciphers.aead import AESSIV

FORMAT = b"memlog-sealed-1"
KEY_PREFIX = "memlog-key-1."


def plain_line(fields: dict[str, Any]) -> bytes:
    """One log line: compact JSON, then ``,"sum":"<blake2b-64 of what precedes>"}``."""
    body = json.dumps(fields, separators=(",", ":"), ensure_ascii=False).encode()[:-1]
    return raw_line(body)


def raw_line(body: bytes) -> bytes:
    """``body`` (a JSON object without its closing brace, any bytes) with a good checksum."""
    digest = hashlib.blake2b(body, digest_size=8).hexdigest().encode()
    return body + b',"sum":"' + digest + b'"}\n'


def event(kind: str, seq: int, ts: str = "2026-05-01T09:00:00.000000Z", **payload: Any) -> bytes:
    fields = {"type": kind, "seq": seq, "id": f"forged-{seq}", "ts": ts, **payload}
    return plain_line(fields)


def last_line(path: Path) -> dict[str, Any]:
    """The last line of a segment, as plain JSON (its checksum left in)."""
    found: dict[str, Any] = json.loads(path.read_bytes().splitlines()[-1])
    return found


def key_bytes(text: str) -> bytes:
    assert text.startswith(KEY_PREFIX), text
    return base64.urlsafe_b64decode(text[len(KEY_PREFIX) :] + "==")


def seal(key: bytes, device: str, segment: str, seq: int, prev: int, line: bytes) -> bytes:
    """A sealed line as the format says: ``<seq> <prev> <base64 AES-SIV>``."""
    context = [FORMAT, device.encode(), segment.encode(), b"%d" % seq, b"%d" % prev]
    sealed = AESSIV(key).encrypt(line.rstrip(b"\n"), context)
    return b"%d %d %s\n" % (seq, prev, base64.b64encode(sealed))


def unseal(key: bytes, device: str, segment: str, raw: bytes) -> bytes:
    """The event line of a sealed line of either format (what it signed left out)."""
    found: bytes = opened(key, device, segment, raw)["body"]
    return found


# -- the second format: signed lines, the roster -----------------------------------------

FORMAT_2 = b"memlog-sealed-2"
_CHAIN = b"memlog-chain-1\0"
_LINE = b"memlog-line-2\0"
_STATEMENT = b"memlog-statement-1\0"


def opened(key: bytes, device: str, segment: str, raw: bytes) -> dict[str, Any]:
    """A sealed line of either format, opened: ``seq``, ``prev``, ``body`` and, for a signed
    line (the second format: flags, generation, signature, the digest before it when
    flag 1 says so, then the event line), ``gen``, ``sig``, ``link``."""
    seq, prev, body = raw.rstrip(b"\n").split(b" ")
    sealed = base64.b64decode(body)
    context = [device.encode(), segment.encode(), seq, prev]
    found: dict[str, Any] = {"seq": int(seq), "prev": int(prev)}
    try:
        plain = AESSIV(key).decrypt(sealed, [FORMAT_2, *context])
    except InvalidTag:
        found["body"] = AESSIV(key).decrypt(sealed, [FORMAT, *context])
        return found
    at = 69 + (32 if plain[0] == 1 else 0)
    found.update(gen=int.from_bytes(plain[1:5], "big"), sig=plain[5:69], link=plain[69:at])
    found["body"] = plain[at:]
    return found


def seal_signed(
    key: bytes, device: str, segment: str, seq: int, prev: int, line: bytes, gen: int,
    sig: bytes, link: bytes = b"",
) -> bytes:  # fmt: skip
    """A signed line as the second format says."""
    head = bytes([1 if link else 0]) + gen.to_bytes(4, "big") + sig + link
    context = [FORMAT_2, device.encode(), segment.encode(), b"%d" % seq, b"%d" % prev]
    sealed = AESSIV(key).encrypt(head + line.rstrip(b"\n"), context)
    return b"%d %d %s\n" % (seq, prev, base64.b64encode(sealed))


def chain_start(device: str) -> bytes:
    return hashlib.sha256(_CHAIN + device.encode()).digest()


def chain_next(before: bytes, gen: int | None, prev: int, seq: int, body: bytes) -> bytes:
    packed = struct.pack(">BIQQ", 0 if gen is None else 1, gen or 0, prev, seq)
    return hashlib.sha256(before + packed + body.rstrip(b"\n")).digest()


def line_message(device: str, gen: int, prev: int, seq: int, digest: bytes) -> bytes:
    return _LINE + device.encode() + b"\0" + struct.pack(">IQQ", gen, prev, seq) + digest


def sign(private: Ed25519PrivateKey, message: bytes) -> bytes:
    return private.sign(message)


def statement(private: Ed25519PrivateKey, kind: str, body: bytes) -> str:
    sig = private.sign(_STATEMENT + kind.encode() + b"\0" + body)
    return f"{base64.b64encode(sig).decode()}.{base64.b64encode(body).decode()}"


def statement_body(text: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(base64.b64decode(text.split(".", 1)[1]))
    return found


def open_roster(key: bytes, data: bytes) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(
        AESSIV(key).decrypt(base64.b64decode(data), [FORMAT_2, b"roster"])
    )
    return found


def seal_roster(key: bytes, roster: dict[str, Any]) -> bytes:
    body = json.dumps(roster, separators=(",", ":"), sort_keys=True).encode()
    return base64.b64encode(AESSIV(key).encrypt(body, [FORMAT_2, b"roster"])) + b"\n"


def public_text(private: Ed25519PrivateKey) -> str:
    return base64.b64encode(private.public_key().public_bytes_raw()).decode()
