"""Labelling entries: the tiers the configuration names, one ``entry.labelled`` each.

``memory_keyword_provider`` names the generator; keywords the writer gave
with an entry (the ``caller`` tier) come first whenever they pass the rules,
because the model that wrote the entry knows it best and they cost nothing:

=========  ==========================================================
``local``  caller, local (the default; ``auto``, from older
           configurations, is the same)
``haiku``  caller, haiku, local: the text goes to the Messages API
``ollama`` caller, ollama, local: the text goes to an Ollama server
``caller`` caller only: nothing is generated, entries without valid
           keywords keep what they have
``off``    nothing: no ``entry.labelled`` events
=========  ==========================================================

An entry's text leaves the machine for labels only when the configuration
names a remote labeller: an API key in the environment (set for Claude
Code, often) is no consent.  The local extractor closes every generating
chain: it needs no network, is deterministic and always satisfies the rules
when the text allows, so an entry is never left unlabelled because a
service was down; a named remote tier that cannot be used is reported.  The
HTTP tiers are imported only when a chain uses them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from typing import TYPE_CHECKING, NamedTuple, Protocol

from memlog.config import Config
from memlog.eventlog.events import Labelled
from memlog.eventlog.log import EventLog
from memlog.keywords.local import LocalKeywords
from memlog.keywords.tiers import CallerKeywords, KeywordProvider, Tiered

if TYPE_CHECKING:
    import httpx

TIER_TIMEOUT = 5.0
CHAINS: dict[str, tuple[str, ...]] = {
    "auto": ("caller", "local"),
    "haiku": ("caller", "haiku", "local"),
    "ollama": ("caller", "ollama", "local"),
    "local": ("caller", "local"),
    "caller": ("caller",),
    "off": (),
}


class Labelable(Protocol):
    """What labelling reads of an entry."""

    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def reasoning(self) -> str: ...
    @property
    def keywords(self) -> Sequence[str]: ...


class Labelling(NamedTuple):
    #: the events appended, as stored
    events: list[Labelled]
    #: what went wrong on the way, one line each (warnings, not errors)
    notes: list[str]


def needs_labels(entry: Labelable, supplied: Mapping[str, Sequence[str]]) -> bool:
    """Whether to label ``entry``: it has no keywords, and its writer gave none.

    Keywords a writer gave (or an imported file had) are kept as given, even
    when they break the generators' rules: a writer is told what was changed
    (``observe.keyword_notes``), never overruled.
    """
    return not supplied.get(entry.id) and not entry.keywords


def build_tiers(
    mode: str,
    supplied: Mapping[str, Sequence[str]],
    client: httpx.Client | None = None,
    env: Mapping[str, str] = os.environ,
    timeout: float = TIER_TIMEOUT,
) -> list[KeywordProvider]:
    """The tiers of ``mode`` in order; the HTTP ones need ``client``."""
    tiers: list[KeywordProvider] = []
    for name in CHAINS[mode]:
        if name == "caller":
            tiers.append(CallerKeywords(supplied))
        elif name == "local":
            tiers.append(LocalKeywords())
        elif client is not None:
            from memlog.keywords.remote import TIERS

            tiers.append(TIERS[name](client, env=env, timeout=timeout))
    return tiers


def _uses_http(mode: str) -> bool:
    return any(name in ("haiku", "ollama") for name in CHAINS[mode])


def label_entries(
    log: EventLog,
    entries: Sequence[Labelable],
    config: Config,
    supplied: Mapping[str, Sequence[str]] | None = None,
    *,
    client: httpx.Client | None = None,
    env: Mapping[str, str] = os.environ,
    timeout: float = TIER_TIMEOUT,
) -> Labelling:
    """Label ``entries`` and append one ``entry.labelled`` event each, as one batch.

    ``supplied`` maps entry ids to the keywords the writer gave; ``client``
    is used by the HTTP tiers (one is made and closed here when needed).
    """
    mode = config.memory_keyword_provider
    if mode not in CHAINS or not CHAINS[mode] or not entries:
        return Labelling([], [])
    with ExitStack() as stack:
        if client is None and _uses_http(mode):
            from memlog.llm.http import make_client

            client = stack.enter_context(make_client())
        chain = Tiered(build_tiers(mode, supplied or {}, client, env, timeout))
        events = [
            Labelled(entry_id=entry.id, keywords=tuple(found.keywords), provider=found.provider)
            for entry in entries
            if (found := chain.pick(entry.name, entry.description, entry.reasoning))
        ]
    return Labelling(log.append(events), chain.notes)
