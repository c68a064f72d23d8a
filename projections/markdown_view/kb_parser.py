"""Parser for iflow knowledge-bank markdown (the rules of spec #023).

A knowledge-bank file is a sequence of entries, each opened by a line
starting with ``### ``::

    ### Anti-Pattern: Working in Wrong Worktree
    Making changes in main worktree when a feature worktree exists.
    - Observed in: Feature #002
    - Observation count: 1

The header names the entry (an optional ``{Type}: `` prefix is stripped),
the lines before the first ``- `` line are its description, and the ``- ``
lines are its metadata; indented lines continue the metadata item above
them.  ``#`` and ``##`` headings and ``---`` separators end an entry and
are not part of one; ``<!-- -->`` comments, multi-line ones included, are
skipped.  The global store files (``# Global …`` title, ``- Content-Hash:``
lines) follow the same rules.

Parsing never raises on text: every oddity becomes a one-line warning
``path:line: message`` and nothing found in a file is dropped silently.
Only ``parse_file`` touches the file system.
"""

from __future__ import annotations

import os
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Literal

import msgspec

from memlog.eventlog.events import Confidence, content_hash

__all__ = [
    "CATEGORY_PRIORITY",
    "FILE_CATEGORIES",
    "KbCategory",
    "ParseResult",
    "ParsedEntry",
    "content_hash",
    "parse_file",
    "parse_text",
]

KbCategory = Literal["anti-patterns", "heuristics", "patterns"]

#: injection order of the categories: anti-patterns first, patterns last
CATEGORY_PRIORITY: tuple[KbCategory, ...] = ("anti-patterns", "heuristics", "patterns")

#: the knowledge-bank files, by name
FILE_CATEGORIES: dict[str, KbCategory] = {
    "anti-patterns.md": "anti-patterns",
    "heuristics.md": "heuristics",
    "patterns.md": "patterns",
}

#: header type words (lowercased, singular) and the category each names
_TYPE_WORDS: dict[str, KbCategory] = {
    "anti-pattern": "anti-patterns",
    "pattern": "patterns",
    "heuristic": "heuristics",
}

_CONFIDENCES: tuple[Confidence, ...] = ("high", "medium", "low")
_TYPE_PREFIX = re.compile(r"([A-Za-z][A-Za-z-]*): (.*)")
_META_KEY = re.compile(r"([A-Za-z][A-Za-z0-9 _/()'-]{0,39}):(?:[ \t]+|$)")
_SORT_KEYS = frozenset({"observation count", "confidence", "last observed", "content-hash"})
_COUNT = re.compile(r"[0-9]{1,9}")
_SEPARATOR = re.compile(r"-{3,}[ \t]*")
_GLOBAL_TITLE = re.compile(r"Global\b[ \t]*(.*)")
_SURROGATE = re.compile("[\ud800-\udfff]")


class ParsedEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One ``### `` entry of a knowledge-bank file."""

    #: header text with the ``{Type}: `` prefix stripped
    name: str
    #: the stripped prefix as written (``Anti-Pattern``), or None
    header_type: str | None
    #: lines between the header and the first ``- `` line, stripped
    description: str
    category: KbCategory
    #: ``(key, value)`` per ``- `` line in order, keys as written; a line
    #: without a ``Key:`` has the key ``""``; continuation lines join the value
    metadata: tuple[tuple[str, str], ...]
    observation_count: int = 1
    confidence: Confidence = "medium"
    last_observed: str | None = None
    #: ``content_hash(description)``, the entry id
    content_hash: str
    #: 0-based index of the entry in its file
    position: int
    #: 1-based line number of the ``### `` header
    line: int
    #: the entry's lines as in the file (comments removed, no trailing blanks)
    raw: str
    #: the file is a global store file
    is_global: bool = False
    source_path: str


class ParseResult(msgspec.Struct, kw_only=True):
    """The entries of one file and the warnings met while reading it."""

    entries: list[ParsedEntry] = []
    #: one line each, ``path:line: message`` (``path: message`` for a whole file)
    warnings: list[str] = []
    #: the file was not read as a knowledge-bank file
    skipped: bool = False


@dataclass(slots=True)
class _Block:
    """An entry while its lines are being collected."""

    line: int
    header: str
    raw: list[str]
    description: list[str] = field(default_factory=list)
    items: list[list[str]] = field(default_factory=list)
    stray: list[int] = field(default_factory=list)

    def add(self, text: str, number: int) -> None:
        self.raw.append(text)
        if text.startswith("- "):
            self.items.append([text[2:]])
        elif not self.items:
            self.description.append(text)
        elif text[:1] in (" ", "\t") and text.strip():
            self.items[-1].append(text)
        elif text.strip():
            self.stray.append(number)

    def raw_text(self) -> str:
        end = len(self.raw)
        while end > 1 and not self.raw[end - 1].strip():
            end -= 1
        return "\n".join(self.raw[:end])


@dataclass(slots=True)
class _Scan:
    """What one pass over a file's lines found."""

    blocks: list[_Block] = field(default_factory=list)
    title: str | None = None
    open_comment: int = 0


@dataclass(slots=True)
class _FileContext:
    """Facts about a file that every entry of it shares."""

    path: str
    category: KbCategory | None
    is_global: bool
    warnings: list[str]
    names: dict[str, int] = field(default_factory=dict)

    def warn(self, line: int, message: str) -> None:
        self.warnings.append(f"{self.path}:{line}: {message}")


def parse_file(path: str | os.PathLike[str]) -> ParseResult:
    """Read and parse one file; invalid UTF-8 is replaced, and warned about."""
    name = os.fspath(path)
    try:
        data = Path(name).read_bytes()
    except OSError as exc:
        return ParseResult(warnings=[f"{name}: cannot read: {exc.strerror or exc}"], skipped=True)
    text, warning = _decode(data, name)
    result = parse_text(text, name)
    if warning:
        result.warnings.insert(0, warning)
    return result


def parse_text(text: str, path: str) -> ParseResult:
    """Parse the text of the file at ``path`` (its name decides its category)."""
    warnings: list[str] = []
    scan = _scan(_split_lines(_clean(text, path, warnings)), path, warnings)
    reason = _skip_reason(path, scan.title)
    if reason:
        return ParseResult(warnings=[f"{path}: skipped: {reason}"], skipped=True)
    context = _FileContext(path, _file_category(path, scan.title), _is_global(scan), warnings)
    entries = [_build(block, index, context) for index, block in enumerate(scan.blocks)]
    return ParseResult(entries=[e for e in entries if e is not None], warnings=warnings)


def _decode(data: bytes, path: str) -> tuple[str, str | None]:
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        text = data.decode("utf-8", errors="replace")
        return text, f"{path}:{line}: invalid UTF-8 bytes replaced by U+FFFD"


def _clean(text: str, path: str, warnings: list[str]) -> str:
    """Drop a byte-order mark; replace lone surrogates so every line can be hashed."""
    text = text.removeprefix("\ufeff")
    if _SURROGATE.search(text):
        text = _SURROGATE.sub("\ufffd", text)
        warnings.append(f"{path}: unencodable characters replaced by U+FFFD")
    return text


def _split_lines(text: str) -> list[str]:
    return [line.removesuffix("\r") for line in text.split("\n")]


def _scan(lines: list[str], path: str, warnings: list[str]) -> _Scan:
    scan = _Scan()
    current: _Block | None = None
    for number, line in enumerate(lines, 1):
        if scan.open_comment or "<!--" in line:
            kept = _strip_comments(line, scan, number)
            if kept is None:
                continue
            line = kept
        current = _dispatch(line, number, current, scan)
    if scan.open_comment:
        warnings.append(f"{path}:{scan.open_comment}: comment never closed; rest of file ignored")
    return scan


def _dispatch(line: str, number: int, current: _Block | None, scan: _Scan) -> _Block | None:
    """Feed one comment-free line; return the entry now being collected."""
    first = line[:1]
    if first == "#" and line.startswith("### "):
        block = _Block(number, line[4:].strip(), [line])
        scan.blocks.append(block)
        return block
    if first == "#" and _is_heading(line):
        if scan.title is None and _is_title(line):
            scan.title = line[1:].strip()
        return None
    if first == "-" and _SEPARATOR.fullmatch(line):
        return None
    if current is not None:
        current.add(line, number)
    return current


def _strip_comments(line: str, scan: _Scan, number: int) -> str | None:
    """The line without its comment parts, or None if nothing else is on it."""
    kept: list[str] = []
    at = 0
    while at < len(line):
        if scan.open_comment:
            end = line.find("-->", at)
            at = len(line) if end < 0 else end + 3
            scan.open_comment = scan.open_comment if end < 0 else 0
        else:
            start = line.find("<!--", at)
            kept.append(line[at:] if start < 0 else line[at:start])
            at = len(line) if start < 0 else start + 4
            scan.open_comment = 0 if start < 0 else number
    text = "".join(kept).rstrip()
    return text if text.strip() else None


def _is_heading(line: str) -> bool:
    """A ``#`` or ``##`` heading (``###`` opens entries, ``####`` is text)."""
    return line.startswith(("# ", "## ")) or line.rstrip() in ("#", "##")


def _is_title(line: str) -> bool:
    return line.startswith("# ") or line.rstrip() == "#"


def _skip_reason(path: str, title: str | None) -> str | None:
    name = PurePath(path).name
    if name == "constitution.md":
        return "constitution.md holds principles, not knowledge-bank entries"
    if name in FILE_CATEGORIES or _global_title(title) is not None:
        return None
    return "not a knowledge-bank file (anti-patterns.md, heuristics.md, patterns.md)"


def _global_title(title: str | None) -> str | None:
    """The words after ``# Global`` in a global store title, else None."""
    match = _GLOBAL_TITLE.fullmatch(title) if title else None
    return match[1] if match else None


def _file_category(path: str, title: str | None) -> KbCategory | None:
    by_name = FILE_CATEGORIES.get(PurePath(path).name)
    return by_name or _type_category(_global_title(title) or "")


def _is_global(scan: _Scan) -> bool:
    if _global_title(scan.title) is not None:
        return True
    return any(
        item[0][:12].lower() == "content-hash" and _key(item[0]) == "content-hash"
        for block in scan.blocks
        for item in block.items
    )


def _key(item: str) -> str:
    match = _META_KEY.match(item)
    return match[1].strip().lower() if match else ""


def _type_category(word: str) -> KbCategory | None:
    """The category a type word names: ``Anti-Pattern``, ``Patterns``, ``heuristic``…"""
    lowered = word.strip().lower()
    return _TYPE_WORDS.get(lowered.removesuffix("s"))


def _split_header(header: str) -> tuple[str | None, str]:
    """``(type, name)``: the prefix is a type only if it names a category."""
    match = _TYPE_PREFIX.fullmatch(header)
    if match and _type_category(match[1]) and match[2].strip():
        return match[1], match[2].strip()
    return None, header


def _split_item(lines: list[str]) -> tuple[str, str]:
    """``(key, value)`` of one metadata item; continuation lines are dedented."""
    match = _META_KEY.match(lines[0])
    key, value = (match[1], lines[0][match.end() :]) if match else ("", lines[0])
    if len(lines) == 1:
        return key, value.strip()
    rest = textwrap.dedent("\n".join(lines[1:])).strip()
    return key, f"{value.strip()}\n{rest}".strip()


def _build(block: _Block, position: int, context: _FileContext) -> ParsedEntry | None:
    header_type, name = _split_header(block.header)
    category = _entry_category(block, header_type, context)
    if category is None:
        return None
    description = "\n".join(block.description).strip()
    metadata = tuple(_split_item(item) for item in block.items)
    fields = _sort_fields(metadata, block.line, context)
    _check_shape(block, name, description, context)
    return ParsedEntry(
        name=name,
        header_type=header_type,
        description=description,
        category=category,
        metadata=metadata,
        observation_count=_count(fields.get("observation count"), block.line, context),
        confidence=_confidence(fields.get("confidence"), block.line, context),
        last_observed=fields.get("last observed") or None,
        content_hash=_checked_hash(description, fields.get("content-hash"), block.line, context),
        position=position,
        line=block.line,
        raw=block.raw_text(),
        is_global=context.is_global,
        source_path=context.path,
    )


def _entry_category(
    block: _Block, header_type: str | None, context: _FileContext
) -> KbCategory | None:
    """The file's category; the header type only where the file names none."""
    typed = _type_category(header_type) if header_type else None
    category = context.category or typed
    if category is None:
        context.warn(block.line, f"entry {block.header!r} skipped: no category")
    elif typed and typed != category:
        context.warn(block.line, f"header type {header_type!r} in a {category} file")
    return category


def _check_shape(block: _Block, name: str, description: str, context: _FileContext) -> None:
    if not name:
        context.warn(block.line, "entry has no name")
    if not description:
        context.warn(block.line, f"entry {name!r} has no description")
    for number in block.stray:
        context.warn(number, f"text after the metadata of {name!r} kept only in its raw text")
    first = context.names.setdefault(name.casefold(), block.line)
    if first != block.line:
        context.warn(block.line, f"duplicate name {name!r} (first at line {first})")


def _sort_fields(
    metadata: tuple[tuple[str, str], ...], line: int, context: _FileContext
) -> dict[str, str]:
    """The first value of each key parsing needs (case-insensitive); repeats are warned."""
    fields: dict[str, str] = {}
    for key, value in metadata:
        lowered = key.strip().lower()
        if lowered in _SORT_KEYS and lowered in fields:
            context.warn(line, f"{lowered!r} repeated; the first value is used")
        elif lowered in _SORT_KEYS:
            fields[lowered] = value
    return fields


def _count(value: str | None, line: int, context: _FileContext) -> int:
    if value is None:
        return 1
    if _COUNT.fullmatch(value) and int(value) >= 1:
        return int(value)
    context.warn(line, f"bad observation count {value!r}; using 1")
    return 1


def _confidence(value: str | None, line: int, context: _FileContext) -> Confidence:
    if value is None:
        return "medium"
    for level in _CONFIDENCES:
        if value.lower() == level:
            return level
    context.warn(line, f"bad confidence {value!r}; using medium")
    return "medium"


def _checked_hash(description: str, stored: str | None, line: int, context: _FileContext) -> str:
    """The description's hash; a stored ``Content-Hash`` that differs is warned about."""
    digest = content_hash(description)
    if stored is not None and stored.lower().removeprefix("sha256:").strip() != digest:
        context.warn(line, f"Content-Hash {stored!r} differs from the description's {digest}")
    return digest
