"""Editing JSON text in place: one item added or removed, every other byte kept.

The document must be valid JSON.  ``add_item`` inserts an item last in the
object or array at a path, laid out like its siblings (indent, separators);
``drop_item`` removes one item and its comma.  Nothing is re-serialised, so
comments of style, key order and spacing around the edit stay as they were.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import NamedTuple

JsonPath = Sequence[str | int]

_DECODER = json.JSONDecoder()
_SPACE = " \t\r\n"


class _Item(NamedTuple):
    start: int  # where the member (its key) or element begins
    value: int  # where its value begins
    end: int  # just after its value
    key: str | None


class _Span(NamedTuple):
    open: int
    close: int
    items: list[_Item]


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in _SPACE:
        i += 1
    return i


def _span(text: str, i: int) -> _Span:
    """The items of the object or array whose opening bracket is at ``i`` (valid JSON)."""
    closer = "}" if text[i] == "{" else "]"
    items: list[_Item] = []
    j = _skip(text, i + 1)
    while text[j] != closer:
        start, key = j, None
        if closer == "}":
            key, j = _DECODER.raw_decode(text, j)
            j = _skip(text, _skip(text, j) + 1)  # past the colon
        value = j
        j = _DECODER.raw_decode(text, j)[1]
        items.append(_Item(start, value, j, key))
        j = _skip(text, j)
        if text[j] == ",":
            j = _skip(text, j + 1)
    return _Span(i, j, items)


def _index(span: _Span, step: str | int) -> int:
    if isinstance(step, int):
        return step
    return [n for n, item in enumerate(span.items) if item.key == step][-1]  # last one wins


def _locate(text: str, path: JsonPath) -> int:
    i = _skip(text, 0)
    for step in path:
        span = _span(text, i)
        i = span.items[_index(span, step)].value
    return i


def _indent_unit(text: str) -> str:
    found = re.search(r"\n([ \t]+)\S", text)
    return found.group(1) if found else "  "


def _line_indent(text: str, i: int) -> str:
    start = text.rfind("\n", 0, i) + 1
    return text[start : _skip_indent(text, start)]


def _skip_indent(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t":
        i += 1
    return i


def _separators(text: str, span: _Span) -> tuple[str, str, str]:
    """How the container at ``span`` lays out its items: (between items, after a colon, unit)."""
    items = span.items
    if len(items) >= 2:
        sep = text[_skip(text, items[-2].end) + 1 : items[-1].start]
    elif items:
        sep = text[span.open + 1 : items[0].start]
        sep = sep if "\n" in sep else " " if re.search(r",[ ]", text) else ""
    else:
        sep = "\n" + _line_indent(text, span.open) + _indent_unit(text)
    keyed = [i for i in items if i.key is not None]
    colon = ":" if keyed and text[keyed[0].value - 1] == ":" else ": "
    return ("\n" + sep.rsplit("\n", 1)[1] if "\n" in sep else sep), colon, _indent_unit(text)


def _render(key: str | None, value: object, layout: tuple[str, str, str]) -> str:
    sep, colon, unit = layout
    head = f"{json.dumps(key, ensure_ascii=False)}{colon}" if key is not None else ""
    if "\n" not in sep:
        return head + json.dumps(value, ensure_ascii=False, separators=("," + sep, colon))
    body = json.dumps(value, ensure_ascii=False, indent=unit, separators=(",", colon))
    return head + body.replace("\n", sep)


def add_item(text: str, path: JsonPath, key: str | None, value: object) -> str:
    """Insert ``value`` (under ``key`` in an object) last in the container at ``path``."""
    span = _span(text, _locate(text, path))
    layout = _separators(text, span)
    item = _render(key, value, layout)
    if span.items:
        at = span.items[-1].end
        return text[:at] + "," + layout[0] + item + text[at:]
    close = "\n" + _line_indent(text, span.open)
    return text[: span.open + 1] + layout[0] + item + close + text[span.close :]


def drop_item(text: str, path: JsonPath, step: str | int) -> str:
    """Remove one item (a key or an index) of the container at ``path``, and its comma."""
    span = _span(text, _locate(text, path))
    items, n = span.items, _index(span, step)
    if len(items) == 1:
        return text[: span.open + 1] + text[span.close :]
    if n > 0:
        return text[: items[n - 1].end] + text[items[n].end :]
    return text[: items[0].start] + text[items[1].start :]


def drop_if_empty(text: str, path: JsonPath) -> str:
    """Remove the container at ``path`` when it holds nothing."""
    value = _DECODER.raw_decode(text, _locate(text, path))[0]
    return drop_item(text, path[:-1], path[-1]) if value in ({}, []) else text
