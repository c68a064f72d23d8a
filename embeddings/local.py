"""The local embedding provider: all-MiniLM-L6-v2 in process, no key, no network.

The model is found in this order:

1. an explicit path (config ``memory_embedding_model_path``): a
   sentence-transformers directory (``model.safetensors``, ``tokenizer.json``,
   ``config.json``) or a copy of the bundled one;
2. the model's snapshot in the Hugging Face cache (``$HF_HUB_CACHE``,
   ``$HF_HOME/hub``, ``$XDG_CACHE_HOME/huggingface/hub`` or
   ``~/.cache/huggingface/hub``), the ``refs/main`` snapshot first;
3. the copy inside memlog's own package (``embeddings/minilm/``: the weights
   as int8 with per-row and per-64-value scales, 24 MB, with the model's
   Apache-2.0 LICENSE and a NOTICE of the conversion).

The first directory found is the one used: if it fails the checks below it
is refused, not passed over, so a damaged copy is reported, never masked.

Before use, the sha256 of every file read must match its pin (the upstream
files: the first 16 hex digits; the bundled files: all 64); anything else
raises ``ProviderUnavailable`` naming the file.  A successful digest is kept
in a stamp file in the caller's cache directory, keyed by the resolved path,
size, inode, mtime_ns and ctime_ns: a rewritten file changes its ctime even
when size and mtime are put back, and is hashed again.

Inference is ``bert.Encoder`` (plain numpy over the mapped weights; the
dequantised float32 layers are kept in the cache directory too, ``runtime``),
tokenisation ``wordpiece`` (pure Python, equal to the model's tokenizer.json).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar, NamedTuple, cast

import numpy as np
import numpy.typing as npt

from memlog.embeddings.base import EmbeddingProvider, TaskType
from memlog.embeddings.bert import MAX_TOKENS, Encoder, build_weights, map_safetensors
from memlog.embeddings.runtime import cached_weights
from memlog.embeddings.wordpiece import WordPieceTokenizer
from memlog.errors import MemlogError, ProviderUnavailable

MODEL_NAME = "all-MiniLM-L6-v2"
HF_REPO_DIR = "models--sentence-transformers--all-MiniLM-L6-v2"
BUNDLED_DIR = Path(__file__).with_name("minilm")
DIMENSIONS = 384
#: sha256 prefixes of the upstream files; nothing else is loaded
EXPECTED_SHA256 = {
    "model.safetensors": "53aa51172d142c89",
    "tokenizer.json": "be50c3628f2bf5bb",
}
#: sha256 of the files memlog ships (benchmarks/convert_minilm.py made the weights)
BUNDLED_SHA256 = {
    "model.int8.safetensors": "6d8736d05fcd6c16e8e1fd9046826b2caa0967c7043b998d760ff4968f821838",
    "vocab.txt": "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
}
REQUIRED_FILES = ("model.safetensors", "tokenizer.json", "config.json")


class Layout(NamedTuple):
    """Which files of a model directory are read, and their pins."""

    weights: str
    tokenizer: str
    pins: dict[str, str]


BUNDLED_WEIGHTS = "model.int8.safetensors"
STAMP_FILE = "local-embedding-verified.json"
_STAMP_VERSION = 1

IntMatrix = npt.NDArray[np.int64]


class LocalProvider(EmbeddingProvider):
    """all-MiniLM-L6-v2 run locally; the model is found, checked and mapped on first use.

    ``model_path`` is an explicit model directory; ``cache_dir`` (memlog's cache
    directory, never the home) holds the verification stamp and the runtime
    weights; without it every process hashes the files and builds the weights.
    The model has no query/document distinction, so ``task`` is ignored.
    """

    name: ClassVar[str] = "local"
    #: the encoder groups a call's texts by length: the more at once, the less padding
    batch_size: ClassVar[int] = 256
    bulk_size: ClassVar[int] = 256

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
        self._model: Encoder | None = None

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
    """The model directory: ``explicit``, else the Hugging Face cache, else the bundled copy."""
    if explicit is not None:
        missing = _missing_files(explicit)
        if missing:
            raise ProviderUnavailable(
                f"local embedding model path {explicit} lacks {', '.join(missing)}"
            )
        return explicit
    found = _hf_snapshot(os.environ if env is None else env) or _bundled_dir()
    if found is None:
        raise ProviderUnavailable(
            f"local embedding model {MODEL_NAME} not found: memlog's copy in {BUNDLED_DIR} "
            "is missing; reinstall memlog or set memory_embedding_model_path to a "
            "sentence-transformers model directory"
        )
    return found


def layout_of(model_dir: Path) -> Layout:
    """The bundled layout when its weights are there, else the upstream one."""
    if (model_dir / BUNDLED_WEIGHTS).is_file():
        return Layout(BUNDLED_WEIGHTS, "vocab.txt", BUNDLED_SHA256)
    return Layout("model.safetensors", "tokenizer.json", EXPECTED_SHA256)


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


def _bundled_dir() -> Path | None:
    return BUNDLED_DIR if not _missing_files(BUNDLED_DIR) else None


def _missing_files(model_dir: Path) -> list[str]:
    names = [*layout_of(model_dir).pins, "config.json"]
    return [name for name in dict.fromkeys(names) if not (model_dir / name).is_file()]


# -- verifying it -----------------------------------------------------------


def verify_model_dir(model_dir: Path, cache_dir: Path | None = None) -> None:
    """Check the pinned sha256 digests, reusing digests stamped in ``cache_dir``."""
    stamp = _Stamp.load(cache_dir)
    try:
        for name, prefix in layout_of(model_dir).pins.items():
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
        from memlog.files import atomic_write

        data = json.dumps({"version": _STAMP_VERSION, "files": self.files}).encode()
        with contextlib.suppress(OSError, MemlogError):
            atomic_write(self.path, data)  # an unpredictable temporary name, made new


def sha256_file(path: Path) -> str:
    """The hex sha256 of a file, read in 1 MiB blocks."""
    import hashlib  # (OpenSSL: fast over the model's megabytes; only when verifying)

    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# -- loading it -------------------------------------------------------------


@lru_cache(maxsize=4)
def _open_verified(model_dir: Path, cache_dir: Path | None) -> Encoder:
    """Verify and open a model directory once per process."""
    verify_model_dir(model_dir, cache_dir)
    layout = layout_of(model_dir)
    layers, heads, eps = _read_config(model_dir / "config.json")
    tokenizer = _load_tokenizer(model_dir / layout.tokenizer)
    tensors = map_safetensors(model_dir / layout.weights)
    stamp = _Stamp.load(cache_dir)  # the digests verify_model_dir just stamped
    try:
        source = stamp.digest(model_dir / layout.weights)
        weights = cached_weights(
            cache_dir, source, tensors, lambda: build_weights(tensors, layers, heads), stamp.digest
        )
    except OSError as exc:
        raise ProviderUnavailable(f"cannot read {model_dir / layout.weights}: {exc}") from None
    finally:
        stamp.save()
    return Encoder(tokenizer, weights, heads, eps)


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


def _load_tokenizer(path: Path) -> WordPieceTokenizer:
    try:
        if path.suffix == ".json":
            return WordPieceTokenizer.from_tokenizer_json(str(path), max_length=MAX_TOKENS)
        return WordPieceTokenizer.from_vocab_file(str(path), max_length=MAX_TOKENS)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ProviderUnavailable(f"cannot load {path}: {exc}") from None
