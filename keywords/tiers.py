"""The keyword provider interface and the chain of tiers behind it.

A ``KeywordProvider`` has one method, ``label(name, description,
reasoning)``, returning proposed labels.  It raises ``ProviderUnavailable``
when it cannot be used here (no keyword supplied, no API key, no server)
and ``ProviderError`` when it failed (timeout, refusal, an answer that is
not a JSON array).

``Tiered`` is itself a provider: it asks its tiers in order and the first
whose repaired answer is valid (``rules.problems`` finds nothing) wins; a
tier that is not ``strict`` (the local extractor) is accepted with any
non-empty answer.  A tier that was unavailable or failed is not asked again
during the same batch, so a dead server costs one timeout, not one per
entry; an invalid answer only moves that entry on to the next tier.  What
went wrong is kept in ``notes``, once per tier and kind (a remote tier is
only ever in the chain because its user named it, so its absence is news).
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from memlog.errors import ProviderError, ProviderUnavailable
from memlog.eventlog.events import content_hash
from memlog.keywords.rules import Grounding, problems, repair


class KeywordProvider(abc.ABC):
    """Something that proposes keyword labels for an entry."""

    name: ClassVar[str]
    #: whether an answer must pass every rule to be used
    strict: ClassVar[bool] = True

    @abc.abstractmethod
    def label(self, name: str, description: str, reasoning: str) -> list[str]:
        """Proposed labels for the entry; raise ``ProviderError`` when there are none."""

    def close(self) -> None:  # noqa: B027 - optional hook, most tiers hold nothing
        """Release what the provider holds; a no-op by default."""


class CallerKeywords(KeywordProvider):
    """Labels the writer gave with the entry (``memlog observe --keyword``), by entry id."""

    name: ClassVar[str] = "caller"

    def __init__(self, supplied: Mapping[str, Sequence[str]]) -> None:
        self.supplied = supplied

    def label(self, name: str, description: str, reasoning: str) -> list[str]:
        given = self.supplied.get(content_hash(description))
        if not given:
            raise ProviderUnavailable("caller: no keywords were given")
        return list(given)


@dataclass(frozen=True)
class Labels:
    keywords: list[str]
    #: the tier that produced them
    provider: str


class Tiered(KeywordProvider):
    """Tiers asked in order; the first valid answer wins."""

    name: ClassVar[str] = "tiered"

    def __init__(self, tiers: Sequence[KeywordProvider]) -> None:
        self.tiers = list(tiers)
        self.notes: list[str] = []
        self._down: set[str] = set()
        self._noted: set[str] = set()

    def label(self, name: str, description: str, reasoning: str) -> list[str]:
        found = self.pick(name, description, reasoning)
        if found is None:
            raise ProviderError("no keyword tier gave valid keywords")
        return found.keywords

    def pick(self, name: str, description: str, reasoning: str) -> Labels | None:
        """The first valid labels and the tier they came from; None when no tier gave any."""
        grounding = Grounding(description, reasoning)
        for tier in self.tiers:
            if tier.name in self._down:
                continue
            keywords = self._ask(tier, name, description, reasoning)
            if keywords is None:
                continue
            keywords = repair(keywords, grounding)
            wrong = problems(keywords, grounding) if tier.strict else []
            if keywords and not wrong:
                return Labels(keywords, tier.name)
            if tier.strict:
                why = "; ".join(wrong)
                self._note(tier.name + "/rules", f"{tier.name}: keywords not used ({why})")
        return None

    def _ask(
        self, tier: KeywordProvider, name: str, description: str, reasoning: str
    ) -> list[str] | None:
        try:
            return tier.label(name, description, reasoning)
        except ProviderUnavailable as exc:
            if tier.name != "caller":  # the caller tier is per entry: never down
                self._down.add(tier.name)
                self._note(tier.name, str(exc))
        except ProviderError as exc:
            self._down.add(tier.name)
            self._note(tier.name, str(exc))
        return None

    def _note(self, key: str, line: str) -> None:
        """Keep ``line`` unless a note under ``key`` was kept already."""
        if key not in self._noted:
            self._noted.add(key)
            self.notes.append(line)

    def close(self) -> None:
        for tier in self.tiers:
            tier.close()
