"""Choosing the embedding provider the configuration names.

Provider modules are imported only when chosen, so a hook that never
embeds pays for none of them.
"""

from __future__ import annotations

from pathlib import Path

from memlog.config import Config
from memlog.embeddings.base import EmbeddingProvider
from memlog.embeddings.hashing import HashingProvider
from memlog.errors import ProviderUnavailable
from memlog.vocabulary import Space


def make_provider(config: Config, cache_dir: Path) -> EmbeddingProvider:
    """The configured provider; ProviderUnavailable when it cannot run here."""
    space = config.space
    if space.provider == "hashing":
        return HashingProvider(space.model, space.dimensions)
    if space.provider == "local":
        return _local(config, space, cache_dir)
    return _http(config, space)


def _local(config: Config, space: Space, cache_dir: Path) -> EmbeddingProvider:
    try:
        from memlog.embeddings.local import LocalProvider
    except ImportError as exc:  # a runtime library missing from this install
        raise ProviderUnavailable(f"local embeddings unavailable: {exc}") from None
    path = Path(config.memory_embedding_model_path) if config.memory_embedding_model_path else None
    return LocalProvider(model_path=path, cache_dir=cache_dir)


def _http(config: Config, space: Space) -> EmbeddingProvider:
    from memlog.embeddings.http import make_provider as make_http

    return make_http(
        space.provider,
        model=space.model,
        dimensions=space.dimensions,
        base_url=config.memory_embedding_base_url or None,
    )
