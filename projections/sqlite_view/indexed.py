"""The text of an entry the lexical index holds: what the index writes (``lexicon``),
what tells a catch-up an entry's postings changed (``indexes.signature``) and what
ranking reads the same way (``retrieval.relevance``)."""

from __future__ import annotations

from memlog.projections.model import Entry


def indexed_text(entry: Entry) -> tuple[str, ...]:
    """The fields of an entry the lexical index holds."""
    keywords = " ".join(entry.keywords)
    return (entry.name, entry.description, keywords, entry.reasoning, *entry.details)
