"""What the MCP tools return: msgspec Structs, whose JSON schemas are the tools' output schemas.

Kept apart from the tools themselves so that listing the tools loads nothing
but msgspec.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import Meta

SOURCE = "session-capture"


class Stored(msgspec.Struct, kw_only=True):
    """The outcome of ``store_memory``."""

    id: Annotated[str, Meta(description="Entry id: the content hash of the description.")]
    created: Annotated[bool, Meta(description="True for a new entry, false for a new observation.")]
    observation_count: Annotated[int, Meta(description="Times the entry has been observed so far.")]
    name: str
    category: str
    project: Annotated[str, Meta(description="The project the memory was stored from.")]
    source: str = SOURCE
    embedded: Annotated[
        bool, Meta(description="Whether the entry has a vector in the space in force.")
    ] = False
    keywords: list[str] = msgspec.field(default_factory=list)
    redacted: Annotated[
        list[str],
        Meta(
            description="Secrets replaced by [REDACTED] before storing, as 'field: class' "
            "(the text itself is never stored or returned)."
        ),
    ] = msgspec.field(default_factory=list)
    notes: Annotated[list[str], Meta(description="Warnings, if any.")] = msgspec.field(
        default_factory=list
    )
    held: Annotated[
        list[str],
        Meta(
            description="The rules its text tripped (text that steers an agent rather than "
            "teaches it): the memory is held, injected nowhere until its user accepts it "
            "(memlog review). Empty when it is not held."
        ),
    ] = msgspec.field(default_factory=list)


class Hit(msgspec.Struct, kw_only=True):
    """One search result."""

    id: str
    name: str
    category: str
    description: str
    score: Annotated[float, Meta(description="Hybrid score (vector, keyword, prominence).")]


class Found(msgspec.Struct, kw_only=True):
    """The outcome of ``search_memory``."""

    query: str
    mode: Annotated[str, Meta(description="semantic, keyword, prominence (or legacy markdown).")]
    results: list[Hit]
    notes: list[str] = msgspec.field(default_factory=list)


class Memory(msgspec.Struct, kw_only=True):
    """One entry as ``list_memories`` shows it."""

    id: str
    name: str
    category: str
    description: str
    reasoning: str
    project: Annotated[str, Meta(description="The project the entry was first seen in.")]
    projects: Annotated[list[str], Meta(description="Every project the entry was seen in.")]
    references: list[str]
    keywords: list[str]
    observation_count: int
    confidence: str
    source: str
    created_at: str
    updated_at: str


class Listed(msgspec.Struct, kw_only=True):
    """The outcome of ``list_memories``."""

    total: Annotated[int, Meta(description="Live entries matching the filters (before the limit).")]
    memories: Annotated[list[Memory], Meta(description="Most recently updated first.")]
    notes: list[str] = msgspec.field(default_factory=list)


class Influence(msgspec.Struct, kw_only=True):
    """The outcome of ``record_influence``."""

    id: Annotated[str, Meta(description="The memory's entry id.")]
    name: str
    session: str
    verdict: str
    applied_in: Annotated[int, Meta(description="Sessions that applied it, this one included.")]
    judged_in: Annotated[int, Meta(description="Sessions whose use of it was judged.")]
    notes: list[str] = msgspec.field(default_factory=list)


Result = Stored | Found | Listed | Influence


def output_schema(kind: type[Result]) -> dict[str, Any]:
    """The JSON schema of one result type, self-contained (the types it holds in ``$defs``)."""
    (_,), components = msgspec.json.schema_components([kind], ref_template="#/$defs/{name}")
    schema: dict[str, Any] = dict(components.pop(kind.__name__))
    if components:
        schema["$defs"] = components
    return schema


def as_data(value: Result) -> dict[str, Any]:
    """A result as the plain JSON object ``structuredContent`` carries."""
    data: dict[str, Any] = msgspec.to_builtins(value)
    return data
