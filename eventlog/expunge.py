"""Taking a secret out of the log after the fact: what ``memlog redact`` does to the lines.

The text to remove is either given (``--match TEXT``: every occurrence) or
found by the redaction rules in the events of one entry.  Every line that
holds it is rewritten in place (``rewrite``), with the text replaced by
``[REDACTED]`` and the redaction recorded on the event (field and class);
an ``entry.description`` that changes keeps the entry's id in ``stable_id``,
so the entry keeps its identity and its history.  Keyword labels cut from
the text go with it.  One ``entry.redacted`` event closes the rewrite: which
entries, why, and where text was removed — never the text itself.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from typing import Any, NamedTuple

import msgspec

from memlog.errors import InvalidInput
from memlog.eventlog import redaction_journal, rewrite
from memlog.eventlog.bounds import SLICE_BYTES, slices
from memlog.eventlog.events import Event, Finding, Observed, Recalled, Redacted, Removal
from memlog.eventlog.log import EventLog
from memlog.eventlog.redaction import REDACTED, redact, remove
from memlog.eventlog.secrets import text_fields

MIN_MATCH = 4
_FOLD = re.compile(r"[^a-z0-9]+")


class NothingFound(InvalidInput):
    """The text (or a secret the rules know) is nowhere in the events looked at."""


class Target(NamedTuple):
    """What to remove: ``needle`` (or what the rules find when None), from the events of
    ``entry_id`` (or from every event when None)."""

    entry_id: str | None
    needle: str | None


class Expunged(NamedTuple):
    """The ``entry.redacted`` event as stored, the texts removed (to scrub copies of them
    elsewhere), and how many lines were rewritten or scrubbed."""

    event: Redacted
    removed: tuple[str, ...]
    events: int
    scrubbed: int


def check_target(target: Target) -> None:
    if target.entry_id is None and target.needle is None:
        raise InvalidInput("give an entry id, --match TEXT, or both")
    needle = target.needle
    if needle is not None and (len(needle.strip()) < MIN_MATCH or REDACTED in needle):
        raise InvalidInput(f"--match needs at least {MIN_MATCH} characters of the secret itself")


def expunge(log: EventLog, target: Target, reason: str) -> Expunged:
    """Remove the target's text from every line of ``log``; InvalidInput when it is nowhere."""
    check_target(target)
    if not reason.strip():
        raise InvalidInput("--reason is empty; say why the text is removed")
    cutter = _Cutter(target)

    def closing(done: rewrite.Rewritten) -> list[Redacted]:
        if not cutter.removals:
            return []
        texts = tuple(dict.fromkeys(cutter.texts))  # before the rewrite commits: a run
        journal = redaction_journal.Pending(target.entry_id, target.needle, reason, texts)
        redaction_journal.begin(log.home, journal)  # killed after it is finished by the next
        return _events(target, cutter, reason)

    done = rewrite.rewrite(log, cutter.edit, lambda line: _scrub(line, target.needle), closing)
    if not done.appended:
        raise NothingFound(_nothing_found(target))
    stored = [e for e in done.appended if isinstance(e, Redacted)]
    event = msgspec.structs.replace(
        stored[0],
        ids=tuple(i for e in stored for i in e.ids),
        removed=tuple(r for e in stored for r in e.removed),
    )  # one event, or several when the lists are long: reported as one
    return Expunged(event, tuple(dict.fromkeys(cutter.texts)), len(done.events), done.scrubbed)


def replace_lines(
    log: EventLog, wanted: dict[str, Event], reason: str, texts: tuple[str, ...],
    accept: Callable[[Event, Event], bool],
) -> Expunged:  # fmt: skip
    """Put the events ``wanted`` (by id: this device's lines with text taken out, as
    another device asked) in place of the lines that hold those events now, each only
    when ``accept(new, old)``; one ``entry.redacted`` event records where text went
    (``texts``: what was taken out, for the copies elsewhere in the home).  NothingFound
    when no line changes."""
    removals: list[Removal] = []
    entries: set[str] = set()

    def edit(event: Event) -> Event | None:
        new = wanted.get(event.id)
        if new is None or new.seq != event.seq or new == event or not accept(new, event):
            return None
        for field in new.redacted:
            count = str(getattr(new, field, "")).count(REDACTED) - str(
                getattr(event, field, "")
            ).count(REDACTED)
            if count > 0 or getattr(new, field, None) != getattr(event, field, None):
                removals.append(Removal(event.seq, field, max(count, 1), "request"))
        if not isinstance(event, Recalled):
            entries.update(event.entry_ids)
        return new

    def closing(done: rewrite.Rewritten) -> list[Redacted]:
        if not removals:
            return []
        redaction_journal.begin(log.home, redaction_journal.Pending(None, None, reason, texts))
        ids, where = slices(sorted(entries), SLICE_BYTES // 2), slices(removals, SLICE_BYTES // 2)
        count = max(len(ids), len(where))
        ids += [()] * (count - len(ids))
        where += [()] * (count - len(where))
        return [Redacted(ids=i, reason=reason, kind="request", removed=w)
                for i, w in zip(ids, where, strict=True)]  # fmt: skip

    done = rewrite.rewrite(log, edit, lambda line: line, closing)
    if not done.appended:
        raise NothingFound("the lines asked for are no longer as they were; nothing was changed")
    stored = [e for e in done.appended if isinstance(e, Redacted)]
    event = msgspec.structs.replace(
        stored[0],
        ids=tuple(i for e in stored for i in e.ids),
        removed=tuple(r for e in stored for r in e.removed),
    )
    return Expunged(event, texts, len(done.events), 0)


def _events(target: Target, cutter: _Cutter, reason: str) -> list[Redacted]:
    """The ``entry.redacted`` event; several (of one batch) when the entries and removals
    would make one larger than an event may be."""
    kind = "match" if target.needle else "detected"
    if target.needle:
        reason = remove(reason, target.needle)[0]
    budget = SLICE_BYTES // 2
    ids, removed = slices(sorted(cutter.entries), budget), slices(cutter.removals, budget)
    count = max(len(ids), len(removed))
    ids += [()] * (count - len(ids))
    removed += [()] * (count - len(removed))
    return [
        Redacted(ids=some, reason=reason.strip(), kind=kind, removed=where)
        for some, where in zip(ids, removed, strict=True)
    ]


def _nothing_found(target: Target) -> str:
    where = f"the events of entry {target.entry_id}" if target.entry_id else "the log"
    if target.needle:
        return f"the text given with --match is nowhere in {where}; nothing was changed"
    return f"no secret found in {where}; give the text with --match TEXT"


class _Cutter:
    """Edits one event at a time, keeping what it removed and where."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.removals: list[Removal] = []
        self.entries: set[str] = set()
        self.texts: list[str] = []

    def edit(self, event: Event) -> Event | None:
        wanted = self.target.entry_id
        if wanted is not None and wanted not in event.entry_ids:
            return None
        changes: dict[str, Any] = {}
        findings: list[Finding] = []
        for field, value in text_fields(event):
            cleaned, kinds = self._clean(field, value)
            if cleaned != value:
                changes[field] = cleaned
                findings += [Finding(field, k, n) for k, n in sorted(kinds.items())]
                self.removals += [Removal(event.seq, field, n, k) for k, n in sorted(kinds.items())]
        if not changes:
            return None
        redacted = tuple(sorted({*event.redacted, *changes}))
        if isinstance(event, Observed) and "description" in changes and not event.stable_id:
            changes["stable_id"] = event.entry_id
        if not isinstance(event, Recalled):  # a recall's query is not the entries' text
            self.entries.update(event.entry_ids)
        return msgspec.structs.replace(
            event, redacted=redacted, redactions=(*event.redactions, *findings), **changes
        )

    def _clean(self, field: str, value: Any) -> tuple[Any, Counter[str]]:
        kinds: Counter[str] = Counter()
        if isinstance(value, str):
            return self._text(value, kinds), kinds
        items = [self._text(item, kinds) for item in value]
        if field == "keywords":  # a label is a word: one made from the text goes whole
            cut = [k for k in items if REDACTED not in k and self._cut(k)]
            kinds[self._kind] += len(cut)
            self.texts += cut  # copies of the label elsewhere (a markdown backup) go too
            items = [k for k in items if REDACTED not in k and k not in cut]
        return tuple(items), +kinds

    def _cut(self, keyword: str) -> bool:
        """A label made from text removed here, or from the text given (stored folded,
        ``akia…`` for ``AKIA…``, it holds no exact copy of it)."""
        given = [self.target.needle] if self.target.needle is not None else []
        return any(_cut_from(keyword, text) for text in [*self.texts, *given])

    @property
    def _kind(self) -> str:
        return "match" if self.target.needle is not None else "label"

    def _text(self, text: str, kinds: Counter[str]) -> str:
        if self.target.needle is not None:
            cleaned, count = remove(text, self.target.needle)
            if count:
                kinds["match"] += count
                self.texts.append(self.target.needle)
            return cleaned
        found = redact(text)
        kinds.update(found.found)
        self.texts += found.removed
        return found.text


def _cut_from(keyword: str, needle: str) -> bool:
    """A keyword label made from the removed text: the whole of it (folded as labels are:
    ``hunter2-prod`` from ``Hunter2 PROD``), or a part of it with a digit (``hunter2``)."""
    folded = _FOLD.sub("-", needle.lower()).strip("-")
    if len(keyword) < MIN_MATCH or not folded:
        return False
    part = keyword in folded and any(c.isdigit() for c in keyword)
    return keyword == folded or folded in keyword or part


def _scrub(line: bytes, needle: str | None) -> bytes:
    """A damaged line (it has no checksum to keep) with the text taken out of its bytes."""
    if needle is None:  # what the rules find; bytes that are not UTF-8 pass through
        text = line.decode("utf-8", "surrogateescape")
        return redact(text).text.encode("utf-8", "surrogateescape")
    for form in (needle.encode("utf-8"), msgspec.json.encode(needle)[1:-1]):
        line = line.replace(form, REDACTED.encode())
    return line
