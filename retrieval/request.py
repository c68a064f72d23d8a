"""What to inject for, and what was chosen.

A ``Request`` is a workspace plus the time available and the caller's
wishes (a limit, a query of its own, categories).  Every caller builds one
here: the hook with ``Request.hook`` (its budget, a bounded catch-up), the
CLI and the MCP server with ``Request.interactive`` (a long deadline).
``Injection`` is the answer: the block of text and every entry chosen with
the components of its score.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from typing import cast

import msgspec

from memlog.config import Config
from memlog.home import Home
from memlog.vocabulary import CATEGORIES, KB_CATEGORIES, PROMPT_RECALL_MAX_CHARS
from memlog.workspace import Workspace

#: seconds the CLI and the MCP server give a ranking, the query embedding included
INTERACTIVE_SECONDS = 60.0
#: a view further behind than this is caught up in the background, not in the hook
HOOK_CATCH_UP_BYTES = 2 << 20
#: a prompt's recall has less time: a view further behind is caught up in the background
PROMPT_CATCH_UP_BYTES = 256 << 10
#: seconds the hook waits for another writer of memory.db before reading the view as it is
HOOK_LOCK_WAIT = 0.25


class Request(msgspec.Struct, frozen=True):
    """What to inject for: a workspace, the time available, and the caller's choices."""

    ws: Workspace
    #: ``time.monotonic()`` by which the answer must be ready
    deadline: float
    limit: int | None = None
    #: the caller's own query (search); ``None``: built from the project's context
    query: str | None = None
    catch_up: bool = True
    #: search: only these categories, best first, no category balance
    categories: tuple[str, ...] | None = None
    #: a larger catch-up is left to a background process (None: no limit)
    max_catch_up_bytes: int | None = None
    #: seconds the query embedding may take (default: the configured budget)
    embed_budget: float | None = None
    #: read the SQLite view even when the configuration asks for the markdown pipeline
    semantic_only: bool = False
    #: seconds to wait for another writer of the view before reading it as it stands
    #: (None: the database's busy timeout)
    lock_wait: float | None = None
    #: the iflow drop-in: the markdown pipeline prints what memory.py printed, nothing more
    drop_in: bool = False
    #: entries that may not be chosen, each with the reason (already in the session's
    #: context: ``retrieval.in_context``); they still count in the statistics
    excluded: dict[str, str] = msgspec.field(default_factory=dict)
    #: entries a resumed session already received: chosen as a fresh start would choose
    #: them, taking their places, but not injected again
    received: frozenset[str] = frozenset()
    #: characters the block may take (None: no limit): entries are condensed, then left
    #: out, to fit (``retrieval.budget``)
    max_chars: int | None = None
    #: a prompt's recall: only entries whose relevance reaches this floor are chosen, at
    #: most ``PROMPT_RECALL_ENTRIES`` of them (None: no floor, a start or a search)
    floor: float | None = None

    @classmethod
    def hook(cls, ws: Workspace, deadline: float) -> Request:
        """The SessionStart hook's request: its deadline, a bounded catch-up."""
        return cls(ws, deadline, max_catch_up_bytes=HOOK_CATCH_UP_BYTES, lock_wait=HOOK_LOCK_WAIT)

    @classmethod
    def prompt(cls, ws: Workspace, deadline: float, text: str, limit: int) -> Request:
        """A prompt's recall: its text ranked as a search of the injected categories, the
        best ``limit`` that the session does not hold, then the floor."""
        config = ws.config
        categories = CATEGORIES if config.memory_inject_facts else KB_CATEGORIES
        return cls(
            ws, deadline, limit=limit, query=text, categories=categories, semantic_only=True,
            max_catch_up_bytes=PROMPT_CATCH_UP_BYTES, lock_wait=HOOK_LOCK_WAIT,
            floor=config.memory_relevance_floor, max_chars=PROMPT_RECALL_MAX_CHARS,
        )  # fmt: skip

    @classmethod
    def interactive(
        cls,
        ws: Workspace,
        limit: int | None = None,
        query: str | None = None,
        categories: Sequence[str] | None = None,
    ) -> Request:
        """A request from a person or a client that can wait: the CLI, MCP, the page.

        With a ``query`` it is a search: the SQLite view, the categories given
        (all by default), best first.
        """
        search = query is not None
        return cls(
            ws, time.monotonic() + INTERACTIVE_SECONDS, limit=limit, query=query,
            categories=tuple(categories or CATEGORIES) if search else None,
            embed_budget=INTERACTIVE_SECONDS / 2, semantic_only=search,
        )  # fmt: skip

    @property
    def config(self) -> Config:
        return self.ws.config

    @property
    def home(self) -> Home:
        return self.ws.home

    @property
    def embedding_budget(self) -> float:
        if self.embed_budget is not None:
            return self.embed_budget
        return self.config.memory_query_embedding_budget_ms / 1000

    @property
    def effective_limit(self) -> int:
        return self.config.memory_injection_limit if self.limit is None else self.limit

    @property
    def injected_categories(self) -> tuple[str, ...]:
        """The categories the hook ranks: an entry's score is always the one it has among
        them (``reference``), whatever else a search shows."""
        return CATEGORIES if self.config.memory_inject_facts else KB_CATEGORIES

    @property
    def wanted_categories(self) -> tuple[str, ...]:
        """The categories to rank: the injected ones, and the caller's."""
        injected = self.injected_categories
        asked = dict.fromkeys(self.categories or ())
        return injected + tuple(c for c in asked if c not in injected)

    def reference(self, categories: Sequence[str]) -> Sequence[bool] | None:
        """Which candidates (of these categories) the statistics are taken over: the
        injected ones (None: all of them)."""
        kept = among(categories, self.injected_categories)
        count = counted(kept)
        return None if count in (0, len(kept)) else kept

    def shown(self, categories: Sequence[str], ids: Sequence[str] = ()) -> Sequence[bool] | None:
        """Which candidates may be chosen: those of the caller's categories that are not
        ``excluded`` (None: all)."""
        if self.categories is None and not self.excluded:
            return None
        kept = among(categories, self.categories) if self.categories else None
        if self.excluded:
            given = [True] * len(ids) if kept is None else kept
            kept = [k and i not in self.excluded for k, i in zip(given, ids, strict=True)]
        return None if kept is None or counted(kept) == len(kept) else kept


def among(categories: Sequence[str], names: Collection[str]) -> Sequence[bool]:
    """Which of ``categories`` are one of ``names`` (the packed records' codes compared
    whole, when the candidates are theirs)."""
    whole = getattr(categories, "among", None)
    if whole is not None:
        return cast("Sequence[bool]", whole(names))
    return [c in names for c in categories]


def counted(kept: Sequence[bool]) -> int:
    """How many are true (a numpy mask's own sum)."""
    total = getattr(kept, "sum", None)
    return int(total()) if total is not None else sum(kept)


class Chosen(msgspec.Struct):
    id: str
    name: str
    category: str
    origin: str  # "local" (this project) or "global"
    score: float
    components: dict[str, float] = msgspec.field(default_factory=dict)
    #: injected condensed (name, description, one metadata line) to fit the budget
    condensed: bool = False
    #: the files it cites are gone from the project: what the block says of it
    stale: str = ""


class LeftOut(msgspec.Struct):
    """An entry the ranking would have chosen that the block does not hold, and why."""

    id: str
    name: str
    category: str
    reason: str


class Injection(msgspec.Struct):
    text: str
    mode: str
    chosen: list[Chosen] = msgspec.field(default_factory=list)
    #: what the ranking asked for ``context``, the text it ranked (the hook's, built from
    #: the project, or the searcher's): ``memlog search CONTEXT`` ranks the same
    query: str | None = None
    total: int = 0
    vector_matches: int = 0
    fts_matches: int = 0
    model: str = ""
    timings: dict[str, float] = msgspec.field(default_factory=dict)
    notes: list[str] = msgspec.field(default_factory=list)
    context: str | None = None
    #: chosen but not in the block (no room), or not chosen because already in context
    left_out: list[LeftOut] = msgspec.field(default_factory=list)
    #: entries that matched and were not injected (the block's last line says how many)
    more: int = 0
    #: the entries of the Branch Memory block the text holds
    branch_ids: list[str] = msgspec.field(default_factory=list)
