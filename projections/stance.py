"""Whether two lessons say opposite things: a cheap check, without a model.

A lesson's **stance** is what it tells to do or not to do: its name and the
first sentence of its description, read as a directive.  An anti-pattern that
describes an act ("Using ``find .`` in hooks") names what to avoid, a pattern
or heuristic what to do; a directive negation (never, do not, avoid, skip …)
turns either around, so "Never skip the matrix" and an anti-pattern "Skipping
the matrix" agree.  An anti-pattern that describes a situation ("Plans that
cite line numbers go stale") has no stance the check can read: it is never
said to contradict anything.  Its **topic** is the stems of that statement
without the words that only say yes or no; its **conditions** the stems of the
clauses that limit it (when, if, unless, only, during …).

Two lessons **contradict** when their topics are mostly the same (the share
of the smaller topic the other holds reaches ``OVERLAP``, or their vectors'
cosine reaches ``COSINE``), their stances are opposite, and neither is limited
by a condition the other never mentions: "never X in Y" does not contradict
"always X", since it keeps to Y (both may stand; the condition that separates
them is in their text).  Measured on lessons written against real entries of
the fixtures' banks (``tests/capture/test_contradiction.py``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from memlog.projections.model import Entry
from memlog.projections.terms import terms

#: the share of the smaller topic that the other must hold, and of both together (Dice)
OVERLAP = 0.5
DICE = 0.25
#: the share of a condition's stems the other lesson must lack for it to separate them
UNSAID = 0.5
#: or the cosine of their vectors (in the space in force) that makes them one topic
COSINE = 0.75
#: a negation, lower case or capitalised (``MUST NOT`` in capitals names a rule, as quoted)
_NEGATION = re.compile(
    r"\b(?:[Nn]ever|[Nn]ot|[Dd]on'?t|[Dd]oesn'?t|[Mm]ustn'?t|[Ss]houldn'?t|[Aa]void(?:s|ing)?|"
    r"[Ss]top(?:s|ping)?|[Ss]kip(?:s|ping)?|[Ii]gnor(?:e|es|ing)|[Nn]o longer|"
    r"[Rr]efus(?:e|es|ing))\b"
)
#: "X without Y" (or "rather than Y") names the fault of an anti-pattern: Y was not done
#: (in a pattern, often a virtue: "without downtime"), so it turns only an anti-pattern around
_LACKING = re.compile(r"\b(?:[Ww]ithout|[Rr]ather than|[Ii]nstead of)\b")
#: quoted text (``MUST NOT`` in quotes names a thing, it negates nothing)
_QUOTED = re.compile(r"\"[^\"]*\"|`[^`]*`|'[^'\s][^']*'")
_CONDITION = re.compile(
    r"\b(?:when|whenever|if|unless|only|during|while|where|once|under|except|until)\b"
    r"([^.;:,()]*)",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"(?<=[.!?;])\s")
#: words ending in -ing that name no act
_NOT_ACTS = frozenset(
    "during according including regarding concerning following pending string thing nothing "
    "something everything anything bring spring ring king sing wing morning evening".split()
)
#: stems that only say yes or no, or how strongly
_DIRECTIVE = frozenset(
    terms("never not don't avoid avoiding stop skip ignore always use using make keep do does "
          "should must instead rather prefer preferring every any all each")
)  # fmt: skip


class Stance(NamedTuple):
    """What a lesson tells: do (``negative`` False) or do not, about ``topic``, limited to
    ``conditions`` (None: an anti-pattern that describes no act, a situation or an
    observation, whose stance the check cannot read); ``words``: every stem of its
    statement."""

    negative: bool | None
    topic: frozenset[str]
    conditions: frozenset[str]
    words: frozenset[str]


def statement(name: str, description: str) -> str:
    """The directive a lesson states: its name and the first sentence of its description."""
    first = _SENTENCE.split(description.strip(), maxsplit=1)[0]
    return f"{name}. {first}"


def stance(name: str, description: str, category: str) -> Stance:
    text = statement(name, description)
    bare = _QUOTED.sub(" ", text)
    negated = bool(_NEGATION.search(bare)) or (
        category == "anti-patterns" and bool(_LACKING.search(bare)))  # fmt: skip
    words = frozenset(terms(text))
    conditions = frozenset(t for clause in _CONDITION.findall(bare) for t in terms(clause))
    negative: bool | None = negated
    if category == "anti-patterns":
        negative = not negated if describes_act(name, description) else None
    return Stance(negative, words - _DIRECTIVE, conditions - _DIRECTIVE, words)


def describes_act(name: str, description: str) -> bool:
    """Whether a lesson reads as an act (``Using find . in hooks``, ``Breaking a file into
    tasks``): how an anti-pattern names what to avoid."""
    for text in (description, name):
        first = re.match(r"\W*([A-Za-z]+)", text)
        if first is not None:
            word = first.group(1).lower()
            if word.endswith("ing") and len(word) > 4 and word not in _NOT_ACTS:
                return True
    return False


def of(entry: Entry) -> Stance:
    return stance(entry.name, entry.description, entry.category)


def same_topic(a: Stance, b: Stance, cosine: float | None = None) -> bool:
    """Mostly the same topic: the smaller one held by the other at ``OVERLAP`` and both
    together at ``DICE`` (a short name shares a few words with any long lesson), or
    their vectors at ``COSINE``."""
    if cosine is not None and cosine >= COSINE:
        return True
    shared, smaller = len(a.topic & b.topic), min(len(a.topic), len(b.topic))
    dice = 2 * shared / (len(a.topic) + len(b.topic)) if smaller else 0.0
    return smaller > 0 and shared / smaller >= OVERLAP and dice >= DICE


def separated(a: Stance, b: Stance) -> bool:
    """Whether either is limited by a condition the other mostly never mentions."""
    return _limits(a, b) or _limits(b, a)


def _limits(a: Stance, b: Stance) -> bool:
    return bool(a.conditions) and len(a.conditions - b.words) / len(a.conditions) >= UNSAID


def contradicts(a: Stance, b: Stance, cosine: float | None = None) -> bool:
    if a.negative is None or b.negative is None or a.negative == b.negative:
        return False
    return same_topic(a, b, cosine) and not separated(a, b)


def reason(older: Entry, newer: Entry) -> str:
    """Why ``newer`` replaces ``older``, in one line."""
    said = _SENTENCE.split(newer.description.strip(), maxsplit=1)[0]
    return f"contradicted by the newer lesson {newer.name!r}: {said}"


class Clash(NamedTuple):
    """A lesson left out of a block because a better-placed one says the opposite."""

    dropped: str
    kept: str


def clashes(entries: Sequence[Entry]) -> list[Clash]:
    """Of ``entries`` (best first), each that contradicts one before it: the newer of the
    two stays (newer knowledge wins), the other is dropped; never two that contradict."""
    stances = [of(e) for e in entries]
    dropped: dict[str, str] = {}
    for i, later in enumerate(entries):
        for j in range(i):
            earlier = entries[j]
            if earlier.id in dropped or later.id in dropped:
                continue
            if contradicts(stances[j], stances[i]):
                older, newer = sorted((earlier, later), key=_age)
                dropped[older.id] = newer.id
    return [Clash(d, k) for d, k in dropped.items()]


def _age(entry: Entry) -> tuple[str, int]:
    return entry.created_at, entry.created_seq


def pairs(entries: Iterable[Entry]) -> list[tuple[Entry, Entry]]:
    """Every pair of ``entries`` that contradict each other."""
    listed = list(entries)
    stances = [of(e) for e in listed]
    return [
        (listed[i], listed[j])
        for i in range(len(listed))
        for j in range(i + 1, len(listed))
        if contradicts(stances[i], stances[j])
    ]
