"""The encoder's runtime weights, kept in the caller's cache directory between processes.

Building the runtime weights (``bert.build_weights``: dequantising the
int8 layers into fused, C-contiguous float32 matrices) takes 40-200 ms,
which every fresh process would pay before its first query.  So the first
process writes them to ``<cache_dir>/minilm-runtime-<digest>.safetensors``
(float32 tensors, ~43 MB; ``<digest>`` is the first 16 hex digits of the
source weights' sha256 and this module's format version) and later
processes map that file, which costs well under a millisecond; only the
pages a forward pass touches are read, from the page cache.

The file is trusted only while it is the file this module wrote: its
sha256 is written beside it (``.sha256``) and checked through the
verification stamp (``local._Stamp``: hashed again only when the file's
size, inode, mtime or ctime changed).  A missing, damaged or unwritable
cache only costs the time to build the weights again.
"""

from __future__ import annotations

import contextlib
import json
import os
import struct
from collections.abc import Callable
from pathlib import Path

import numpy as np

from memlog.embeddings.bert import Layer, Tensors, Weights, map_safetensors
from memlog.errors import ProviderUnavailable
from memlog.files import atomic_write

FORMAT = "1"
_FIELDS = ("qkv", "qkv_bias", "out", "out_bias", "up", "up_bias", "down", "down_bias")

Digest = Callable[[Path], str]


def cache_path(cache_dir: Path, source_sha256: str) -> Path:
    return cache_dir / f"minilm-runtime-{source_sha256[:16]}-v{FORMAT}.safetensors"


def cached_weights(
    cache_dir: Path | None,
    source_sha256: str,
    tensors: Tensors,
    build: Callable[[], Weights],
    digest: Digest,
) -> Weights:
    """The runtime weights: mapped from the cache when it holds them, else built (and kept)."""
    if cache_dir is None:
        return build()
    path = cache_path(cache_dir, source_sha256)
    found = _load(path, tensors, digest)
    if found is not None:
        return found
    weights = build()
    _store(path, weights, digest)
    return weights


def flatten(weights: Weights) -> dict[str, np.ndarray]:
    """Every float32 tensor of the runtime weights (the mapped word embeddings left out)."""
    found: dict[str, np.ndarray] = {
        "positions": weights.positions, "token_type": weights.token_type,
        "norm.weight": weights.norm[0], "norm.bias": weights.norm[1],
    }  # fmt: skip
    for n, layer in enumerate(weights.layers):
        for name in _FIELDS:
            found[f"{n}.{name}"] = getattr(layer, name)
        found[f"{n}.norm1.weight"], found[f"{n}.norm1.bias"] = layer.norm1
        found[f"{n}.norm2.weight"], found[f"{n}.norm2.bias"] = layer.norm2
    return found


def unflatten(flat: Tensors, tensors: Tensors) -> Weights:
    """Runtime weights from ``flatten``'s tensors and the source's word embeddings."""
    layers = []
    for n in range(sum(1 for name in flat if name.endswith(".qkv"))):
        parts = {name: flat[f"{n}.{name}"] for name in _FIELDS}
        norm1 = (flat[f"{n}.norm1.weight"], flat[f"{n}.norm1.bias"])
        norm2 = (flat[f"{n}.norm2.weight"], flat[f"{n}.norm2.bias"])
        layers.append(Layer(norm1=norm1, norm2=norm2, **parts))
    return Weights(
        words=tensors["embeddings.word_embeddings.weight"],
        word_scale=tensors.get("embeddings.word_embeddings.weight_scale"),
        positions=flat["positions"],
        token_type=flat["token_type"],
        norm=(flat["norm.weight"], flat["norm.bias"]),
        layers=layers,
    )


def _load(path: Path, tensors: Tensors, digest: Digest) -> Weights | None:
    try:
        expected = path.with_suffix(".sha256").read_text().strip()
        if not expected or digest(path) != expected:
            return None
        return unflatten(map_safetensors(path), tensors)
    except (OSError, ValueError, KeyError, TypeError, ProviderUnavailable):
        return None


def _store(path: Path, weights: Weights, digest: Digest) -> None:
    """Write the file and its digest (and stamp it, so the next process need not hash it);
    a cache that cannot be written only costs time."""
    data = encode(flatten(weights))
    with contextlib.suppress(OSError):
        atomic_write(path, data)
        atomic_write(path.with_suffix(".sha256"), digest(path).encode())


def encode(tensors: dict[str, np.ndarray]) -> bytes:
    """A safetensors file of float32 tensors, each starting 8-byte aligned."""
    header: dict[str, object] = {"__metadata__": {"format": FORMAT}}
    blobs, offset = [], 0
    for name in sorted(tensors):
        blob = np.ascontiguousarray(tensors[name], dtype="<f4").tobytes()
        header[name] = {
            "dtype": "F32",
            "shape": list(np.shape(tensors[name])),
            "data_offsets": [offset, offset + len(blob)],
        }
        blobs.append(blob)
        offset += len(blob)  # float32 blobs keep 4-byte alignment; numpy views need no more
    encoded = json.dumps(header, separators=(",", ":")).encode()
    encoded += b" " * (-(8 + len(encoded)) % 8)
    return struct.pack("<Q", len(encoded)) + encoded + b"".join(blobs)


def remove(cache_dir: Path, source_sha256: str) -> None:
    """Drop the cached weights (tests, and anyone who wants the space back)."""
    path = cache_path(cache_dir, source_sha256)
    for target in (path, path.with_suffix(".sha256")):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(target)
