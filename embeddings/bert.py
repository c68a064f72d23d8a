"""The all-MiniLM-L6-v2 encoder (BERT, mean pooling) in plain numpy.

Inference is BERT in plain numpy over the safetensors weights, which are
memory-mapped (the header is parsed here; nothing is copied and only the
pages a forward pass touches are read, so 47 MB of word embeddings stay on
disk).  Tokenisation uses ``tokenizers`` with truncation at 256 tokens, the
sentence-transformers ``max_seq_length``; output is the mean of the token
states over the attention mask, L2-normalised.

Why numpy and not onnxruntime (measured on the 2-core build machine, see
``benchmarks/bench_local_embedding.py``): the hook pays the fixed cost of
every run, and here numpy wins.  The wheel ships no ONNX graph and exporting
one needs torch, which is not a dependency; a probe graph with the same
weights and matrix products still showed the price: ``import onnxruntime``
80-120 ms plus 105-135 ms to create a session (it copies the 90 MB of
initialisers), about 0.2 s before the first token.  Here mapping the weights
takes under 1 ms and loading the tokenizer 20-30 ms, so a fresh process
embeds a query in 1.1-1.6x the time of ``python -c "import numpy"``.
onnxruntime is faster warm (the probe, which lacks attention, ran 64 tokens
in 4.5 ms against 13-20 ms here), which a hook that embeds one query does
not notice and a batch re-embed can afford.

Inference runs on one BLAS thread.  On a busy machine OpenBLAS threads spin
waiting for each other: with two threads on two loaded cores a warm 64-token
query took 50-360 ms and a cold start 0.26-1.2 s, against 19-20 ms and
0.13-0.24 s on one thread; on an idle machine the second thread gained ~10%
batch throughput.  ``threadpoolctl`` limits the pools only while embedding.
"""

from __future__ import annotations

import json
import math
import mmap
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from memlog.embeddings.base import Matrix
from memlog.errors import ProviderUnavailable

if TYPE_CHECKING:
    from tokenizers import Tokenizer

HIDDEN = 384
_MASKED = np.float32(-1e9)
_QKV = ("query", "key", "value")
_SQRT_HALF = np.float32(math.sqrt(0.5))
_GELU_ROWS = 64
_GROUP_TOKENS = 2048
#: BLAS threads while embedding: more spin-wait on a busy machine (module docstring)
_BLAS_THREADS = 1

IntMatrix = npt.NDArray[np.int64]


@lru_cache(maxsize=1)
def _blas_threads() -> Any:
    """The process's BLAS thread pools, to run inference on ``_BLAS_THREADS`` threads."""
    from threadpoolctl import ThreadpoolController  # type: ignore[import-untyped]

    return ThreadpoolController()


def map_safetensors(path: Path) -> dict[str, Matrix]:
    """Map the float32 tensors of a safetensors file read-only, without copying."""
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
) -> Iterator[tuple[str, Matrix]]:
    for name, meta in header.items():
        if name == "__metadata__" or meta["dtype"] != "F32":
            continue
        begin, end = meta["data_offsets"]
        tensor = raw[base + begin : base + end].view(np.float32).reshape(meta["shape"])
        yield name, tensor


# -- running it -------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Encoder:
    """A BERT encoder with mean pooling, over mapped weights."""

    tokenizer: Tokenizer
    weights: dict[str, Matrix]
    layers: int
    heads: int
    eps: float

    def embed(self, texts: Sequence[str]) -> Matrix:
        """Unit vectors for ``texts``, one row each."""
        encodings = self.tokenizer.encode_batch(list(texts))
        pooled = np.zeros((len(texts), HIDDEN), dtype=np.float32)
        with _blas_threads().limit(limits=_BLAS_THREADS, user_api="blas"):
            for rows in length_groups([len(encoding.ids) for encoding in encodings]):
                ids, mask = pad([encodings[row].ids for row in rows])
                pooled[rows] = mean_pool(self.encode(ids, mask), mask)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit: Matrix = pooled / np.maximum(norms, np.float32(1e-12))
        return unit

    def encode(self, ids: IntMatrix, mask: Matrix) -> Matrix:
        """Token states ``(batch, tokens, 384)`` for padded ``ids``."""
        batch, tokens = ids.shape
        hidden = self._embeddings(ids).reshape(batch * tokens, HIDDEN)
        bias = ((1.0 - mask) * _MASKED)[:, None, None, :]
        for layer in range(self.layers):
            hidden = self._layer(f"encoder.layer.{layer}.", hidden, bias, batch)
        return hidden.reshape(batch, tokens, HIDDEN)

    def _embeddings(self, ids: IntMatrix) -> Matrix:
        w = self.weights
        summed = w["embeddings.word_embeddings.weight"][ids]
        summed += w["embeddings.position_embeddings.weight"][: ids.shape[1]]
        summed += w["embeddings.token_type_embeddings.weight"][0]
        return self._norm("embeddings.LayerNorm", summed)

    def _layer(self, prefix: str, hidden: Matrix, bias: Matrix, batch: int) -> Matrix:
        context = self._attention(prefix + "attention.self.", hidden, bias, batch)
        attended = self._dense(prefix + "attention.output.dense", context)
        hidden = self._norm(prefix + "attention.output.LayerNorm", attended + hidden)
        inner = gelu(self._dense(prefix + "intermediate.dense", hidden))
        out = self._dense(prefix + "output.dense", inner)
        return self._norm(prefix + "output.LayerNorm", out + hidden)

    def _attention(self, prefix: str, hidden: Matrix, bias: Matrix, batch: int) -> Matrix:
        q, k, v = (self._heads(self._dense(prefix + n, hidden), batch) for n in _QKV)
        scores = q @ k.transpose(0, 1, 3, 2)
        scores *= np.float32(1.0 / math.sqrt(q.shape[-1]))
        scores += bias
        context = softmax(scores) @ v
        return context.transpose(0, 2, 1, 3).reshape(hidden.shape)

    def _heads(self, x: Matrix, batch: int) -> Matrix:
        split = x.reshape(batch, -1, self.heads, HIDDEN // self.heads)
        return split.transpose(0, 2, 1, 3)

    def _dense(self, name: str, x: Matrix) -> Matrix:
        out: Matrix = x @ self.weights[name + ".weight"].T
        out += self.weights[name + ".bias"]
        return out

    def _norm(self, name: str, x: Matrix) -> Matrix:
        return layer_norm(x, self.weights[name + ".weight"], self.weights[name + ".bias"], self.eps)


def layer_norm(x: Matrix, weight: Matrix, bias: Matrix, eps: float) -> Matrix:
    """LayerNorm over the last axis."""
    centred: Matrix = x - x.mean(axis=-1, keepdims=True)
    variance = np.mean(np.square(centred), axis=-1, keepdims=True)
    centred /= np.sqrt(variance + np.float32(eps))
    centred *= weight
    centred += bias
    return centred


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


def softmax(scores: Matrix) -> Matrix:
    """Softmax over the last axis, in place."""
    scores -= scores.max(axis=-1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=-1, keepdims=True)
    return scores


def mean_pool(states: Matrix, mask: Matrix) -> Matrix:
    """The mean token state of each row over its attention mask."""
    summed = np.einsum("btd,bt->bd", states, mask)
    counts = np.maximum(mask.sum(axis=1, keepdims=True), np.float32(1e-9))
    pooled: Matrix = summed / counts
    return pooled


def length_groups(lengths: Sequence[int]) -> Iterator[list[int]]:
    """Row indices shortest first, in groups run as one padded batch each.

    Every row of a group is padded to its longest, so a group holds rows
    within a factor two of each other, and at most ``_GROUP_TOKENS`` padded
    tokens (large matrix products are efficient, huge temporaries are not).
    """
    group: list[int] = []
    for row in sorted(range(len(lengths)), key=lengths.__getitem__):
        longer = lengths[row] > 2 * lengths[group[0]] if group else False
        if longer or (len(group) + 1) * lengths[row] > _GROUP_TOKENS:
            yield group
            group = []
        group.append(row)
    if group:
        yield group


def pad(sequences: Sequence[Sequence[int]]) -> tuple[IntMatrix, Matrix]:
    """Token ids padded with 0 to the longest, and the matching attention mask."""
    width = max(len(sequence) for sequence in sequences)
    ids = np.zeros((len(sequences), width), dtype=np.int64)
    mask = np.zeros((len(sequences), width), dtype=np.float32)
    for row, sequence in enumerate(sequences):
        ids[row, : len(sequence)] = sequence
        mask[row, : len(sequence)] = 1.0
    return ids, mask
