"""sha256 and blake2b, without loading OpenSSL.

``hashlib`` loads OpenSSL's bindings on import, a few milliseconds of every
session start, for digests Python also builds in: blake2b is the very same
object either way, and sha256 is CPython's own, ample for the short texts
memlog hashes (content ids, claims, file digests).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hashlib import blake2b, sha256
else:
    try:
        from _blake2 import blake2b
    except ImportError:  # a Python built without it
        from hashlib import blake2b
    try:
        from _sha256 import sha256  # CPython 3.11
    except ImportError:
        try:
            from _sha2 import sha256  # CPython 3.12 and later
        except ImportError:
            from hashlib import sha256

__all__ = ["blake2b", "sha256"]
