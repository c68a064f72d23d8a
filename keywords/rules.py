"""What a keyword label must be, and how a proposed list is repaired.

The rules of the semantic memory spec (acceptance criterion 5): 3 to 10
labels, each lowercase ``[a-z0-9-]``; at least 3 of them appear in the
entry's description or reasoning, as a substring or as a morphological
variant of a word there (parse, parsing, parser); none from the generic
list ``STOPWORDS``.

``repair`` turns any proposal (a model's answer, a caller's list) into the
normal form: normalised, stopwords and function words dropped, duplicates
dropped, at most 10, grounded labels kept first when some must go.
``is_valid`` says whether a repaired list may be recorded.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from memlog.vocabulary import MAX_KEYWORDS, MIN_KEYWORDS

#: a longer label is a phrase or junk, not a label
MAX_KEYWORD_CHARS = 40

#: the generic words acceptance criterion 5 forbids
STOPWORDS: frozenset[str] = frozenset(
    "code development software system application implementation feature project function"
    " method file data error bug fix update change".split()
)

#: English function words (articles, pronouns, prepositions, auxiliaries, adverbs)
FUNCTION_WORDS: frozenset[str] = frozenset(
    """
    a about above across actual actually after again against ago all almost along already
    also although always am among an and another any anything anyway are aren around as at
    away back be because been before behind being below between both but by can cannot
    certain could couldn did didn do does doesn doing don done down during each early either
    else enough especially etc even ever every everything exactly few first for from further
    had hadn has hasn have haven having he her here hers him his how however ie if in
    instead into is isn it its itself just last later least less like likely many may maybe
    me might mine more most much must my never next no none nor not nothing now of off often
    on once one ones only onto or other others otherwise our ours out over own per perhaps
    probably quite rather really same several shall she should shouldn since so some
    something sometimes soon still such than that the their theirs them then there these
    they this those though through thus to together too toward towards two under unless
    until up upon us usually various very via was wasn we well were weren what whatever when
    whenever where whether which while who whole whom whose why will with within without won
    would wouldn yet you your yours
    """.split()
)

_WORD = re.compile(r"[a-z0-9]+")
_KEYWORD_JUNK = re.compile(r"[^a-z0-9-]+")
_INFLECTIONS = (("ies", "y"), ("ied", "y"), ("ing", ""), ("es", ""), ("ed", ""), ("s", ""))
#: longest first, so "ations" is tried before "ation" and "ion"
_DERIVATIONS = tuple("ations ation ments ment ness ions ion ity ive ers ors er or al ly".split())


def normalise_keyword(word: str) -> str:
    """Lowercase ``[a-z0-9-]`` form of a keyword: spaces and underscores become hyphens."""
    dashed = re.sub(r"[\s_]+", "-", word.strip().lower())
    return _KEYWORD_JUNK.sub("", dashed).strip("-")


def words(text: str) -> list[str]:
    """The lowercase ``[a-z0-9]`` words of ``text``, in order."""
    return _WORD.findall(text.lower())


def _trim(word: str) -> str:
    """Drop a final ``e`` and undouble a final consonant (parse -> pars, mapp -> map)."""
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiouls":
        word = word[:-1]
    return word


def base_form(word: str) -> str:
    """``word`` without one inflection (plural, past, gerund) and a final ``e``."""
    for suffix, replacement in _INFLECTIONS:
        if not word.endswith(suffix) or len(word) - len(suffix) < 3:
            continue
        if suffix == "s" and word[-2] in "siu":  # class, status, basis
            continue
        if suffix == "es" and word[-3] not in "sxzh":  # files -> file, not fil
            continue
        word = word[: -len(suffix)] + replacement
        break
    return _trim(word)


def stem(word: str) -> str:
    """A crude stem: ``base_form`` and one derivational suffix (parse/parsing/parser)."""
    root = base_form(word)
    for suffix in _DERIVATIONS:
        if root.endswith(suffix) and len(root) - len(suffix) >= 3:
            return _trim(root[: -len(suffix)])
    return root


def forms(word: str) -> frozenset[str]:
    """``word``, its base form and its stem: suffix stripping guesses (embed is no past tense)."""
    return frozenset((word, base_form(word), stem(word)))


def related(first: str, second: str) -> bool:
    """Whether two words are morphological variants of each other."""
    ours, theirs = forms(first), forms(second)
    if ours & theirs:
        return True
    for a, b in ((a, b) for a in ours for b in theirs):
        short, long_ = sorted((a, b), key=len)
        if len(short) >= 5 and long_.startswith(short) and len(long_) - len(short) <= 3:
            return True
    return False


_STOP_BASES = frozenset(base_form(w) for w in STOPWORDS)
#: what memlog itself writes into text (``[REDACTED]`` in place of a secret): never a label
MARKERS: frozenset[str] = frozenset({"redacted"})


def is_stopword(keyword: str) -> bool:
    """A forbidden generic word (or its plural, past or gerund), a function word, or a
    marker memlog wrote."""
    return (
        keyword in STOPWORDS
        or keyword in FUNCTION_WORDS
        or keyword in MARKERS
        or ("-" not in keyword and base_form(keyword) in _STOP_BASES)
    )


class Grounding:
    """The words of an entry's description and reasoning, to check labels against."""

    def __init__(self, description: str, reasoning: str) -> None:
        self.text = f"{description}\n{reasoning}".lower()
        self.spaced = " ".join(words(self.text))
        self.words = frozenset(words(self.text))
        self._forms = frozenset(f for w in self.words for f in forms(w))

    def grounded(self, keyword: str) -> bool:
        """In the text as a substring (``-`` may stand for a space), or every part a variant."""
        if keyword in self.text or keyword.replace("-", " ") in self.spaced:
            return True
        parts = [p for p in keyword.split("-") if p]
        return bool(parts) and all(self._has_variant(p) for p in parts)

    def _has_variant(self, part: str) -> bool:
        return bool(forms(part) & self._forms) or any(related(part, w) for w in self.words)


def repair(proposed: Iterable[str], grounding: Grounding) -> list[str]:
    """``proposed`` normalised, filtered and deduplicated; at most 10, grounded ones kept first."""
    kept: list[str] = []
    for raw in proposed:
        keyword = normalise_keyword(raw)
        if 2 <= len(keyword) <= MAX_KEYWORD_CHARS and keyword not in kept:
            if not keyword.isdigit() and not is_stopword(keyword):
                kept.append(keyword)
    if len(kept) <= MAX_KEYWORDS:
        return kept
    anchored = {k for k in kept if grounding.grounded(k)}
    chosen = set([k for k in kept if k in anchored][:MAX_KEYWORDS])
    chosen |= set([k for k in kept if k not in anchored][: MAX_KEYWORDS - len(chosen)])
    return [k for k in kept if k in chosen]


def problems(keywords: Sequence[str], grounding: Grounding) -> list[str]:
    """Why ``keywords`` break the rules; empty when they may be recorded."""
    found: list[str] = []
    if not MIN_KEYWORDS <= len(keywords) <= MAX_KEYWORDS:
        found.append(f"{len(keywords)} keywords, not {MIN_KEYWORDS}-{MAX_KEYWORDS}")
    bad = [k for k in keywords if normalise_keyword(k) != k or is_stopword(k)]
    if bad:
        found.append(f"not allowed: {', '.join(bad)}")
    anchored = sum(1 for k in keywords if grounding.grounded(k))
    if anchored < MIN_KEYWORDS:
        found.append(f"only {anchored} taken from the description or reasoning")
    return found


def is_valid(keywords: Sequence[str], grounding: Grounding) -> bool:
    return not problems(keywords, grounding)
