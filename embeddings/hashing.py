"""A deterministic feature-hashing embedder: no model, no network.

Each lowercased word and word bigram is hashed (BLAKE2b) to one of
``dimensions`` buckets with a sign; the counts form the vector.  Texts that
share words get similar vectors.  It is a weak but honest embedding, used
where repeatability matters more than meaning (tests, benchmarks) and
selectable as provider ``hashing``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import ClassVar

from memlog import digests
from memlog.embeddings.base import EmbeddingProvider, TaskType

_WORD = re.compile(r"\w+", re.UNICODE)


class HashingProvider(EmbeddingProvider):
    name: ClassVar[str] = "hashing"

    def __init__(self, model: str = "blake2b-words", dimensions: int = 384) -> None:
        super().__init__(model or "blake2b-words", dimensions or 384)

    def _embed_batch(self, texts: Sequence[str], task: TaskType) -> list[list[float]]:
        return [self._vector(text) for text in texts]

    def _vector(self, text: str) -> list[float]:
        vector = [0.0] * self.dimensions
        words = [w.lower() for w in _WORD.findall(text)]
        features = words + [f"{a} {b}" for a, b in zip(words, words[1:], strict=False)]
        for feature in features or ["<empty>"]:
            digest = digests.blake2b(feature.encode("utf-8"), digest_size=8).digest()
            value = int.from_bytes(digest, "little")
            vector[value % self.dimensions] += 1.0 if value >> 63 else -1.0
        if not any(vector):
            vector[0] = 1.0
        return vector
