"""The lines of a Claude Code transcript: their shape, which are kept, and rewinds.

Only the fields extraction reads are decoded (msgspec skips the rest, such
as large ``toolUseResult`` objects); a line that is not valid JSON or not of
this shape is passed over, and a line repeated under the same ``uuid``
counts once.  ``active_path`` drops the prompts a rewind abandoned.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import msgspec


class Inner(msgspec.Struct):
    type: str = ""
    text: str = ""


class Block(msgspec.Struct):
    type: str = ""
    text: str = ""
    id: str = ""
    name: str = ""
    input: msgspec.Raw = msgspec.Raw(b"{}")
    #: a tool result's content, decoded only when its turn is read (most never are)
    content: msgspec.Raw = msgspec.Raw(b'""')
    is_error: bool = False


class Message(msgspec.Struct):
    id: str = ""
    model: str = ""
    content: str | list[Block | str] = ""


class Line(msgspec.Struct, rename="camel"):
    type: str = ""
    uuid: str = ""
    parent_uuid: str | None = None
    logical_parent_uuid: str | None = None
    is_sidechain: bool = False
    is_meta: bool = False
    is_compact_summary: bool = False
    is_api_error_message: bool = False
    subtype: str = ""
    cwd: str = ""
    git_branch: str = ""
    entrypoint: str = ""
    #: when the line was written (ISO 8601, UTC)
    timestamp: str = ""
    message: Message | None = None


class ToolInput(msgspec.Struct):
    command: str = ""
    description: str = ""
    file_path: str = ""
    path: str = ""
    pattern: str = ""
    url: str = ""
    query: str = ""
    prompt: str = ""


DECODER = msgspec.json.Decoder(Line)
RESULT = msgspec.json.Decoder(str | list[Inner | str])


def read_complete(path: Path, offset: int) -> tuple[bytes, int]:
    """The complete lines of ``path`` from ``offset`` and the offset after them: a last
    line without its newline counts only when it is a whole JSON object already."""
    with open(path, "rb") as handle:
        handle.seek(offset)
        data = handle.read()
    cut = data.rfind(b"\n") + 1
    if cut < len(data) and _whole(data[cut:]):
        cut = len(data)
    return data[:cut], offset + cut


def _whole(tail: bytes) -> bool:
    try:
        return isinstance(msgspec.json.decode(tail), dict)
    except (msgspec.DecodeError, UnicodeDecodeError):
        return False


def decoded_lines(data: bytes) -> Iterator[Line]:
    seen: set[str] = set()
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        try:
            line = DECODER.decode(raw)
        except (msgspec.DecodeError, UnicodeDecodeError):
            continue  # a torn, foreign or malformed line
        if line.uuid:
            if line.uuid in seen:
                continue
            seen.add(line.uuid)
        yield line


def kept(line: Line) -> bool:
    if line.is_sidechain or line.is_meta:
        return False
    if line.type == "system":
        return line.subtype == "compact_boundary"
    if line.type not in ("user", "assistant") or line.message is None:
        return False
    return not (line.is_api_error_message or line.message.model == "<synthetic>")


def is_prompt(line: Line) -> bool:
    """A user line a person wrote (not a tool result, not a summary)."""
    if line.type != "user" or line.message is None or line.is_compact_summary:
        return False
    content = line.message.content
    return isinstance(content, str) or not any(
        isinstance(b, Block) and b.type == "tool_result" for b in content
    )


def parent_of(line: Line) -> str | None:
    return line.parent_uuid or line.logical_parent_uuid


def _forks(lines: list[Line]) -> bool:
    """Whether two prompts share a parent anywhere (a rewind happened)."""
    seen: set[str] = set()
    for line in lines:
        parent = parent_of(line)
        if parent and line.type == "user" and is_prompt(line):
            if parent in seen:
                return True
            seen.add(parent)
    return False


def active_path(lines: list[Line]) -> list[Line]:
    """``lines`` without the prompts a rewind abandoned (and all that followed them)."""
    if not _forks(lines):
        return lines
    by_id = {ln.uuid: ln for ln in lines if ln.uuid}
    children: dict[str, list[str]] = {}
    for line in lines:
        parent = parent_of(line)
        if line.uuid and parent:
            children.setdefault(parent, []).append(line.uuid)
    leaf = next((ln for ln in reversed(lines) if ln.uuid and ln.type != "system"), None)
    active: set[str] = set()
    node = leaf
    while node is not None and node.uuid not in active:
        active.add(node.uuid)
        parent = parent_of(node)
        node = by_id.get(parent) if parent else None
    dropped: set[str] = set()
    for uuid in active:
        prompts = [c for c in children.get(uuid, []) if is_prompt(by_id[c])]
        if len(prompts) > 1:
            for child in prompts:
                if child not in active:
                    _subtree(child, children, dropped)
    return [ln for ln in lines if ln.uuid not in dropped]


def _subtree(root: str, children: dict[str, list[str]], into: set[str]) -> None:
    stack = [root]
    while stack:
        uuid = stack.pop()
        if uuid not in into:
            into.add(uuid)
            stack += children.get(uuid, [])
