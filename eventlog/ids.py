"""Time-ordered unique event ids (UUID version 7) and timestamps."""

from __future__ import annotations

import os
import time
import uuid
from datetime import UTC, datetime


def uuid7() -> str:
    """A UUIDv7 (RFC 9562): 48-bit Unix milliseconds then 74 random bits."""
    millis = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    value = (millis & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= (rand >> 68) << 64  # 12 bits rand_a
    value |= 0b10 << 62
    value |= rand & ((1 << 62) - 1)
    return str(uuid.UUID(int=value))


def utc_now() -> str:
    """The current UTC time, ISO 8601 with microseconds and a ``Z``."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
