"""What a feature's spec says about its subject: its title and its opening prose.

Real specs rarely put prose before their first ``##`` heading: most open
with ``# Spec: Title`` and go straight to ``## Problem Statement`` or
``## Overview``, so the #023/#024 rule (the paragraph before the first
``##``) finds nothing.  What a spec does offer is its title line and the
prose under its first sections.  ``title`` is the first ``# `` heading
without a ``Spec:``/``Specification:``/``PRD:``/``Feature N:`` label;
``prose`` is the spec's paragraphs of running text, in order, up to a
number of words: tables, lists, code blocks, headings, quotes, comments and
``**Key:** value`` metadata lines are left out, and so is a paragraph of
fewer than six words.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

#: words of prose a query takes from a spec (the retrieval benchmark chose it, see README)
PROSE_WORDS = 300
MIN_PARAGRAPH_WORDS = 6
_LABEL = re.compile(
    r"^(?:spec(?:ification)?|prd|design|feature(?:\s+[\w.-]+)?)\s*[:\-—–]\s*", re.IGNORECASE
)
_BARE = re.compile(r"^(?:spec(?:ification)?|prd|design)$", re.IGNORECASE)
_META = re.compile(r"^\*\*[^*]{1,40}:\*\*")
_NOT_PROSE = ("#", "|", "- ", "* ", "+ ", ">", "<!--", "---", "===")
_NUMBERED = re.compile(r"^\d+[.)]\s")


def title(text: str) -> str:
    """The first ``# `` heading, without its document-kind label."""
    for line in text.splitlines():
        if line.startswith("# "):
            found = _LABEL.sub("", line[2:].strip()).strip()
            return "" if _BARE.match(found) else found
    return ""


def blocks(text: str) -> Iterator[list[str]]:
    """Runs of non-blank lines; a heading is a block of its own; fenced code is skipped."""
    block: list[str] = []
    fenced = False
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith(("```", "~~~")):
            fenced = not fenced
        if fenced or line.startswith(("```", "~~~")) or not line or line.startswith("#"):
            if block:
                yield block
            block = []
            continue
        block.append(line)
    if block:
        yield block


def paragraph_words(block: list[str]) -> list[str]:
    """The words of a block of running text (metadata lines dropped); none if it is not prose."""
    lines = [line for line in block if not _META.match(line)]
    if not lines or _not_prose(lines[0]):
        return []
    words = " ".join(line for line in lines if not _not_prose(line)).split()
    return words if len(words) >= MIN_PARAGRAPH_WORDS else []


def _not_prose(line: str) -> bool:
    return line.startswith(_NOT_PROSE) or _NUMBERED.match(line) is not None


def prose(text: str, max_words: int = PROSE_WORDS) -> str:
    """The spec's paragraphs of running text, in order, cut at ``max_words`` words."""
    found: list[str] = []
    for block in blocks(text):
        found += paragraph_words(block)
        if len(found) >= max_words:
            break
    return " ".join(found[:max_words])
