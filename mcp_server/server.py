"""``memlog serve-mcp``: the memory tools over MCP stdio, on the official SDK.

Built on ``mcp.server.mcpserver.MCPServer`` (mcp 2.x).  Tool input schemas
come from the annotated signatures below; results are pydantic models, so
every call returns structured content with a published output schema.

Whatever a call does wrong it gets one readable tool error (``isError``)
and the server keeps serving: schema violations are reworded from
pydantic's multi-line report, memlog's own errors keep their message, and
a crash is kept in ``errors.log`` and reported as one line.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.tools import Tool
from mcp.types import ToolAnnotations
from pydantic import Field, ValidationError

from memlog import __version__
from memlog.errors import describe
from memlog.mcp_server import tools
from memlog.workspace import Workspace

T = TypeVar("T")
SHOWN = 60
#: pydantic's wording for these speaks of Python types; a client sends JSON
JSON_WORDING = {"tuple_type": "Input should be an array", "list_type": "Input should be an array"}

INSTRUCTIONS = (
    "memlog is a persistent engineering memory shared across projects. Call store_memory "
    "when you learn something worth keeping (a pattern to follow, an anti-pattern to avoid, "
    "a heuristic), search_memory to recall what is known about a topic, and list_memories "
    "to browse. Stored memories are injected at the start of later work."
)

CaptureCategory = Literal["anti-patterns", "patterns", "heuristics"]
ReadCategory = Literal["anti-patterns", "patterns", "heuristics", "facts"]
Name = Annotated[str, Field(description="Short title of the learning (required, not blank).")]
Description = Annotated[
    str,
    Field(
        description="What was learned, conclusion included (required, not blank). Its "
        "normalised text is the entry id: storing the same description again counts "
        "another observation of the same entry."
    ),
]
Reasoning = Annotated[
    str, Field(description="Why it matters and how it was found (required, not blank).")
]
Category = Annotated[
    CaptureCategory,
    Field(
        description="anti-patterns (to avoid), patterns (to follow) or heuristics. Facts "
        "are not captured here: they come from extraction and are not injected by default."
    ),
]
References = Annotated[
    tuple[str, ...], Field(description="Related files, features or projects (optional).")
]
Query = Annotated[str, Field(description="What to recall, in words (required, not blank).")]
SearchLimit = Annotated[int, Field(ge=1, le=tools.SEARCH_LIMIT_MAX, description="Results at most.")]
ListLimit = Annotated[int, Field(ge=1, le=tools.LIST_LIMIT_MAX, description="Entries at most.")]
Filter = Annotated[ReadCategory | None, Field(description="Only this category (default: all).")]
Project = Annotated[
    str | None,
    Field(description="Only entries seen in this project, by name (default: every project)."),
]


class ReadableTool(Tool):
    """A tool whose argument errors read as one line instead of pydantic's report."""

    async def run(
        self,
        arguments: dict[str, Any],
        context: Context[Any, Any],
        convert_result: bool = False,
    ) -> Any:
        try:
            return await super().run(arguments, context, convert_result)
        except UnexpectedToolError:
            raise
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                message = describe_invalid(exc.__cause__)
                raise ToolError(f"Error executing tool {self.name}: {message}") from None
            raise


def describe_invalid(error: ValidationError) -> str:
    """Every problem of a rejected call, on one line."""
    problems = []
    for item in error.errors(include_url=False):
        where = _where(item["loc"])
        if item["type"] == "missing":
            problems.append(f"{where} is required")
        else:
            message = JSON_WORDING.get(item["type"], item["msg"])
            problems.append(f"{where}: {message} (got {_shown(item.get('input'))})")
    return "invalid arguments: " + "; ".join(problems)


def _where(loc: Sequence[int | str]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "arguments"


def _shown(value: object) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"


def guarded(ws: Workspace, action: Callable[[], T]) -> T:
    """Run a tool body; every failure becomes a one-line tool error."""
    try:
        return action()
    except Exception as exc:  # noqa: BLE001 - a crash is logged and answered, never fatal
        raise ToolError(describe(exc, ws.home).message) from None


def build_server(cwd: Path) -> MCPServer:
    """The server, its tools bound to the project of ``cwd`` (resolved once, here)."""
    ws = Workspace.open(cwd)

    def store_memory(
        name: Name,
        description: Description,
        reasoning: Reasoning,
        category: Category,
        references: References = (),
    ) -> tools.Stored:
        """Save a learning to persistent memory, now, for later work in any project.

        Use it for a debugging insight, a codebase discovery or a decision worth
        keeping. The memory is recorded for the current project with source
        session-capture, embedded when the embedding provider is available, and
        injected at the start of later work when relevant. Storing a description
        that is already known adds an observation to that entry (no duplicate).
        Returns the entry id and whether the entry is new.
        """
        return guarded(
            ws, lambda: tools.store_memory(ws, name, description, reasoning, category, references)
        )

    def search_memory(
        query: Query, limit: SearchLimit = 10, category: Filter = None
    ) -> tools.Found:
        """Search memories with the same hybrid ranking the start-of-work injection uses.

        Ranks by vector similarity, keyword match (FTS5) and prominence
        (observations, confidence, recency, recalls); best first.
        """
        return guarded(ws, lambda: tools.search_memory(ws, query, limit, category))

    def list_memories(
        category: Filter = None, project: Project = None, limit: ListLimit = 50
    ) -> tools.Listed:
        """List live memories, most recently updated first."""
        return guarded(ws, lambda: tools.list_memories(ws, category, project, limit))

    writes = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False)
    reads = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    return MCPServer(
        name="memlog",
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
        tools=[
            ReadableTool.from_function(store_memory, title="Store a memory", annotations=writes),
            ReadableTool.from_function(search_memory, title="Search memories", annotations=reads),
            ReadableTool.from_function(list_memories, title="List memories", annotations=reads),
        ],
    )


def run(cwd: Path) -> None:
    """Serve on stdin/stdout until the client closes the stream (an iflow store waiting
    in the home is adopted first; its vectors follow in the background)."""
    from memlog.api.adoption import adopt

    server = build_server(cwd)
    adopted = adopt(Workspace.open(cwd), settle=False)
    for line in [*adopted.notes, adopted.line] if adopted is not None else []:
        print(f"memlog: {line}", file=sys.stderr)  # stdout carries the protocol
    server.run("stdio")
