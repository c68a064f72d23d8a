"""The local keyword extractor: deterministic, offline, valid by construction.

Words are the lowercase ``[a-z0-9]`` runs of the description and the
reasoning; a word is *eligible* when it has at least 3 characters, is not
all digits, and is neither a forbidden generic word (or its plural, past or
gerund) nor an English function word.  Eligible words are grouped by stem
(parse, parser and parsing are one group, shown by its most frequent form)
and scored: how often the group occurs, how early it first occurs, whether
it is in the description and in the entry's name, how long (specific) the
word is, and a small preference for noun endings over adverb and past
endings.  Two eligible words written next to each other (``content hash``,
``content-hash``) become a hyphenated label when the pair occurs twice, is
hyphenated in the text, or is in the name; a pair's words are then not
labels of their own (search splits the pair into them anyway).

Up to 3 pairs and 7 single words are kept, ordered by score; verbs and
fillers such as "use" or "make" (``GENERIC_WORDS``) are eligible but only
chosen to make up the numbers.  At least 3 labels are written verbatim in
the lowercased text (single words, or pairs written with their hyphen): when
the text has at least 3 distinct eligible words the labels satisfy
acceptance criterion 5, and when it has fewer every eligible word is a label.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import ClassVar

from memlog.keywords.rules import MAX_KEYWORD_CHARS, is_stopword, stem, words
from memlog.keywords.tiers import KeywordProvider
from memlog.vocabulary import MAX_KEYWORDS

MIN_WORD_CHARS = 3
MAX_WORDS = 7
MAX_PAIRS = 3
#: labels that must appear verbatim in the text (criterion 5 asks for 3)
MIN_LITERAL = 3
_TOKEN = re.compile(r"[a-z0-9]+")
_JOINERS = frozenset({" ", "-"})
_NOUN_ENDINGS = ("tion", "sion", "ment", "ness", "ity", "ance", "ence", "ism", "ure", "age")
_AGENT_ENDINGS = ("er", "or")
_WEAK_ENDINGS = ("ly", "ed", "ous", "ful", "ible", "able")
#: verbs and fillers that say what was done, not what it was about
GENERIC_WORDS: frozenset[str] = frozenset(
    """
    add added adding adds allow allows applied applies apply ask avoid bad become benefit
    benefits best better call called calls case cases clear come consider considered create
    created creates creating define defined defines different easy ensure example exist
    existing exists explore find follow followed following follows found get gets getting
    give given go goes going good got happen happens help helped helps important include
    included includes including inside keep keeps kind know lead leads let lot lots made
    make makes making mean means need needed needs new non old part pre possible problem problems
    provide provided provides put remove removed removes require required requires result
    results right said saw say see seem seems seen set show shows simple specific start
    started step steps sure take taken thing things time times took try trying use used
    useful uses using want wants way ways went work worked working works wrong
    """.split()
)


def eligible(word: str) -> bool:
    """Whether ``word`` (lowercase ``[a-z0-9]+``) may be a label on its own."""
    return (
        MIN_WORD_CHARS <= len(word) <= MAX_KEYWORD_CHARS
        and not word.isdigit()
        and not is_stopword(word)
    )


def eligible_words(text: str) -> list[str]:
    """The distinct eligible words of ``text``, in order of first occurrence."""
    return list(dict.fromkeys(w for w in words(text) if eligible(w)))


@dataclass
class _Group:
    """The occurrences of one stem."""

    first: int
    forms: Counter[str] = field(default_factory=Counter)
    in_description: bool = False

    @property
    def form(self) -> str:
        """The most frequent form; the earliest seen among equals (Counter keeps order)."""
        return self.forms.most_common(1)[0][0]


@dataclass
class _Pair:
    first: int
    count: int = 0
    hyphenated: bool = False


@dataclass(frozen=True)
class _Token:
    word: str
    index: int
    #: what separates it from the previous token ("" for the first)
    gap: str


def _tokens(text: str, offset: int) -> list[_Token]:
    found: list[_Token] = []
    end = 0
    for number, match in enumerate(_TOKEN.finditer(text)):
        gap = text[end : match.start()] if number else ""
        found.append(_Token(match.group(), offset + number, gap))
        end = match.end()
    return found


class _Scores:
    """Word groups and word pairs of one entry, with their scores."""

    def __init__(self, name: str, description: str, reasoning: str) -> None:
        self.name_stems = {stem(w) for w in words(name) if eligible(w)}
        self.name_pairs = set(zip(words(name), words(name)[1:], strict=False))
        self.groups: dict[str, _Group] = {}
        self.pairs: dict[tuple[str, str], _Pair] = {}
        first = _tokens(description.lower(), 0)
        self._read(first, in_description=True)
        self._read(_tokens(reasoning.lower(), len(first)), in_description=False)

    def _read(self, tokens: list[_Token], in_description: bool) -> None:
        previous: _Token | None = None
        for token in tokens:
            if not eligible(token.word):
                previous = None
                continue
            group = self.groups.setdefault(stem(token.word), _Group(token.index))
            group.forms[token.word] += 1
            group.in_description |= in_description
            if token.word in GENERIC_WORDS:  # a label only when nothing better is there
                previous = None
                continue
            if previous is not None and token.gap in _JOINERS and previous.word != token.word:
                pair = self.pairs.setdefault((previous.word, token.word), _Pair(previous.index))
                pair.count += 1
                pair.hyphenated |= token.gap == "-"
            previous = token

    def group_score(self, key: str) -> float:
        group = self.groups[key]
        form = group.form
        score = 1.0 + math.log(group.forms.total())
        score += 1.0 / (1.0 + group.first / 8.0)
        score += 0.6 if group.in_description else 0.0
        score += 1.0 if key in self.name_stems else 0.0
        score += 0.04 * min(len(form), 12)
        if form in GENERIC_WORDS:
            score -= 2.0
        elif form.endswith(_NOUN_ENDINGS):
            score += 0.3
        elif form.endswith(_AGENT_ENDINGS):
            score += 0.15
        elif form.endswith(_WEAK_ENDINGS):
            score -= 0.5
        return score

    def pair_score(self, words_: tuple[str, str]) -> float | None:
        """The pair's score, or None when it is not a label worth keeping."""
        pair = self.pairs[words_]
        named = words_ in self.name_pairs
        if pair.count < 2 and not pair.hyphenated and not named:
            return None
        parts = sum(self.group_score(stem(w)) for w in words_) / 2
        return parts + 0.5 * (pair.count - 1) + 0.5 * pair.hyphenated + 0.8 * named


def _ranked(scored: dict[str, tuple[float, int]]) -> list[str]:
    return sorted(scored, key=lambda k: (-scored[k][0], scored[k][1], k))


def _pick_pairs(scores: _Scores) -> dict[tuple[str, str], tuple[float, int]]:
    """The best pairs, none sharing a word with a better one."""
    found: dict[str, tuple[float, int]] = {}
    for words_, pair in scores.pairs.items():
        score = scores.pair_score(words_)
        label = "-".join(words_)
        if score is not None and len(label) <= MAX_KEYWORD_CHARS:
            found[label] = (score, pair.first)
    chosen: dict[tuple[str, str], tuple[float, int]] = {}
    used: set[str] = set()
    for label in _ranked(found):
        first, second = label.split("-")
        if len(chosen) < MAX_PAIRS and not {first, second} & used:
            chosen[(first, second)] = found[label]
            used |= {first, second}
    return chosen


def extract(name: str, description: str, reasoning: str) -> list[str]:
    """Up to 10 labels for an entry, best first; never raises, needs no network."""
    scores = _Scores(name, description, reasoning)
    groups = {k: (scores.group_score(k), g.first) for k, g in scores.groups.items()}
    pairs = _pick_pairs(scores)
    in_pairs = {w for pair in pairs for w in pair}  # search finds a pair's words anyway
    chosen: dict[str, tuple[float, int]] = {}
    for key in _ranked(groups):
        form = scores.groups[key].form
        if form not in in_pairs and form not in GENERIC_WORDS and len(chosen) < MAX_WORDS:
            chosen[form] = groups[key]
    # at least 3 labels written as such in the text: single words, hyphenated pairs
    literal = len(chosen) + sum(1 for p in pairs if scores.pairs[p].hyphenated)
    for key in _ranked(groups):
        for form in scores.groups[key].forms:  # pair words, generic ones, other forms
            if literal < MIN_LITERAL and form not in chosen:
                chosen[form] = (groups[key][0] - 0.01, groups[key][1])
                literal += 1
    chosen.update({"-".join(p): score for p, score in pairs.items()})
    return _ranked(chosen)[:MAX_KEYWORDS]


class LocalKeywords(KeywordProvider):
    """The deterministic extractor as a tier: the last resort, always available."""

    name: ClassVar[str] = "local"
    #: its labels are recorded even when the text has fewer than 3 eligible words
    strict: ClassVar[bool] = False

    def label(self, name: str, description: str, reasoning: str) -> list[str]:
        return extract(name, description, reasoning)
