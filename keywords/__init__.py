"""Keyword label providers: up to 10 labels per entry, from a chain of tiers.

``KeywordProvider.label(name, description, reasoning)`` is the one
interface; behind it sit the tiers (``tiers``: the writer's own keywords;
``remote``: Claude Haiku and Ollama over HTTP; ``local``: a deterministic
extractor) and ``Tiered``, which asks them in order.  ``rules`` says what a
valid label list is.  Recording labels as events is capture's business
(``capture.label``).  Nothing imported here loads httpx.
"""

from memlog.keywords.local import LocalKeywords, extract
from memlog.keywords.tiers import CallerKeywords, KeywordProvider, Labels, Tiered

__all__ = [
    "CallerKeywords",
    "KeywordProvider",
    "Labels",
    "LocalKeywords",
    "Tiered",
    "extract",
]
