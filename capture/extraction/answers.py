"""What the model may answer, checked: extractions and evolution operations.

Nothing a model says is trusted.  An extraction answer must be an object
with ``extractions``, each item in one of the four sections, with text and
a confidence in [0, 1] (and a known scope when there are several); an
evolution answer must name only existing items, never act twice on one,
and never remove everything.  ``Invalid`` says what is wrong in one line
(msgspec names the path, e.g. ``$.extractions[2].confidence``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from memlog.capture.extraction.transcript import clean
from memlog.untrusted import shown
from memlog.vocabulary import Section

#: an item longer than this is not a short statement
MAX_ITEM_CHARS = 600
#: items kept from one answer
MAX_ITEMS = 40


class Invalid(Exception):
    """An answer that breaks the rules; the message says which, in one line."""


class Extraction(msgspec.Struct, forbid_unknown_fields=True):
    section: Section
    content: str
    confidence: Annotated[float, Meta(ge=0.0, le=1.0)]
    scope: str = ""


class _Extractions(msgspec.Struct, forbid_unknown_fields=True):
    extractions: list[Extraction]
    #: what the session did with the lessons it received (``influence.judged`` reads it)
    lessons: list[Any] = msgspec.field(default_factory=list)


class Op(msgspec.Struct, forbid_unknown_fields=True):
    op: Literal["add", "update", "remove", "keep"]
    id: int | None = None
    section: Section | None = None
    content: str = ""
    reason: str = ""


class _Operations(msgspec.Struct, forbid_unknown_fields=True):
    operations: list[Op]


def _convert(data: Any, kind: type[Any]) -> Any:
    if data is None:
        raise Invalid("no structured answer")
    try:
        return msgspec.convert(data, kind)
    except msgspec.ValidationError as exc:
        raise Invalid(str(exc)) from None


def statement(text: str) -> str:
    """An item's text as stored: private parts and secrets out, whitespace folded."""
    return " ".join(clean(text).split())


def extractions(data: Any, labels: Sequence[str] = ()) -> list[Extraction]:
    """The items of an extraction answer, cleaned; ``Invalid`` when it breaks a rule."""
    answer: _Extractions = _convert(data, _Extractions)
    items = []
    for number, item in enumerate(answer.extractions[:MAX_ITEMS]):
        where = f"`$.extractions[{number}]`"
        text = statement(item.content)
        if not text:
            raise Invalid(f"empty content - at {where}")
        if len(text) > MAX_ITEM_CHARS:
            raise Invalid(f"content longer than {MAX_ITEM_CHARS} characters - at {where}")
        if len(labels) > 1 and item.scope not in labels:
            raise Invalid(f"unknown scope {shown(item.scope)} - at {where}")
        items.append(msgspec.structs.replace(item, content=text))
    return items


def operations(data: Any, existing: int, new: int) -> list[Op]:
    """The operations of an evolution answer over ``existing`` numbered items (and
    ``new`` extractions); ``Invalid`` when one names an unknown item, acts twice on one,
    lacks what it needs, or when all of them together remove everything."""
    answer: _Operations = _convert(data, _Operations)
    seen: set[int] = set()
    ops = []
    for number, op in enumerate(answer.operations):
        where = f"`$.operations[{number}]`"
        _check(op, existing, new, where)
        if op.id is not None and op.op != "add":
            if op.id in seen:
                raise Invalid(f"item {op.id} has more than one operation - at {where}")
            seen.add(op.id)
        ops.append(msgspec.structs.replace(op, content=statement(op.content)))
    removed = {op.id for op in ops if op.op == "remove"}
    if existing and len(removed) == existing:
        raise Invalid(f"the answer removes all {existing} items")
    return ops


def _check(op: Op, existing: int, new: int, where: str) -> None:
    if len(statement(op.content)) > MAX_ITEM_CHARS:
        raise Invalid(f"content longer than {MAX_ITEM_CHARS} characters - at {where}")
    if op.op == "add":
        if not new:
            raise Invalid(f"add without new extractions - at {where}")
        if op.section is None or not statement(op.content):
            raise Invalid(f"add needs a section and content - at {where}")
        return
    if op.id is None or not 1 <= op.id <= existing:
        raise Invalid(f"{op.op} names unknown item {op.id} - at {where}")
    if op.op == "update" and not statement(op.content):
        raise Invalid(f"update needs content - at {where}")
    if op.op in ("update", "remove") and not op.reason.strip():
        raise Invalid(f"{op.op} needs a reason - at {where}")
