"""Embedding entries as events: each vector is appended as ``entry.reembedded``.

The log is the progress record: an entry counts as embedded in a space as
soon as its event is in the log, so a run stopped by a rate limit resumes
exactly where it stopped, and a replay reproduces every vector without
calling any provider.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from memlog.embeddings.base import EmbeddingProvider
from memlog.errors import MemlogError, ProviderError, RateLimited
from memlog.eventlog.events import Reembedded
from memlog.eventlog.log import EventLog
from memlog.eventlog.vectors import quantise_rows
from memlog.projections.fold import Entry
from memlog.vocabulary import Space


class Outcome(msgspec.Struct):
    embedded: int = 0
    pending: int = 0
    stopped: str = ""


def embedding_text(entry: Entry) -> str:
    """What of an entry is embedded: its name, description, reasoning and details."""
    parts = [entry.name, entry.description, entry.reasoning, *entry.details]
    return "\n".join(p.strip() for p in parts if p and p.strip())


def events_for(entries: list[Entry], provider: EmbeddingProvider, space: Space) -> list[Reembedded]:
    """One ``entry.reembedded`` event per entry (one provider call for the batch)."""
    vectors = provider.embed_batch([embedding_text(e) for e in entries], "document")
    if vectors.shape != (len(entries), space.dimensions):
        raise ProviderError(f"{space.provider}/{space.model} gave vectors of shape {vectors.shape}")
    return [
        Reembedded(
            entry_id=entry.id,
            provider=space.provider,
            model=space.model,
            dimensions=space.dimensions,
            vector=data,
            encoding="q8",
        )  # fmt: skip
        for entry, data in zip(entries, quantise_rows(vectors), strict=True)
    ]


def embed_entries(
    log: EventLog,
    entries: list[Entry],
    provider: EmbeddingProvider,
    space: Space,
    progress: Callable[[int], None] | None = None,
) -> Outcome:
    """Embed ``entries`` in batches (the provider's ``bulk_size``), appending each batch's
    events as it completes."""
    outcome = Outcome(pending=len(entries))
    size = provider.bulk_size
    for start in range(0, len(entries), size):
        batch = entries[start : start + size]
        try:
            log.append(events_for(batch, provider, space))
        except RateLimited as exc:
            outcome.stopped = _rate_limited(exc)
            return outcome
        except MemlogError as exc:
            outcome.stopped = str(exc)
            return outcome
        outcome.embedded += len(batch)
        outcome.pending -= len(batch)
        if progress is not None:
            progress(len(batch))
    return outcome


def _rate_limited(exc: RateLimited) -> str:
    if exc.quota:
        return f"quota exhausted ({exc}); run memlog reembed again when it renews"
    wait = f" (retry after {exc.retry_after:.0f} s)" if exc.retry_after else ""
    return f"rate limited{wait}; run memlog reembed again to continue"
