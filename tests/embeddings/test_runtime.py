"""The runtime weights kept between processes: equal to building them, and trusted only
while they are the bytes that were written."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from memlog.embeddings import local, runtime
from memlog.embeddings.local import BUNDLED_DIR, BUNDLED_SHA256, LocalProvider

TEXT = "SQLite WAL mode lets readers proceed while one writer appends."
SOURCE = BUNDLED_SHA256["model.int8.safetensors"]


def fresh_vector(cache: Path) -> np.ndarray:
    local._open_verified.cache_clear()  # as a new process would
    return LocalProvider(BUNDLED_DIR, cache_dir=cache).embed(TEXT)


def test_cached_weights_give_the_same_vectors(tmp_path: Path) -> None:
    built = fresh_vector(tmp_path)  # builds and keeps them
    path = runtime.cache_path(tmp_path, SOURCE)
    assert path.is_file() and path.with_suffix(".sha256").is_file()
    mapped = fresh_vector(tmp_path)  # maps them
    assert np.array_equal(built, mapped)
    assert np.array_equal(built, LocalProvider(BUNDLED_DIR, cache_dir=None).embed(TEXT))


def test_a_changed_cache_is_not_trusted(tmp_path: Path) -> None:
    expected = fresh_vector(tmp_path)
    path = runtime.cache_path(tmp_path, SOURCE)
    data = bytearray(path.read_bytes())
    data[-4:] = b"\x00\x00\x80\x7f"  # one weight becomes infinity
    path.write_bytes(bytes(data))
    assert np.array_equal(fresh_vector(tmp_path), expected)  # rebuilt, not read


def test_an_unwritable_cache_only_costs_time(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("a file where the cache directory should be")
    assert fresh_vector(blocked).shape == (384,)
