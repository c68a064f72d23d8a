"""The tools the server offers: names, descriptions, input and output schemas, annotations,
and the check of a call's arguments against its input schema.

Input schemas are written out here, for the model to read; ``check`` holds
arguments to them (every problem on one line, the defaults filled in) and to
``MAX_EVENT_BYTES``, memlog's one limit on what comes in.  Listing the tools
loads nothing but msgspec.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, NamedTuple

import msgspec

from memlog.mcp_server import results
from memlog.vocabulary import CATEGORIES, KB_CATEGORIES, MAX_EVENT_BYTES, VERDICTS

SEARCH_LIMIT_MAX = 100
LIST_LIMIT_MAX = 1000
SHOWN = 60


def _text(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


def _optional(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}], "default": None, "description": description}


def _limit(most: int, default: int, description: str) -> dict[str, Any]:
    return {
        "type": "integer", "minimum": 1, "maximum": most, "default": default,
        "description": description,
    }  # fmt: skip


_READ_CATEGORY = _optional(
    {"type": "string", "enum": list(CATEGORIES)}, "Only this category (default: all)."
)

STORE_INPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": _text("Short title of the learning (required, not blank)."),
        "description": _text(
            "What was learned, conclusion included (required, not blank). Its normalised text "
            "is the entry id: storing the same description again counts another observation "
            "of the same entry."
        ),
        "reasoning": _text("Why it matters and how it was found (required, not blank)."),
        "category": {
            "type": "string",
            "enum": list(KB_CATEGORIES),
            "description": "anti-patterns (to avoid), patterns (to follow) or heuristics. "
            "Facts are not captured here: they come from extraction and are not injected "
            "by default.",
        },
        "references": {
            "type": "array",
            "items": {"type": "string"},
            "default": [],
            "description": "Related files, features or projects (optional).",
        },
    },
    "required": ["name", "description", "reasoning", "category"],
}
SEARCH_INPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": _text("What to recall, in words (required, not blank)."),
        "limit": _limit(SEARCH_LIMIT_MAX, 10, "Results at most."),
        "category": _READ_CATEGORY,
    },
    "required": ["query"],
}
LIST_INPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "category": _READ_CATEGORY,
        "project": _optional(
            {"type": "string"},
            "Only entries seen in this project, by name (default: every project).",
        ),
        "limit": _limit(LIST_LIMIT_MAX, 50, "Entries at most."),
    },
}

INFLUENCE_INPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "entry": _text(
            "The memory: its id (or the first characters of it) or its name, as the "
            "Engineering Memory block or search_memory shows it (required)."
        ),
        "verdict": {
            "type": "string",
            "enum": list(VERDICTS),
            "description": "applied: this session did what the memory says; contradicted: it "
            "did the opposite, or found the memory wrong here; not used: it did not come up.",
        },
        "evidence": {
            "type": "string",
            "default": "",
            "description": "One short quote or sentence saying where (optional, a line at most).",
        },
        "session": _optional(
            {"type": "string"},
            "The Claude Code session (default: the one that started this server).",
        ),
    },
    "required": ["entry", "verdict"],
}


class Tool(NamedTuple):
    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    output: type[results.Result]
    read_only: bool

    def listing(self, version: str) -> dict[str, Any]:
        """The tool as ``tools/list`` gives it to a client speaking ``version``."""
        shown: dict[str, Any] = {
            "name": self.name, "description": self.description, "inputSchema": self.input_schema,
        }  # fmt: skip
        if version >= "2025-03-26":
            shown["annotations"] = self.annotations()
        if version >= "2025-06-18":
            shown["title"] = self.title
            shown["outputSchema"] = results.output_schema(self.output)
        return shown

    def annotations(self) -> dict[str, Any]:
        if self.read_only:
            return {"title": self.title, "readOnlyHint": True, "openWorldHint": False}
        return {
            "title": self.title, "readOnlyHint": False, "destructiveHint": False,
            "idempotentHint": False, "openWorldHint": False,
        }  # fmt: skip


TOOLS: dict[str, Tool] = {
    tool.name: tool
    for tool in (
        Tool(
            "store_memory",
            "Store a memory",
            "Save a learning to persistent memory, now, for later work in any project.\n\n"
            "Use it for a debugging insight, a codebase discovery or a decision worth keeping. "
            "The memory is recorded for the current project with source session-capture, "
            "embedded when the embedding provider is available, and injected at the start of "
            "later work when relevant. Storing a description that is already known adds an "
            "observation to that entry (no duplicate). Returns the entry id and whether the "
            f"entry is new. The arguments take at most {MAX_EVENT_BYTES} bytes of JSON.",
            STORE_INPUT,
            results.Stored,
            read_only=False,
        ),
        Tool(
            "search_memory",
            "Search memories",
            "Search memories with the same hybrid ranking the start-of-work injection uses.\n\n"
            "Ranks by lexical match, vector similarity and prominence (observations, "
            "confidence, recency, recalls); best first.",
            SEARCH_INPUT,
            results.Found,
            read_only=True,
        ),
        Tool(
            "list_memories",
            "List memories",
            "List live memories, most recently updated first.",
            LIST_INPUT,
            results.Listed,
            read_only=True,
        ),
        Tool(
            "record_influence",
            "Say what a memory did",
            "Say what this session did with a memory it was given: applied, contradicted or "
            "not used, with a line of evidence.\n\nmemlog ranks memories that sessions apply "
            "above those they are given and never use, and proposes retiring the ones never "
            "applied. Your own word counts over memlog's reading of the transcript.",
            INFLUENCE_INPUT,
            results.Influence,
            read_only=False,
        ),
    )
}


class Invalid(Exception):
    """Arguments a tool refuses: the message says every problem, on one line."""


def check(tool: Tool, arguments: dict[str, Any]) -> dict[str, Any]:
    """``arguments`` held to the tool's input schema and size limit, defaults filled in."""
    size = len(msgspec.json.encode(arguments))
    if size > MAX_EVENT_BYTES:
        raise Invalid(
            f"the arguments take {size} bytes of JSON, more than memlog's maximum event "
            f"size of {MAX_EVENT_BYTES} bytes: store a shorter memory"
        )
    properties: dict[str, Any] = tool.input_schema["properties"]
    problems = [f"{name} is required" for name in tool.input_schema.get("required", ())
                if name not in arguments]  # fmt: skip
    values: dict[str, Any] = {}
    for name, schema in properties.items():
        if name in arguments:
            value, problem = _held(arguments[name], schema, name)
            values[name] = value
            problems += problem
        elif "default" in schema:
            values[name] = schema["default"]
    if problems:
        raise Invalid("invalid arguments: " + "; ".join(problems))
    return values


def _held(value: Any, schema: dict[str, Any], where: str) -> tuple[Any, list[str]]:
    """``value`` as the schema takes it, and what is wrong with it."""
    if "anyOf" in schema:  # a type or null, as the schemas above write optional values
        tried = [_held(value, option, where) for option in schema["anyOf"]]
        return next((t for t in tried if not t[1]), tried[0])
    kind = schema.get("type")
    if kind == "null":
        return value, [] if value is None else [f"{where}: should be null (got {_shown(value)})"]
    value = _integral(value) if kind == "integer" else value
    if not _is(kind, value):
        return value, [f"{where}: should be {_expected(schema)} (got {_shown(value)})"]
    if kind == "array":
        return _items(value, schema["items"], where)
    return value, _bounds(value, schema, where)


def _items(value: list[Any], schema: dict[str, Any], where: str) -> tuple[Any, list[str]]:
    held: list[Any] = []
    problems: list[str] = []
    for n, item in enumerate(value):
        kept, wrong = _held(item, schema, f"{where}[{n}]")
        held.append(kept)
        problems += wrong
    return held, problems


def _bounds(value: Any, schema: dict[str, Any], where: str) -> list[str]:
    if "enum" in schema and value not in schema["enum"]:
        return [f"{where}: should be {_expected(schema)} (got {_shown(value)})"]
    if "minimum" in schema and value < schema["minimum"]:
        return [f"{where}: should be at least {schema['minimum']} (got {_shown(value)})"]
    if "maximum" in schema and value > schema["maximum"]:
        return [f"{where}: should be at most {schema['maximum']} (got {_shown(value)})"]
    return []


_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "array": (list,), "object": (dict,),
}  # fmt: skip
_NAMES = {"string": "a string", "integer": "an integer", "array": "an array", "object": "an object"}


def _is(kind: str | None, value: Any) -> bool:
    if kind is None:
        return True
    return isinstance(value, _TYPES[kind]) and not isinstance(value, bool)


def _integral(value: Any) -> Any:
    """A whole number written as ``10.0`` is the integer 10."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _expected(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return _one_of(schema["enum"])
    return _NAMES.get(schema.get("type", ""), "a value")


def _one_of(choices: Sequence[str]) -> str:
    quoted = [f"'{c}'" for c in choices]
    return "one of " + ", ".join(quoted[:-1]) + " or " + quoted[-1]


def _shown(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"
