"""Turning user input into ``entry.observed`` events, with clear validation errors."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TypeVar

import msgspec

from memlog.errors import InvalidInput
from memlog.eventlog.events import Observed, Text
from memlog.keywords.rules import normalise_keyword
from memlog.vocabulary import MAX_KEYWORDS, Category, Confidence, Source

T = TypeVar("T")


class ObservationInput(msgspec.Struct, forbid_unknown_fields=True):
    """One entry to observe, as given on the command line or in a JSON line."""

    name: Text
    description: Text
    category: Category
    reasoning: str = ""
    confidence: Confidence = "medium"
    keywords: list[str] = msgspec.field(default_factory=list)
    references: list[str] = msgspec.field(default_factory=list)
    project: str = ""
    feature: str = ""
    source: Source = "manual"


def _unique(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(i for i in items if i))


def keyword_notes(given: Sequence[str], where: str = "") -> list[str]:
    """What was changed in the keywords a writer gave (they are kept, not replaced)."""
    prefix = f"{where}: " if where else ""
    notes = []
    renamed = [(k, normalise_keyword(k)) for k in given if normalise_keyword(k) != k]
    if renamed:
        shown = ", ".join(f"{k!r} as {n!r}" if n else f"{k!r} dropped" for k, n in renamed)
        notes.append(f"{prefix}keywords are lowercase a-z, 0-9 and -: recorded {shown}")
    kept = _unique(normalise_keyword(k) for k in given)
    if len(kept) > MAX_KEYWORDS:
        notes.append(
            f"{prefix}an entry keeps at most {MAX_KEYWORDS} keywords: kept the first "
            f"{MAX_KEYWORDS} of {len(kept)} ({', '.join(kept[MAX_KEYWORDS:])} dropped)"
        )
    return notes


def to_event(item: ObservationInput, where: str = "", notes: list[str] | None = None) -> Observed:
    """Validate ``item`` beyond its schema and build the event; raise InvalidInput.

    Keywords are kept as given, normalised and capped at 10; what that changed
    is added to ``notes``.
    """
    prefix = f"{where}: " if where else ""
    for field in ("name", "description"):
        if not getattr(item, field).strip():
            raise InvalidInput(f"{prefix}{field} is empty - at `$.{field}`")
    keywords = _unique(normalise_keyword(k) for k in item.keywords)[:MAX_KEYWORDS]
    if notes is not None:
        notes += keyword_notes(item.keywords, where)
    return Observed(
        name=" ".join(item.name.split()),
        description=item.description.strip(),
        category=item.category,
        reasoning=item.reasoning.strip(),
        confidence=item.confidence,
        keywords=keywords,
        references=_unique(r.strip() for r in item.references),
        source=item.source,
        project=item.project.strip(),
        feature=item.feature.strip(),
        revive=False,
    )


def from_fields(fields: Mapping[str, object], notes: list[str] | None = None) -> Observed:
    """The event for one entry given as a mapping of option values (what was changed in
    it goes to ``notes``)."""
    for field, value in fields.items():
        for text in value if isinstance(value, list) else [value]:
            if isinstance(text, str) and not _is_utf8(text):
                raise InvalidInput(f"{field} is not valid UTF-8 - at `$.{field}`")
    try:
        item = msgspec.convert(fields, ObservationInput)
    except msgspec.ValidationError as exc:
        raise InvalidInput(str(exc)) from None
    return to_event(item, notes=notes)


def _is_utf8(text: str) -> bool:
    """False for text holding bytes that were not UTF-8 (lone surrogates from argv)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_LINE_DECODER = msgspec.json.Decoder(ObservationInput)
_ARRAY_DECODER = msgspec.json.Decoder(list[ObservationInput])


def decode_items(
    data: bytes, line: msgspec.json.Decoder[T], array: msgspec.json.Decoder[list[T]]
) -> list[tuple[str, T]]:
    """Every JSON object in ``data`` (one per line, or one JSON array), each with where it
    stands (``line 3``, ``item 0``); InvalidInput naming the place of the first bad one."""
    text = data.lstrip()
    if text.startswith(b"["):
        items = decode_checked(array, text, "input")
        pairs = [(f"item {i}", item) for i, item in enumerate(items)]
    else:
        lines = [(n, ln) for n, ln in enumerate(data.splitlines(), 1) if ln.strip()]
        pairs = [(f"line {n}", decode_checked(line, ln, f"line {n}")) for n, ln in lines]
    if not pairs:
        raise InvalidInput("no entries in the input")
    return pairs


def parse_json_lines(
    data: bytes, default_project: str = "", notes: list[str] | None = None
) -> list[Observed]:
    """Events for every JSON object in ``data`` (one per line, or one JSON array)."""
    pairs = decode_items(data, _LINE_DECODER, _ARRAY_DECODER)
    return [to_event(_with_project(item, default_project), where, notes) for where, item in pairs]


def _with_project(item: ObservationInput, project: str) -> ObservationInput:
    if item.project or not project:
        return item
    return msgspec.structs.replace(item, project=project)


def decode_checked(decoder: msgspec.json.Decoder[T], raw: bytes, where: str) -> T:
    """Decode ``raw``; a schema or JSON error becomes InvalidInput naming ``where``."""
    try:
        return decoder.decode(raw)
    except msgspec.ValidationError as exc:
        raise InvalidInput(f"{where}: {exc}") from None
    except msgspec.DecodeError as exc:
        raise InvalidInput(f"{where}: malformed JSON ({exc})") from None
    except UnicodeDecodeError:
        raise InvalidInput(f"{where}: not UTF-8") from None


def with_references(event: Observed, references: Iterable[str]) -> Observed:
    """``event`` with ``references`` added to its own (order kept, no repeats)."""
    merged = tuple(dict.fromkeys([*event.references, *(r.strip() for r in references if r)]))
    return msgspec.structs.replace(event, references=merged)
