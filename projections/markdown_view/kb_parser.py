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
skipped (blanked out, so line numbers still match the file).  The global
store files (``# Global …`` title, ``- Content-Hash:`` lines) follow the
same rules.

Parsing never raises on text: every oddity becomes a one-line warning
``path:line: message`` and nothing found in a file is dropped silently.
Only ``parse_file`` touches the file system.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import PurePath

import msgspec

from memlog.eventlog.events import content_hash
from memlog.untrusted import Refused, read_bytes, shown
from memlog.vocabulary import CONFIDENCES, KB_CATEGORIES, Confidence, KbCategory

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

#: injection order of the categories: anti-patterns first, patterns last
CATEGORY_PRIORITY = KB_CATEGORIES

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

_SORT_KEYS = frozenset({"observation count", "confidence", "last observed", "content-hash"})
#: a ``### `` header, a ``#``/``##`` heading, or a ``---`` separator line
_STRUCTURE = re.compile(r"^(?:### (.*)|(#{1,2})(?:[ \t](.*))?|-{3,}[ \t]*)$", re.M)
_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)
_ITEM_START = re.compile(r"^- ", re.M)
#: a line after the first metadata item that is neither an item, indented, nor blank
_STRAY = re.compile(r"^(?!- )[^ \t\n]", re.M)
_CONTENT_HASH_LINE = re.compile(r"^- Content-Hash[ \t]*:", re.M | re.I)
_TYPE_PREFIX = re.compile(r"([A-Za-z][A-Za-z-]*): (.*)")
_META_KEY = re.compile(r"[A-Za-z][A-Za-z0-9 _/()'-]{0,39}")
_COUNT = re.compile(r"[0-9]{1,9}")
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
    #: from the file name, else the ``# Global …`` title, else the header type
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
    #: the entry's lines as in the file, comments blanked, trailing blank lines dropped
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
    """An entry's header line, its number, and the lines up to the next structure line."""

    line: int
    header: str
    body: str = ""


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


#: the largest knowledge-bank file read (the largest real one is a few hundred KB)
MAX_FILE_BYTES = 16 << 20


def parse_file(path: str | os.PathLike[str]) -> ParseResult:
    """Read and parse one file; invalid UTF-8 is replaced, and warned about.  A file over
    ``MAX_FILE_BYTES``, or one that is not a regular file, is skipped with a warning."""
    name = os.fspath(path)
    try:
        data = read_bytes(name, MAX_FILE_BYTES)
    except OSError as exc:
        return ParseResult(warnings=[f"{name}: cannot read: {exc.strerror or exc}"], skipped=True)
    except Refused as exc:
        return ParseResult(warnings=[f"{name}: skipped: {exc}"], skipped=True)
    text, warning = _decode(data, name)
    result = parse_text(text, name)
    if warning:
        result.warnings.insert(0, warning)
    return result


def parse_text(text: str, path: str) -> ParseResult:
    """Parse the text of the file at ``path`` (its name decides its category)."""
    warnings: list[str] = []
    text = _drop_comments(_clean(text, path, warnings), path, warnings)
    blocks, title = _split_blocks(text)
    reason = _skip_reason(path, title)
    if reason:
        return ParseResult(warnings=[f"{path}: skipped: {reason}"], skipped=True)
    is_global = _global_title(title) is not None or bool(_CONTENT_HASH_LINE.search(text))
    context = _FileContext(path, _file_category(path, title), is_global, warnings)
    entries = [_build(block, index, context) for index, block in enumerate(blocks)]
    return ParseResult(entries=[e for e in entries if e is not None], warnings=warnings)


def _decode(data: bytes, path: str) -> tuple[str, str | None]:
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        text = data.decode("utf-8", errors="replace")
        return text, f"{path}:{line}: invalid UTF-8 bytes replaced by U+FFFD"


def _clean(text: str, path: str, warnings: list[str]) -> str:
    """Drop a byte-order mark and CRs of CRLF; replace lone surrogates so text can be hashed."""
    text = text.removeprefix("\ufeff").replace("\r\n", "\n")
    if _SURROGATE.search(text):
        text = _SURROGATE.sub("\ufffd", text)
        warnings.append(f"{path}: unencodable characters replaced by U+FFFD")
    return text


def _drop_comments(text: str, path: str, warnings: list[str]) -> str:
    """Remove ``<!-- -->`` comments, keeping their newlines so line numbers hold."""
    if "<!--" not in text:
        return text

    def blank(match: re.Match[str]) -> str:
        if not match[0].endswith("-->"):
            line = text.count("\n", 0, match.start()) + 1
            warnings.append(f"{path}:{line}: comment never closed; rest of file ignored")
        return "\n" * match[0].count("\n")

    return _COMMENT.sub(blank, text)


def _split_blocks(text: str) -> tuple[list[_Block], str | None]:
    """The ``### `` blocks, each ended by the next structure line, and the ``#`` title."""
    blocks: list[_Block] = []
    title: str | None = None
    line, last, body_start = 1, 0, -1
    for match in _STRUCTURE.finditer(text):
        line += text.count("\n", last, match.start())
        last = match.start()
        if body_start >= 0:
            blocks[-1].body = text[body_start : match.start()]
        body_start = -1
        if match[1] is not None:
            blocks.append(_Block(line, match[0]))
            body_start = match.end() + 1
        elif title is None and match[2] == "#":
            title = (match[3] or "").strip()
    if body_start >= 0:
        blocks[-1].body = text[body_start:]
    return blocks, title


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


def _type_category(word: str) -> KbCategory | None:
    """The category a type word names: ``Anti-Pattern``, ``Patterns``, ``heuristic``…"""
    lowered = word.strip().lower()
    return _TYPE_WORDS.get(lowered.removesuffix("s"))


def _split_header(header: str) -> tuple[str | None, str]:
    """``(type, name)``: a ``Word: `` prefix is a type only if it names a category.

    ``Anti-Pattern``, ``Pattern`` and ``Heuristic`` (any case, singular or
    plural) are types; ``### Note: colons are fine`` keeps its whole name.
    """
    match = _TYPE_PREFIX.fullmatch(header)
    if match and _type_category(match[1]) and match[2].strip():
        return match[1], match[2].strip()
    return None, header


def _build(block: _Block, position: int, context: _FileContext) -> ParsedEntry | None:
    header_type, name = _split_header(block.header[4:].strip())
    category = _entry_category(block, header_type, context)
    if category is None:
        return None
    body = block.body.rstrip()
    cut, description, metadata = _partition(body)
    _check_shape(block, name, description, context)
    _check_stray(block, body, cut, name, context)
    fields = _sort_fields(metadata, block.line, context)
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
        raw=f"{block.header}\n{body}".rstrip(),
        is_global=context.is_global,
        source_path=context.path,
    )


def _partition(body: str) -> tuple[int, str, tuple[tuple[str, str], ...]]:
    """Where the metadata starts, the description before it, and the metadata items."""
    first_item = _ITEM_START.search(body)
    if first_item is None:
        return len(body), body.strip(), ()
    cut = first_item.start()
    items = body[cut + 2 :].split("\n- ")
    return cut, body[:cut].strip(), tuple(_split_item(item) for item in items)


def _split_item(item: str) -> tuple[str, str]:
    """``(key, value)`` of one metadata item, indented continuation lines included."""
    first, _, rest = item.partition("\n")
    key, colon, value = first.partition(":")
    if not (colon and value[:1] in ("", " ", "\t") and _META_KEY.fullmatch(key)):
        key, value = "", first
    more = _continuation(rest) if rest else ""
    return key, f"{value.strip()}\n{more}".strip() if more else value.strip()


def _continuation(rest: str) -> str:
    """The indented, non-blank lines of ``rest``, with their common indent removed."""
    lines = [line for line in rest.split("\n") if line[:1] in (" ", "\t") and line.strip()]
    margin = min((len(line) - len(line.lstrip()) for line in lines), default=0)
    return "\n".join(line[margin:].rstrip() for line in lines)


def _entry_category(
    block: _Block, header_type: str | None, context: _FileContext
) -> KbCategory | None:
    """The file's category; the header type only where the file names none."""
    typed = _type_category(header_type) if header_type else None
    category = context.category or typed
    if category is None:
        context.warn(block.line, f"entry {shown(block.header[4:].strip())} skipped: no category")
    elif typed and typed != category:
        context.warn(block.line, f"header type {shown(header_type)} in a {category} file")
    return category


def _check_shape(block: _Block, name: str, description: str, context: _FileContext) -> None:
    if not name:
        context.warn(block.line, "entry has no name")
    if not description:
        context.warn(block.line, f"entry {shown(name)} has no description")
    first = context.names.setdefault(name.casefold(), block.line)
    if first != block.line:
        context.warn(block.line, f"duplicate name {shown(name)} (first at line {first})")


def _check_stray(block: _Block, body: str, cut: int, name: str, context: _FileContext) -> None:
    """Warn about unindented text among the metadata: it stays only in ``raw``."""
    line, counted = block.line + 1, 0
    for match in _STRAY.finditer(body, cut):
        line += body.count("\n", counted, match.start())
        counted = match.start()
        context.warn(line, f"text after the metadata of {shown(name)} kept only in its raw text")


def _sort_fields(
    metadata: tuple[tuple[str, str], ...], line: int, context: _FileContext
) -> dict[str, str]:
    """The first value of each key parsing needs (case-insensitive); repeats are warned."""
    fields: dict[str, str] = {}
    for key, value in metadata:
        lowered = key.strip().lower()
        if lowered in _SORT_KEYS and lowered in fields:
            context.warn(line, f"{shown(lowered)} repeated; the first value is used")
        elif lowered in _SORT_KEYS:
            fields[lowered] = value
    return fields


def _count(value: str | None, line: int, context: _FileContext) -> int:
    if value is None:
        return 1
    if _COUNT.fullmatch(value) and int(value) >= 1:
        return int(value)
    context.warn(line, f"bad observation count {shown(value)}; using 1")
    return 1


def _confidence(value: str | None, line: int, context: _FileContext) -> Confidence:
    if value is None:
        return "medium"
    for level in CONFIDENCES:
        if value.lower() == level:
            return level
    context.warn(line, f"bad confidence {shown(value)}; using medium")
    return "medium"


def _checked_hash(description: str, stored: str | None, line: int, context: _FileContext) -> str:
    """The description's hash; a stored ``Content-Hash`` that differs is warned about."""
    digest = content_hash(description)
    if stored is not None and stored.lower().removeprefix("sha256:").strip() != digest:
        context.warn(line, f"Content-Hash {shown(stored)} differs from the description's {digest}")
    return digest
