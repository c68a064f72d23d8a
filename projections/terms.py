"""Terms for lexical retrieval: identifiers split, function words dropped, Porter stems.

The same function turns an entry's text (when the lexical index is built)
and a query (when it is scored) into terms, so both sides always agree:

* words are runs of ASCII letters and digits, so ``_ . / -`` and every
  other symbol separate them (``type_id`` → ``type id``,
  ``hooks/session_start.py`` → ``hooks session start py``);
* a word in camelCase or PascalCase, or mixing letters and digits, also gives its parts
  (``WorkflowStateEngine`` → ``workflow state engine`` and
  ``workflowstateengine``);
* lower-cased; numbers, one-letter words and English function words are
  dropped (feature and version numbers say nothing about a lesson's topic);
* the rest are reduced by the Porter stemmer (``migrations`` and
  ``migrating`` → ``migrat``), the algorithm SQLite's FTS5 ``porter``
  tokenizer uses, here from the Snowball project's C implementation
  (PyStemmer), which stems a hundred words in a few microseconds.

A query is read in units (``query_units``): a word gives one term; an
identifier (``legacy_id``, ``InvoiceSerializer``, ``test_count_active``)
gives its terms as one unit, which an entry matches only when it holds all
of them: the parts of an identifier are one piece of evidence, not several
(``InvoiceSerializer`` alone would otherwise match every entry that says
"invoice").  A unit found ``n`` times in the query counts
``(K3 + 1)·n / (K3 + n)`` times (BM25's query-term saturation): a long
spec that names its subject ten times weighs it twice, not ten times, as
much as a word it says once.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache
from typing import Any, NamedTuple

from memlog import digests

_WORD = re.compile(r"[A-Za-z0-9]+")
#: a query's words and identifiers: runs of letters, digits and underscores
_IDENTIFIER = re.compile(r"[A-Za-z0-9_]+")
#: BM25's k3: how much repeating a query unit adds (1: at most twice the weight of once)
QUERY_K3 = 1.0
#: a word breaks where a lower-case letter meets a capital, and between letters and digits
_BREAK = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Za-z])(?=[0-9])|(?<=[0-9])(?=[A-Za-z])")

#: English function words: they match nearly every text and carry no topic
STOPWORDS = frozenset(
    """
    a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    few for from further had has have having he her here hers him his how however i if
    in into is it its itself just me more most my no nor not now of off on once only or
    other our ours out over own same she should so some such than that the their theirs
    them then there these they this those through to too under until up upon us very was
    we were what when where which while who whom why will with within without would yet
    you your yours
    """.split()
)


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    import Stemmer  # type: ignore[import-not-found]

    return Stemmer.Stemmer("porter")


def words(text: str) -> list[str]:
    """The lower-cased words of ``text``, identifiers split, before stemming."""
    found: list[str] = []
    for word in _WORD.findall(text):
        if _whole(word):
            found.append(word.lower())
            continue
        parts = _BREAK.sub(" ", word).split()
        found += (p.lower() for p in parts)
        if len(parts) > 1:
            found.append(word.lower())
    return [w for w in found if len(w) > 1 and not w.isdigit() and w not in STOPWORDS]


def _whole(word: str) -> bool:
    """Whether ``_BREAK`` finds nothing to split in ``word`` (most words: asked first, it
    spares a regular expression per word): digits only, or letters with no lower-case
    one before a capital."""
    if word.isdigit():
        return True
    return word.isalpha() and (word.islower() or word.isupper() or word[1:].islower())


def terms(text: str) -> list[str]:
    """The stemmed terms of ``text``, in order, repeats kept."""
    found = words(text)
    stems: list[str] = _stemmer().stemWords(found) if found else []
    return stems


def term_counts(fields: Iterable[str]) -> Counter[str]:
    """How often each term occurs in all of ``fields`` together."""
    counts: Counter[str] = Counter()
    for text in fields:
        if text:
            counts.update(terms(text))
    return counts


class Unit(NamedTuple):
    """A unit of a lexical query: terms an entry must all hold, and how much it counts."""

    terms: tuple[str, ...]
    weight: float


def query_units(text: str) -> list[Unit]:
    """The units of a query, in the order they first occur: each word's term, each
    identifier's terms together; repeats saturated (``QUERY_K3``)."""
    found: Counter[tuple[str, ...]] = Counter()
    for token in _IDENTIFIER.findall(text):
        stems = tuple(dict.fromkeys(terms(token)))
        if stems:
            found[stems] += 1
    return [Unit(t, (QUERY_K3 + 1.0) * n / (QUERY_K3 + n)) for t, n in found.items()]


@lru_cache(maxsize=1 << 16)
def term_hash(term: str) -> int:
    """A term's key in the packed lexical index: blake2b-64, little-endian (remembered: a
    vocabulary is a few thousand terms, hashed again for every entry that holds them)."""
    return int.from_bytes(digests.blake2b(term.encode(), digest_size=8).digest(), "little")
