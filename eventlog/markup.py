"""What in a lesson's text can break the frame of the block it is injected in, or hide from
its reader: one definition for the scan that holds such text (``steering``) and for
``neutral``, which every renderer of an injected block shows a lesson's text through.

``neutral``: invisible characters are dropped, code fences become quotes (``'''``), a
line that would open a heading, a rule, a quote, a fence or a role (``System:``) is
escaped with a backslash, and role or control tags (``<system-reminder>``, ``[INST]``)
lose their brackets (``‹system-reminder›``).  Text without any of these comes out as it
went in.

Light: a few patterns, nothing loaded with them (the hook renders on every start).
"""

from __future__ import annotations

import re

#: every format (Cf) and control (Cc) character but tab, newline and carriage return, as
#: Unicode 15 lists them (``tests/eventlog/test_steering.py`` holds it to ``unicodedata``):
#: zero-width characters, bidirectional controls, tag characters, the soft hyphen …
INVISIBLE_RANGES = (
    (0x0, 0x8), (0xB, 0xC), (0xE, 0x1F), (0x7F, 0x9F), (0xAD, 0xAD), (0x600, 0x605),
    (0x61C, 0x61C), (0x6DD, 0x6DD), (0x70F, 0x70F), (0x890, 0x891), (0x8E2, 0x8E2),
    (0x180E, 0x180E), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x2064), (0x2066, 0x206F),
    (0xFEFF, 0xFEFF), (0xFFF9, 0xFFFB), (0x110BD, 0x110BD), (0x110CD, 0x110CD),
    (0x13430, 0x1343F), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0000, 0xE007F),
)  # fmt: skip
INVISIBLE = re.compile("[" + "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in INVISIBLE_RANGES) + "]")

#: the words a line plays a role with (``System:``, ``Human:``)
ROLES = "system|user|human|assistant|developer|claude|ai|model|tool|operator|admin"
#: the names of role and control tags (``<system-reminder>``, ``</memory>``)
TAG_NAMES = (
    r"system(?:[-_ ]?(?:reminder|prompt|message))?|instructions?|memory|memories|"
    r"engineering[-_]memory|user|assistant|human|function_calls|function_results|invoke|"
    r"parameter|tool_use|tool_result|antml:[a-z_]+|im_start|im_end|context|prompt"
)
#: a role or control tag, or a chat template's marker
CONTROL_TAG = (
    rf"</?[ \t]*(?:{TAG_NAMES})(?=[\s/>])[^<>\n]{{0,60}}>|<\|[a-z_]+\|>|\[/?inst\]|<</?sys>>"
)
#: what opens a line and makes it structure: a fence, a heading, a rule, a quote, a role
LINE_START = (
    r"^[ \t]{0,3}(?:```|~~~)"
    r"|^[ \t]{0,3}#{1,6}(?:[ \t]|$)"
    r"|^[ \t]{0,3}(?:-{3,}|\*{3,}|_{3,}|={3,})[ \t]*$"
    rf"|^[ \t]*\**(?:{ROLES})\**[ \t]*:"
    r"|^[ \t]*\*memory: \d+ entries"
)


_FENCE = re.compile(r"`{3,}|~{3,}")
_LINE = re.compile(rf"(?:{LINE_START}|^[ \t]*>)", re.IGNORECASE | re.MULTILINE)
_TAG = re.compile(CONTROL_TAG, re.IGNORECASE)
_BRACKETS = str.maketrans({"<": "‹", ">": "›", "[": "‹", "]": "›"})


def neutral(text: str) -> str:
    """``text`` that can break no frame (see the module); unchanged when it could not."""
    text = INVISIBLE.sub("", text)
    text = _FENCE.sub(lambda m: "'" * len(m.group()), text)
    text = _TAG.sub(lambda m: m.group().translate(_BRACKETS), text)
    return _LINE.sub(lambda m: _escaped(m.group()), text)


def _escaped(start: str) -> str:
    stripped = start.lstrip(" \t")
    return start[: len(start) - len(stripped)] + "\\" + stripped


def one_line(text: str) -> str:
    """``neutral`` text on one line (a name, a title, a list item)."""
    return neutral(" ".join(text.split()))
