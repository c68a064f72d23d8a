"""Turning user input into ``entry.observed`` events, with clear validation errors."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import TypeVar

import msgspec

from memlog.errors import InvalidInput
from memlog.eventlog.events import Finding, Observed, Text
from memlog.eventlog.redaction import REDACTED, redact
from memlog.eventlog.secrets import redact_text
from memlog.keywords.rules import normalise_keyword
from memlog.untrusted import shown
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
    """What was changed in the keywords a writer gave (they are kept, not replaced); a
    keyword holding a secret was dropped before (``to_event``) and is never shown."""
    prefix = f"{where}: " if where else ""
    notes = []
    renamed = [(k, normalise_keyword(k)) for k in given if normalise_keyword(k) != k]
    secrets = sum(redact_text(k) != k for k, _ in renamed)  # kept by --no-redact: not shown
    renamed = [(k, n) for k, n in renamed if redact_text(k) == k]
    if renamed or secrets:
        listed = ", ".join(
            f"{shown(k)} as {shown(n)}" if n else f"{shown(k)} dropped" for k, n in renamed
        )
        if secrets:
            held = f"{secrets} holding a secret, lower-cased"
            listed = f"{listed}, {held}" if listed else held
        notes.append(f"{prefix}keywords are lowercase a-z, 0-9 and -: recorded {listed}")
    kept = _unique(normalise_keyword(k) for k in given)
    if len(kept) > MAX_KEYWORDS:
        notes.append(
            f"{prefix}an entry keeps at most {MAX_KEYWORDS} keywords: kept the first "
            f"{MAX_KEYWORDS} of {len(kept)} ({', '.join(kept[MAX_KEYWORDS:])} dropped)"
        )
    return notes


#: the fields of an observation whose text is scanned, as given, before anything is changed
SCANNED = ("name", "description", "reasoning", "keywords", "references", "project", "feature")


def scanned(item: ObservationInput) -> tuple[ObservationInput, tuple[Finding, ...]]:
    """``item`` with every secret in its text replaced, field by field, as it was given
    (before keywords are lower-cased or whitespace folded: ``AKIA…`` is found, ``akia…``
    would not be); a keyword that held a secret is dropped whole.  The findings go on the
    event."""
    changes: dict[str, object] = {}
    findings: list[Finding] = []
    for field in SCANNED:
        value = getattr(item, field)
        kinds: Counter[str] = Counter()
        if isinstance(value, str):
            cleaned: object = _scan(value, kinds)
        else:
            texts = [_scan(v, kinds) for v in value]
            cleaned = [v for v in texts if field != "keywords" or REDACTED not in v]
        if kinds:
            changes[field] = cleaned
            findings += [Finding(field, kind, n) for kind, n in sorted(kinds.items())]
    if not changes:
        return item, ()
    return msgspec.structs.replace(item, **changes), tuple(findings)


def _scan(text: str, kinds: Counter[str]) -> str:
    found = redact(text)
    kinds.update(found.found)
    return found.text


def to_event(
    item: ObservationInput, where: str = "", notes: list[str] | None = None, redact: bool = True
) -> Observed:
    """Validate ``item`` beyond its schema and build the event; raise InvalidInput.

    Secrets are replaced first, in the text as given (unless ``redact`` is off);
    keywords are then kept as given, normalised and capped at 10; what that
    changed is added to ``notes``.
    """
    prefix = f"{where}: " if where else ""
    for field in ("name", "description"):
        if not getattr(item, field).strip():
            raise InvalidInput(f"{prefix}{field} is empty - at `$.{field}`")
    item, findings = scanned(item) if redact else (item, ())
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
        redacted=tuple(sorted({f.field for f in findings})),
        redactions=findings,
    )


def from_fields(
    fields: Mapping[str, object], notes: list[str] | None = None, redact: bool = True
) -> Observed:
    """The event for one entry given as a mapping of option values (what was changed in
    it goes to ``notes``; secrets replaced first unless ``redact`` is off)."""
    for field, value in fields.items():
        for text in value if isinstance(value, list) else [value]:
            if isinstance(text, str) and not _is_utf8(text):
                raise InvalidInput(f"{field} is not valid UTF-8 - at `$.{field}`")
    try:
        item = msgspec.convert(fields, ObservationInput)
    except msgspec.ValidationError as exc:
        raise InvalidInput(str(exc)) from None
    return to_event(item, notes=notes, redact=redact)


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
    data: bytes, default_project: str = "", notes: list[str] | None = None, redact: bool = True
) -> list[Observed]:
    """Events for every JSON object in ``data`` (one per line, or one JSON array)."""
    pairs = decode_items(data, _LINE_DECODER, _ARRAY_DECODER)
    return [
        to_event(_with_project(item, default_project), where, notes, redact)
        for where, item in pairs
    ]


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
