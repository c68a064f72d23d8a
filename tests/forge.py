"""What an attacker builds, built here from the published formats alone (hashlib, json,
cryptography), never with memlog's own encoders: a test of a check must not share the
code it checks."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

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
    seq, prev, body = raw.rstrip(b"\n").split(b" ")
    context = [FORMAT, device.encode(), segment.encode(), seq, prev]
    return AESSIV(key).decrypt(base64.b64decode(body), context)
