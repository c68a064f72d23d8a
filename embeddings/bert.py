"""The all-MiniLM-L6-v2 encoder (BERT, mean pooling) in plain numpy.

The weights are read from a memory-mapped safetensors file in any of three
forms: the upstream float32 file, float16, or the compact int8 file memlog
ships (``<name>`` int8 plus ``<name>_scale`` float32, one scale per row or
per group of a row, ``w ≈ q · scale``).  Loading builds the runtime weights
once: every dense layer becomes one C-contiguous float32 ``[in, out]``
matrix used as ``x @ W``, with query, key and value fused into one
``[384, 1152]`` matrix and the attention scale 1/√32 folded into the query
part (~25 MB of float32 for the six layers, a few milliseconds); the word
embeddings stay mapped in their stored type and only the rows a batch uses
are converted.

Texts are tokenised (``wordpiece``, truncated at the model's 256 tokens),
sorted by length and cut into groups padded to their longest row: a group
holds rows within 25% of its shortest and at most 4096 padded tokens, so
little work goes to padding, and a group without padding skips the mask.
Groups run on ``WORKERS`` Python threads with BLAS held at one thread each:
numpy releases the GIL in matrix products and ufuncs, and nothing
spin-waits as OpenBLAS's own threads do on a busy machine (a warm 64-token
query took 50-360 ms with two BLAS threads on two loaded cores, against
19-20 ms on one).  A single text runs on the calling thread alone.  The
softmax division is applied to ``p @ v`` (T × 32 per head) rather than to
the T × T probabilities.

Why numpy and not onnxruntime: ``import onnxruntime`` costs 80-120 ms and a
session 105-135 ms more before the first token, which a hook that embeds one
query pays every time; exporting a graph would also need torch.
"""

from __future__ import annotations

import json
import math
import mmap
import os
import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import numpy.typing as npt

from memlog.embeddings.base import Matrix
from memlog.errors import ProviderUnavailable
from memlog.spawn import BLAS_PINNED

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

HIDDEN = 384
MAX_TOKENS = 256
WORKERS = 2
_GROUP_RATIO = 1.25
_GROUP_TOKENS = 4096
_MASKED = np.float32(-1e9)
_SQRT_HALF = np.float32(math.sqrt(0.5))
_GELU_ROWS = 64
_DTYPES: dict[str, Any] = {"F32": np.float32, "F16": np.float16, "I8": np.int8}

IntMatrix = npt.NDArray[np.intp]
Tensors = dict[str, np.ndarray]


class Tokenizer(Protocol):
    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]: ...


@lru_cache(maxsize=1)
def _blas_threads() -> Any:
    """The process's BLAS thread pools, to run inference on one thread per worker."""
    from threadpoolctl import ThreadpoolController  # type: ignore[import-untyped]

    return ThreadpoolController()


# -- reading the weights ----------------------------------------------------------------------


def map_safetensors(path: Path) -> Tensors:
    """Every float32, float16 and int8 tensor of a safetensors file, mapped read-only."""
    try:
        with path.open("rb") as handle:
            (size,) = struct.unpack("<Q", handle.read(8))
            header = json.loads(handle.read(size))
            buffer = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        raw = np.frombuffer(buffer, dtype=np.uint8)
        return dict(_tensor_views(raw, 8 + size, header))
    except (OSError, ValueError, KeyError, TypeError, struct.error) as exc:
        raise ProviderUnavailable(f"cannot map {path}: {exc}") from None


def _tensor_views(
    raw: npt.NDArray[np.uint8], base: int, header: dict[str, Any]
) -> Iterator[tuple[str, np.ndarray]]:
    for name, meta in header.items():
        if name == "__metadata__" or meta["dtype"] not in _DTYPES:
            continue
        begin, end = meta["data_offsets"]
        dtype = _DTYPES[meta["dtype"]]
        yield name, raw[base + begin : base + end].view(dtype).reshape(meta["shape"])


def dense(tensors: Tensors, name: str, factor: float = 1.0) -> Matrix:
    """``factor · W.T`` as a C-contiguous float32 ``[in, out]`` matrix, dequantised."""
    weight = tensors[name]
    scale = tensors.get(name + "_scale")
    rows, cols = weight.shape
    if scale is not None and scale.ndim == 2:  # one scale per group of a row
        groups = weight.reshape(rows, scale.shape[1], cols // scale.shape[1])
        full = np.multiply(groups, scale[:, :, None] * np.float32(factor), dtype=np.float32)
        weight = full.reshape(rows, cols)
    elif scale is not None:
        weight = np.multiply(weight, scale[:, None] * np.float32(factor), dtype=np.float32)
    else:
        weight = np.multiply(weight, np.float32(factor), dtype=np.float32)
    return np.ascontiguousarray(weight.T)


@dataclass(frozen=True)
class Layer:
    qkv: Matrix  # [384, 1152], queries pre-scaled
    qkv_bias: Matrix
    out: Matrix
    out_bias: Matrix
    norm1: tuple[Matrix, Matrix]
    up: Matrix
    up_bias: Matrix
    down: Matrix
    down_bias: Matrix
    norm2: tuple[Matrix, Matrix]


@dataclass(frozen=True)
class Weights:
    words: np.ndarray  # [30522, 384], as stored (mapped)
    word_scale: np.ndarray | None
    positions: Matrix
    token_type: Matrix
    norm: tuple[Matrix, Matrix]
    layers: list[Layer] = field(default_factory=list)

    def embed_ids(self, ids: IntMatrix) -> Matrix:
        rows: Matrix = self.words[ids].astype(np.float32)
        if self.word_scale is not None:
            rows *= self.word_scale[ids][..., None]
        return rows


def build_weights(tensors: Tensors, layers: int, heads: int) -> Weights:
    """The runtime weights of the encoder (see the module's docstring)."""
    try:
        return _build(tensors, layers, heads)
    except (KeyError, ValueError) as exc:
        raise ProviderUnavailable(f"the model's weights are incomplete: {exc}") from None


def _build(tensors: Tensors, layers: int, heads: int) -> Weights:
    def f32(name: str) -> Matrix:
        return np.asarray(tensors[name], dtype=np.float32)

    weights = Weights(
        words=tensors["embeddings.word_embeddings.weight"],
        word_scale=tensors.get("embeddings.word_embeddings.weight_scale"),
        positions=f32("embeddings.position_embeddings.weight"),
        token_type=f32("embeddings.token_type_embeddings.weight")[0],
        norm=(f32("embeddings.LayerNorm.weight"), f32("embeddings.LayerNorm.bias")),
    )
    scale = 1.0 / math.sqrt(HIDDEN // heads)
    for n in range(layers):
        p, a = f"encoder.layer.{n}.", f"encoder.layer.{n}.attention.self."
        qkv = [dense(tensors, a + "query.weight", scale), dense(tensors, a + "key.weight")]
        qkv.append(dense(tensors, a + "value.weight"))
        bias = [f32(a + "query.bias") * np.float32(scale), f32(a + "key.bias")]
        weights.layers.append(
            Layer(
                np.ascontiguousarray(np.concatenate(qkv, axis=1)),
                np.concatenate([*bias, f32(a + "value.bias")]),
                dense(tensors, p + "attention.output.dense.weight"),
                f32(p + "attention.output.dense.bias"),
                (f32(p + "attention.output.LayerNorm.weight"),
                 f32(p + "attention.output.LayerNorm.bias")),
                dense(tensors, p + "intermediate.dense.weight"),
                f32(p + "intermediate.dense.bias"),
                dense(tensors, p + "output.dense.weight"),
                f32(p + "output.dense.bias"),
                (f32(p + "output.LayerNorm.weight"), f32(p + "output.LayerNorm.bias")),
            )
        )  # fmt: skip
    return weights


# -- running it -------------------------------------------------------------------------------


class Encoder:
    """A BERT encoder with mean pooling; thread-safe (no state changes while embedding)."""

    def __init__(self, tokenizer: Tokenizer, weights: Weights, heads: int, eps: float) -> None:
        self.tokenizer = tokenizer
        self.weights = weights
        self.heads = heads
        self.eps = np.float32(eps)
        self._pool: ThreadPoolExecutor | None = None  # made for the first batch of groups

    def embed(self, texts: Sequence[str]) -> Matrix:
        """Unit vectors for ``texts``, one row each."""
        ids = self.tokenizer.encode_batch(list(texts))
        pooled = np.zeros((len(ids), HIDDEN), dtype=np.float32)
        groups = list(length_groups([len(row) for row in ids]))
        groups.sort(key=lambda g: -len(g) * len(ids[g[-1]]))  # longest first: both end together

        def run(rows: list[int]) -> None:
            batch, mask = pad([ids[r] for r in rows])
            pooled[rows] = self.encode_pooled(batch, mask)

        if os.environ.get(BLAS_PINNED) == "1":  # one BLAS thread from the start (the hook)
            self._map(run, groups)
        else:
            with _blas_threads().limit(limits=1, user_api="blas"):
                self._map(run, groups)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit: Matrix = pooled / np.maximum(norms, np.float32(1e-12))
        return unit

    def _map(self, run: Callable[[list[int]], None], groups: list[list[int]]) -> None:
        """Run the groups, longest first, on the worker threads (one group: right here)."""
        if len(groups) <= 1 or WORKERS <= 1:
            for rows in groups:
                run(rows)
            return
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor  # (logging: batches only)

            self._pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="memlog-bert")
        list(self._pool.map(run, groups))

    def encode_pooled(self, ids: IntMatrix, mask: Matrix) -> Matrix:
        """Mean-pooled final states ``(batch, 384)`` of padded ``ids``."""
        batch, tokens = ids.shape
        w = self.weights
        x = w.embed_ids(ids)
        x += w.positions[:tokens]
        x += w.token_type
        x = layer_norm(x.reshape(batch * tokens, HIDDEN), *w.norm, self.eps)
        bias = None if mask.all() else ((1.0 - mask) * _MASKED)[:, None, None, :]
        for layer in w.layers:
            x = self._layer(layer, x, bias, batch, tokens)
        states = x.reshape(batch, tokens, HIDDEN)
        if bias is None:
            pooled: Matrix = states.mean(axis=1)
            return pooled
        summed: Matrix = np.einsum("btd,bt->bd", states, mask)
        summed /= mask.sum(axis=1, keepdims=True)
        return summed

    def _layer(
        self, layer: Layer, x: Matrix, bias: Matrix | None, batch: int, tokens: int
    ) -> Matrix:
        context = self._attention(layer, x, bias, batch, tokens)
        attended: Matrix = context @ layer.out
        attended += layer.out_bias
        attended += x
        h = layer_norm(attended, *layer.norm1, self.eps)
        inner: Matrix = h @ layer.up
        inner += layer.up_bias
        gelu(inner)
        out: Matrix = inner @ layer.down
        out += layer.down_bias
        out += h
        return layer_norm(out, *layer.norm2, self.eps)

    def _attention(
        self, layer: Layer, x: Matrix, bias: Matrix | None, batch: int, tokens: int
    ) -> Matrix:
        size = HIDDEN // self.heads
        qkv = x @ layer.qkv
        qkv += layer.qkv_bias
        parts = qkv.reshape(batch, tokens, 3, self.heads, size).transpose(2, 0, 3, 1, 4)
        scores = parts[0] @ parts[1].transpose(0, 1, 3, 2)
        if bias is not None:
            scores += bias
        # softmax(s) @ v == (exp(s - max) @ v) / sum(exp(s - max)): divide T × 32, not T × T
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        sums = scores.sum(axis=-1, keepdims=True)
        context: Matrix = scores @ parts[2]
        context /= sums
        joined: Matrix = context.transpose(0, 2, 1, 3).reshape(batch * tokens, HIDDEN)
        return joined


def layer_norm(x: Matrix, weight: Matrix, bias: Matrix, eps: np.float32) -> Matrix:
    """LayerNorm over the last axis, in place on ``x``."""
    x -= x.mean(axis=-1, keepdims=True)
    variance = np.einsum("ij,ij->i", x, x)[:, None]
    variance *= np.float32(1.0 / x.shape[-1])
    variance += eps
    np.sqrt(variance, out=variance)
    x /= variance
    x *= weight
    x += bias
    return x


def gelu(x: Matrix) -> Matrix:
    """The exact (erf) GELU of BERT, in place, in cache-sized blocks of rows."""
    for start in range(0, x.shape[0], _GELU_ROWS):
        block = x[start : start + _GELU_ROWS]
        block *= np.float32(0.5) * (np.float32(1.0) + erf(block * _SQRT_HALF))
    return x


def erf(x: Matrix) -> Matrix:
    """erf to within 1.5e-7 (Abramowitz & Stegun 7.1.26); numpy has none."""
    a = np.abs(x)
    t = a * np.float32(0.3275911)
    t += np.float32(1.0)
    np.reciprocal(t, out=t)
    poly = t * np.float32(1.061405429)
    for coefficient in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        poly += np.float32(coefficient)
        poly *= t
    np.square(a, out=a)
    np.negative(a, out=a)
    np.exp(a, out=a)
    poly *= a
    np.subtract(np.float32(1.0), poly, out=poly)
    np.copysign(poly, x, out=poly)
    return poly


def length_groups(lengths: Sequence[int]) -> Iterator[list[int]]:
    """Row indices shortest first, in groups run as one padded batch each: rows within
    25% of the group's shortest, at most 4096 padded tokens."""
    group: list[int] = []
    for row in sorted(range(len(lengths)), key=lengths.__getitem__):
        longer = lengths[row] > _GROUP_RATIO * lengths[group[0]] if group else False
        if longer or (len(group) + 1) * lengths[row] > _GROUP_TOKENS:
            yield group
            group = []
        group.append(row)
    if group:
        yield group


def pad(sequences: Sequence[Sequence[int]]) -> tuple[IntMatrix, Matrix]:
    """Token ids padded with 0 to the longest, and the matching attention mask."""
    width = max(len(sequence) for sequence in sequences)
    ids = np.zeros((len(sequences), width), dtype=np.intp)
    mask = np.zeros((len(sequences), width), dtype=np.float32)
    for row, sequence in enumerate(sequences):
        ids[row, : len(sequence)] = sequence
        mask[row, : len(sequence)] = 1.0
    return ids, mask
