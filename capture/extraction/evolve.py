"""Turning extractions and evolution operations into events that never destroy memory.

A branch memory changes only through events: ``add`` is an
``entry.observed``; ``update`` a new entry and an ``entry.superseded`` (old →
new) scoped to the branch; ``remove`` an ``entry.retired`` scoped to the
branch, with the model's reason; ``keep`` nothing.  One ``memory.evolved``
records every operation.  Entries are named by the hash of their text, so
the same statement extracted twice is the same entry: it is never added
twice, and an operation that would remove or replace a statement the new
extractions just repeated is turned into ``keep``.

Three modes: ``created`` (the branch had no memory: every new item is
added), ``evolved`` (the model's operations, validated in ``answers``) and
``fallback`` (evolution was rejected or not possible: new items are added
unless their hash or a near-duplicate (``similar``) is already there).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from memlog.capture.extraction.answers import Extraction, Op
from memlog.capture.extraction.prompts import Scope
from memlog.eventlog.events import (
    EventBase,
    MemoryEvolved,
    Observed,
    Operation,
    Retired,
    Superseded,
    Usage,
    content_hash,
)
from memlog.projections.fold import Entry, branch_key
from memlog.vocabulary import SECTION_CATEGORIES, Confidence

NAME_CHARS = 80
#: a name ending at a clause boundary is at least this long, and at most this long when
#: no boundary comes within ``NAME_CHARS``
MIN_NAME_CHARS = 20
LONG_NAME_CHARS = 120
#: where a clause ends inside a sentence: punctuation, a dash, or a joining word
_CLAUSE = re.compile(
    r"[,;:]\s|\s[(\u2013\u2014-]\s?|\s(?=(?:because|since|so that|so|which|when|where|while"
    r"|unless|but|otherwise|instead of|rather than|to avoid|or else)\s)"
)
#: the confidence of an item the model added without one of its own
DEFAULT_CONFIDENCE = 0.6
#: for each new text, the id of an existing entry saying nearly the same, or None
Similar = Callable[[Sequence[str], Sequence[Entry]], list[str | None]]
_SENTENCE = re.compile(r"(?<=[.!?])\s")


def name_of(text: str) -> str:
    """A short name for an item, never cut within a phrase: its first sentence; one longer
    than ``NAME_CHARS`` ends at its last clause boundary within them (a comma, a colon, a
    dash, "because", "when" …), else at its first one within ``LONG_NAME_CHARS``, else it
    is kept whole."""
    first = _SENTENCE.split(text.strip(), maxsplit=1)[0].strip()
    if len(first) <= NAME_CHARS:
        return first.rstrip(" .,;:") or text.strip()
    ends = [m.start() for m in _CLAUSE.finditer(first) if m.start() >= MIN_NAME_CHARS]
    short = [end for end in ends if end <= NAME_CHARS]
    longer = [end for end in ends if end <= LONG_NAME_CHARS]
    end = short[-1] if short else longer[0] if longer else len(first)
    return first[:end].rstrip(" .,;:")


def confidence_of(value: float) -> Confidence:
    return "high" if value >= 0.8 else "medium" if value >= 0.5 else "low"


@dataclass
class Plan:
    """The events one scope's change makes, and its audit."""

    scope: Scope
    mode: str
    events: list[EventBase] = field(default_factory=list)
    operations: list[Operation] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: entries live in the branch memory once the events apply
    live: set[str] = field(default_factory=set)

    @property
    def key(self) -> str:
        return branch_key(*self.scope)

    @property
    def changes(self) -> int:
        return sum(1 for op in self.operations if op.op != "keep")

    def audit(self, session_id: str, usage: Usage) -> MemoryEvolved:
        return MemoryEvolved(
            project=self.scope.project, branch=self.scope.branch, mode=self.mode,
            session_id=session_id, operations=tuple(self.operations),
            note="; ".join(self.notes), usage=usage,
        )  # fmt: skip

    def observe(self, section: str, text: str, confidence: float, session_id: str) -> str:
        """Add ``text`` to the memory (nothing when it is there already); its entry id."""
        entry_id = content_hash(text)
        if entry_id in self.live:
            self.keep(entry_id, "already in the branch memory")
            return entry_id
        self.events.append(
            Observed(
                name=name_of(text),
                description=text,
                category=SECTION_CATEGORIES[section],
                confidence=confidence_of(confidence),
                source="extraction",
                project=self.scope.project,
                branch=self.scope.branch,
                section=section,  # type: ignore[arg-type]
                origin=f"claude-code-session:{session_id}" if session_id else "",
            )  # fmt: skip
        )
        self.operations.append(
            Operation(
                op="add", entry_id=entry_id, section=section, text=text, confidence=confidence
            )  # fmt: skip
        )
        self.live.add(entry_id)
        return entry_id

    def keep(self, entry_id: str, reason: str = "") -> None:
        self.operations.append(Operation(op="keep", entry_id=entry_id, reason=reason))


def created(scope: Scope, items: Sequence[Extraction], session_id: str) -> Plan:
    """A branch without memory: every item is added (each statement once)."""
    plan = Plan(scope, "created")
    for item in items:
        plan.observe(item.section, item.content, item.confidence, session_id)
    return plan


def fallback(
    scope: Scope,
    existing: Sequence[Entry],
    items: Sequence[Extraction],
    session_id: str,
    similar: Similar | None,
    why: str,
) -> Plan:
    """New items added unless their hash or a near-duplicate is there already."""
    plan = Plan(scope, "fallback", notes=[f"fell back to adding new items: {why}"])
    plan.live = {e.id for e in existing}
    nearest: list[str | None] = [None] * len(items)
    if similar is not None and existing:
        try:
            nearest = similar([i.content for i in items], existing)
        except Exception as exc:  # noqa: BLE001 - the check is a refinement, never a failure
            plan.notes.append(f"near-duplicate check unavailable ({exc})")
    for item, near in zip(items, nearest, strict=True):
        if near is not None and content_hash(item.content) not in plan.live:
            plan.keep(near, f"near-duplicate of the new item: {item.content}")
            continue
        plan.observe(item.section, item.content, item.confidence, session_id)
    return plan


def evolved(
    scope: Scope,
    existing: Sequence[Entry],
    items: Sequence[Extraction],
    ops: Sequence[Op],
    session_id: str,
) -> Plan:
    """The model's operations as events (validated already; see ``answers.operations``)."""
    plan = Plan(scope, "evolved")
    plan.live = {e.id for e in existing}
    repeated = {content_hash(i.content) for i in items}
    given = {content_hash(i.content): i.confidence for i in items}
    for op in ops:
        if op.op == "add":
            confidence = given.get(content_hash(op.content), DEFAULT_CONFIDENCE)
            plan.observe(str(op.section), op.content, confidence, session_id)
            continue
        assert op.id is not None
        old = existing[op.id - 1]
        if op.op == "keep" or old.id in repeated:
            plan.keep(old.id, op.reason if op.op == "keep" else "the new extractions repeat it")
        elif op.op == "remove":
            _remove(plan, old, op.reason)
        else:
            _update(plan, old, op, session_id)
    return plan


def _remove(plan: Plan, old: Entry, reason: str) -> None:
    plan.events.append(Retired(entry_id=old.id, reason=reason, branch=plan.key))
    plan.operations.append(Operation(op="remove", entry_id=old.id, reason=reason))
    plan.live.discard(old.id)


def _update(plan: Plan, old: Entry, op: Op, session_id: str) -> None:
    new_id = content_hash(op.content)
    if new_id == old.id:
        plan.keep(old.id, "the update says the same")
        return
    section = op.section or old.section
    plan.observe(section, op.content, _confidence(old.confidence), session_id)
    plan.operations[-1] = Operation(
        op="update", entry_id=old.id, by=new_id, section=section, text=op.content,
        reason=op.reason,
    )  # fmt: skip
    plan.events.append(Superseded(entry_id=old.id, by=new_id, reason=op.reason, branch=plan.key))
    plan.live.discard(old.id)


def _confidence(level: str) -> float:
    return {"high": 0.9, "medium": 0.6, "low": 0.3}.get(level, DEFAULT_CONFIDENCE)
