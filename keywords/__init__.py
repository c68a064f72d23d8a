"""Keyword labels for entries: up to 10 per entry, from a chain of tiers.

``KeywordProvider.label(name, description, reasoning)`` is the one
interface; behind it sit the tiers (``tiers``: the writer's own keywords;
``remote``: Claude Haiku and Ollama over HTTP; ``local``: a deterministic
extractor) and ``Tiered``, which asks them in order.  ``rules`` says what a
valid label list is; ``labelling.label_entries`` records the result as
``entry.labelled`` events.  Nothing imported here loads httpx.
"""

from memlog.keywords.labelling import Labelling, label_entries, needs_labels
from memlog.keywords.local import LocalKeywords, extract
from memlog.keywords.tiers import CallerKeywords, KeywordProvider, Labels, Tiered

__all__ = [
    "CallerKeywords",
    "KeywordProvider",
    "Labelling",
    "Labels",
    "LocalKeywords",
    "Tiered",
    "extract",
    "label_entries",
    "needs_labels",
]
