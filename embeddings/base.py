"""The embedding provider interface: one abstract batch method.

Every provider implements ``_embed_batch``; ``embed_batch`` and ``embed``
are derived here and add what every vector needs: shape checks and L2
normalisation.  A zero or wrongly sized vector is an error, never stored.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import ClassVar, Literal, Self

import numpy as np
import numpy.typing as npt

from memlog.errors import ProviderError

TaskType = Literal["query", "document"]
Matrix = npt.NDArray[np.float32]


class EmbeddingProvider(abc.ABC):
    """A model that turns texts into unit vectors of ``dimensions`` floats."""

    name: ClassVar[str]
    #: how many texts one underlying call may take
    batch_size: ClassVar[int] = 50
    #: how many entries bulk work (import, reembed) embeds and appends at a time: a
    #: stopped run (a rate limit) loses at most this much work
    bulk_size: ClassVar[int] = 50

    def __init__(self, model: str, dimensions: int) -> None:
        self.model = model
        self.dimensions = dimensions

    @abc.abstractmethod
    def _embed_batch(self, texts: Sequence[str], task: TaskType) -> Sequence[Sequence[float]]:
        """Return one raw vector per text, in order (at most ``batch_size`` texts)."""

    def embed_batch(self, texts: Sequence[str], task: TaskType = "document") -> Matrix:
        """Embed ``texts`` into a ``(len(texts), dimensions)`` float32 matrix of unit rows."""
        rows: list[Matrix] = []
        for start in range(0, len(texts), self.batch_size):
            chunk = texts[start : start + self.batch_size]
            rows.append(self._checked(chunk, self._embed_batch(chunk, task)))
        if not rows:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        stacked: Matrix = np.vstack(rows)
        return stacked

    def with_deadline(self, deadline: float | None) -> Self:
        """This provider bound to end its calls by ``deadline`` (``time.monotonic()``).

        A provider that cannot be interrupted (a local model) ignores it: the
        caller waits only as long as it may and drops a late answer.
        """
        return self

    def close(self) -> None:  # noqa: B027 - optional hook, most providers hold nothing
        """Release what the provider holds (connections); a no-op by default."""

    def embed(self, text: str, task: TaskType = "query") -> Matrix:
        """Embed one text into a unit vector."""
        vector: Matrix = self.embed_batch([text], task)[0]
        return vector

    def _checked(self, texts: Sequence[str], raw: Sequence[Sequence[float]]) -> Matrix:
        matrix = np.asarray(raw, dtype=np.float32)
        if matrix.ndim != 2 or matrix.shape != (len(texts), self.dimensions):
            raise ProviderError(
                f"{self.name}/{self.model} returned shape {matrix.shape}, "
                f"expected ({len(texts)}, {self.dimensions})"
            )
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        if not np.all(np.isfinite(norms)) or np.any(norms == 0):
            raise ProviderError(f"{self.name}/{self.model} returned a zero or non-finite vector")
        unit: Matrix = (matrix / norms).astype(np.float32)
        return unit
