"""What the model is asked: the transcript as text (Puffin's limits), the instructions
and the JSON schemas of the answers.

Limits, as the Puffin memory plugin has them: each turn's prompt and
response are capped at 2000 characters each, the whole transcript at
80,000, then ``[...N remaining turns truncated for length]``.  A session
with no turn, or only empty responses, is ``empty``; one with no turn of at
least 50 characters (prompt and response together) is ``trivial``: both are
skipped without a call.  The schemas use only what structured outputs
accept everywhere (no numeric or length bounds): the bounds are checked in
``answers``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

from memlog.capture.extraction.transcript import Turn
from memlog.vocabulary import SECTION_HEADINGS, SECTIONS

MAX_TURN_CHARS = 2000
MAX_TRANSCRIPT_CHARS = 80_000
MIN_SUBSTANTIVE_CHARS = 50
#: characters per token assumed when estimating (conservative for prose and code)
CHARS_PER_TOKEN = 3.0
#: output tokens assumed for an answer when estimating its cost
ANSWER_TOKENS = 1500


class Scope(NamedTuple):
    """Where knowledge belongs: a project and a git branch ("" outside a repository)."""

    project: str
    branch: str


class Rendered(NamedTuple):
    text: str
    #: turns included, and turns left out for length
    kept: int
    truncated: int


def fallback(turns: Sequence[Turn]) -> str | None:
    """``empty`` or ``trivial`` when the turns are not worth a call, else None."""
    if not turns or not any(t.response.strip() for t in turns):
        return "empty"
    if not any(len(t.user) + len(t.response) >= MIN_SUBSTANTIVE_CHARS for t in turns):
        return "trivial"
    return None


def cap(text: str, limit: int = MAX_TURN_CHARS) -> str:
    """``text`` cut to ``limit`` characters, the cut marked with an ellipsis."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def label(scope: Scope, scopes: Sequence[Scope]) -> str:
    """How a scope is named to the model: its branch, with the project when several."""
    branch = scope.branch or "(no branch)"
    return branch if len({s.project for s in scopes}) == 1 else f"{scope.project}: {branch}"


def render(turns: Sequence[Turn], scopes: Sequence[Scope] | None = None) -> Rendered:
    """The transcript as the model reads it; ``scopes`` (one per turn) are named on each
    turn when there are several."""
    distinct = list(dict.fromkeys(scopes or ()))
    parts: list[str] = []
    total = 0
    for number, turn in enumerate(turns):
        head = f"### Turn {number + 1}"
        if len(distinct) > 1 and scopes is not None:
            head += f" [scope: {label(scopes[number], distinct)}]"
        text = f"{head}\nUser: {cap(turn.user)}\nAssistant: {cap(turn.response)}\n"
        if total + len(text) > MAX_TRANSCRIPT_CHARS:
            left = len(turns) - number
            parts.append(f"[...{left} remaining turns truncated for length]\n")
            return Rendered("\n".join(parts), number, left)
        parts.append(text)
        total += len(text) + 1
    return Rendered("\n".join(parts), len(turns), 0)


def estimate_tokens(*texts: str) -> int:
    return math.ceil(sum(len(t) for t in texts) / CHARS_PER_TOKEN)


# -- extraction ---------------------------------------------------------------------------

EXTRACTION_SYSTEM = """\
You read a conversation between a developer and Claude Code and extract the \
engineering knowledge worth keeping for later sessions on the same codebase.

Sections:
- facts: cross-cutting technical facts, constraints, glossary;
- architectural-decisions: design choices and their trade-offs, spanning components;
- conventions: coding standards, naming patterns, structural rules;
- bug-patterns: recurring issues and their root causes.

Rules:
- each item is one self-contained statement of at most two sentences that names \
the concrete thing (file, module, command, setting) it is about;
- keep only what stays true after this session: no progress reports, plans, \
greetings or one-off values;
- never repeat anything shown as [private] or [REDACTED];
- confidence is between 0 and 1: how sure the conversation makes it;
- an empty list is the right answer when nothing durable was learned."""


def section_schema() -> dict[str, Any]:
    return {"type": "string", "enum": list(SECTIONS)}


def extraction_schema(labels: Sequence[str] = ()) -> dict[str, Any]:
    """The answer: ``{"extractions": [{section, content, confidence[, scope]}]}``."""
    item: dict[str, Any] = {
        "section": section_schema(),
        "content": {"type": "string"},
        "confidence": {"type": "number"},
    }
    if len(labels) > 1:
        item["scope"] = {"type": "string", "enum": list(labels)}
    return _object(
        {"extractions": {"type": "array", "items": _object(item, list(item))}}, ["extractions"]
    )


def extraction_prompt(rendered: Rendered, labels: Sequence[str]) -> str:
    where = ""
    if len(labels) > 1:
        named = ", ".join(f'"{x}"' for x in labels)
        where = f"\nThe turns happened in several scopes ({named}): give each item the scope of "
        where += "the turns it comes from.\n"
    return f"Extract the knowledge of this conversation.{where}\n\n{rendered.text}"


# -- evolution ------------------------------------------------------------------------------

EVOLUTION_SYSTEM = """\
You maintain the memory of one git branch of a project: short statements in four \
sections (facts, architectural-decisions, conventions, bug-patterns). You are shown \
the existing items, each under a number, and new extractions from a recent session. \
Answer with operations, never with a rewritten memory:
- keep(id): the item stays as it is (items you do not mention are kept too);
- update(id, content, reason): newer knowledge refines or contradicts the item; \
content is the item as it should now read (newer knowledge wins a conflict);
- remove(id, reason): the item is contradicted or obsolete (not merely unmentioned);
- add(section, content): knowledge that is not captured yet; merge complementary \
new items into one, and leave out new items the memory already holds.
When two statements say opposite things, never keep both as they are: update the \
older with the newer (its reason names both and why), or, when each holds under its own \
condition, update them so that each states the condition that separates them.
Never remove or update an item only because the new extractions do not mention it."""


def evolution_schema() -> dict[str, Any]:
    """The answer: ``{"operations": [{op, id?, section?, content?, reason?}]}``."""
    operation = {
        "op": {"type": "string", "enum": ["add", "update", "remove", "keep"]},
        "id": {"type": "integer"},
        "section": section_schema(),
        "content": {"type": "string"},
        "reason": {"type": "string"},
    }
    return _object(
        {"operations": {"type": "array", "items": _object(operation, ["op"])}}, ["operations"]
    )


def numbered(items: Sequence[tuple[str, str]]) -> str:
    """``[n] (section) text`` lines for (section, text) pairs, numbered from 1."""
    return "\n".join(f"[{n}] ({section}) {text}" for n, (section, text) in enumerate(items, 1))


def evolution_prompt(
    existing: Sequence[tuple[str, str]], new: Sequence[tuple[str, str]], branch: str
) -> str:
    heading = SECTION_HEADINGS
    sections = ", ".join(heading[s] for s in SECTIONS)
    news = "\n".join(f"- ({section}) {text}" for section, text in new) or "(none)"
    ask = "Consolidate the memory: merge duplicates, resolve conflicts."
    if new:
        ask = "Merge the new extractions into the memory."
    return (
        f"Branch: {branch or '(no branch)'} (sections: {sections})\n\n"
        f"Existing memory:\n{numbered(existing)}\n\nNew extractions:\n{news}\n\n{ask}"
    )


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }
