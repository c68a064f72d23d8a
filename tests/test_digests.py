"""memlog's digests are hashlib's, bit for bit, without OpenSSL on the path."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import pytest

from memlog import digests


@pytest.mark.parametrize("data", [b"", b"abc", "é ✓".encode(), bytes(range(256)) * 513])
def test_the_same_digests_as_hashlib(data: bytes) -> None:
    assert digests.sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()
    for size in (8, 32, 64):
        ours = digests.blake2b(data, digest_size=size).digest()
        assert ours == hashlib.blake2b(data, digest_size=size).digest()


def test_openssl_is_not_loaded() -> None:
    code = "import sys, memlog.digests; print('_hashlib' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
