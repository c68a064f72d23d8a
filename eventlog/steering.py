"""Text that tries to steer the agent rather than teach it: the scan every lesson passes.

Whatever memlog holds is later put in front of the model as context it
trusts, so a lesson is a persistent prompt injection waiting to happen: one
written by a model that read a hostile page, extracted from a transcript that
carried injected text, imported from a file, or synced from another machine.
Every door scans the lesson's text before it is stored (``held``); a hit holds
the entry out of every injection until its user accepts it (``memlog review``).

The rules, each named in what it holds (``RULES``):

* ``hidden-characters``: zero-width and other invisible format characters,
  bidirectional overrides, Unicode tag characters (which spell ASCII no one
  sees), control characters;
* ``frame-markup``: what breaks the injected block's frame: a code fence or a
  ``#`` heading at the start of a line, a ``---`` line, a line that plays a
  role (``System:``, ``Human:``, ``Assistant:``), a role or control tag
  (``<system-reminder>``, ``</memory>``, ``<|im_start|>``, ``[INST]``);
* ``override``: instructions about the agent's instructions: to ignore or
  override them, to take a new identity or mode, to keep something from the
  user, to skip asking for permission or a review;
* ``remote-exec``: commands that run what they fetch (``curl … | sh``,
  ``bash <(curl …)``, ``exec(urlopen(…))``), reverse shells, encoded
  PowerShell, and a few commands no lesson needs (``rm -rf ~``, a forced push
  to main, a new SSH key, TLS checks off, a package index of someone's own);
* ``fetch-and-follow``: a URL to fetch whose content is to be followed,
  obeyed or run;
* ``exfiltration``: sending secrets (keys, ``.env``, credentials, tokens, the
  environment, the user's prompts) somewhere (a URL, an address, a gist, a pull
  request, the answer);
* ``encoded-instruction``: an instruction to decode something and act on it,
  or text that, once decoded (base64, hex, percent-encoding, HTML entities,
  ROT13, reversed, letters spaced out or spelt in digits, tag characters),
  holds what another rule holds.

Each field is scanned alone and the entry's fields together (an instruction
cut across its name and reasoning is whole there).  The scan is pure: the
same text gives the same hits.  What each rule holds on a corpus of payloads
and on the real knowledge banks is measured by ``benchmarks/bench_trust.py``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import NamedTuple

from memlog.eventlog import markup
from memlog.eventlog.decodings import OBFUSCATIONS, decodings
from memlog.eventlog.events import Observed
from memlog.eventlog.instructions import DECODE_RULE, TEXT_RULES, URL

RULES = (
    "hidden-characters",
    "frame-markup",
    "override",
    "remote-exec",
    "fetch-and-follow",
    "exfiltration",
    "encoded-instruction",
)
#: the characters of text a hit shows, and of the text matched it keeps
EXCERPT_CHARS = 80
MATCHED_CHARS = 200


class Hit(NamedTuple):
    """One rule that matched: in which field (``entry``: the fields together), the text
    around the match (to show), and the text matched, lower-cased (what names it)."""

    rule: str
    field: str
    excerpt: str
    matched: str = ""


# -- hidden characters ---------------------------------------------------------------------------

_INVISIBLE = markup.INVISIBLE
_ZWJ = "\u200d"


def _emoji_joiner(text: str, at: int) -> bool:
    """A zero-width joiner between two symbols is part of an emoji (a woman and a laptop
    make a programmer), not a hiding place."""
    before = text[at - 1] if at else ""
    after = text[at + 1] if at + 1 < len(text) else ""
    return all(c and unicodedata.category(c) in ("So", "Sk") for c in (before, after))


def hidden(text: str) -> str | None:
    """What the first invisible character of ``text`` is (None when it has none)."""
    for match in _INVISIBLE.finditer(text):
        char = match.group()
        if not (char == _ZWJ and _emoji_joiner(text, match.start())):
            name = unicodedata.name(char, "")
            return f"U+{ord(char):04X} {name}".strip()
    return None


def visible(text: str) -> str:
    """``text`` without its invisible characters, width folded (NFKC): what a rule reads."""
    return unicodedata.normalize("NFKC", _INVISIBLE.sub("", text))


# -- frame markup --------------------------------------------------------------------------------

_FRAME = re.compile(rf"{markup.LINE_START}|{markup.CONTROL_TAG}", re.IGNORECASE | re.MULTILINE)


def _excerpt(text: str, span: tuple[int, int] | None = None) -> str:
    if span is not None:  # from the start of the word a few before the match
        start = max(0, span[0] - 12)
        space = text.find(" ", start, span[0])
        start = space + 1 if space >= 0 else start
        text = text[start : start + EXCERPT_CHARS]
    folded = " ".join(text.split())
    return folded if len(folded) <= EXCERPT_CHARS else folded[: EXCERPT_CHARS - 1] + "…"


def _text_hits(text: str, field: str) -> list[Hit]:
    lowered = _lowered(text)
    found = []
    for rule, find in TEXT_RULES:
        span = find(lowered)
        if span is not None:
            shown = _excerpt(_shown_as(text, lowered), span)
            found.append(Hit(rule, field, shown, _matched(lowered, span)))
    return found


def _matched(lowered: str, span: tuple[int, int]) -> str:
    return " ".join(lowered[span[0] : span[1]].split())[:MATCHED_CHARS]


def _lowered(text: str) -> str:
    return text.lower()


def _shown_as(text: str, lowered: str) -> str:
    """The text an excerpt is cut from: as written, when lower-casing kept every place."""
    return text if len(text) == len(lowered) else lowered


def _encoded_hits(text: str, field: str) -> list[Hit]:
    lowered = _lowered(text)
    match = DECODE_RULE.search(lowered)
    if match is not None:
        shown = _excerpt(_shown_as(text, lowered), match.span())
        return [Hit("encoded-instruction", field, shown, _matched(lowered, match.span()))]
    for how, decoded in decodings(text):
        readable = visible(decoded)
        url = re.search(URL, readable)
        if how in OBFUSCATIONS and url is not None and not re.search(URL, text):
            shown = f"{how}: a URL: {_excerpt(readable)}"
            return [Hit("encoded-instruction", field, shown, f"{how}: {url.group().lower()}")]
        inner = _text_hits(" ".join(readable.split()), field)
        if not inner and how in OBFUSCATIONS:  # (frame markup in the plain text is its own)
            inner = [Hit("frame-markup", field, _excerpt(readable, m.span()), m.group().lower())
                     for m in [_FRAME.search(readable)] if m]  # fmt: skip
        if inner:
            first = inner[0]
            shown = f"{how}: {first.rule}: {first.excerpt}"
            return [Hit("encoded-instruction", field, shown, f"{how}: {first.matched}")]
    return []


# -- the scan ------------------------------------------------------------------------------------


def scan(fields: Sequence[tuple[str, str]]) -> list[Hit]:
    """Every rule that ``fields`` (each ``(name, text)``) trip, the first hit of each.  Hidden
    characters and frame markup are looked for field by field; what the text says, in the
    fields read together, whitespace folded (an instruction cut across fields or lines is
    whole there), named by the field the hit starts in."""
    found: dict[str, Hit] = {}
    parts: list[tuple[int, str]] = []  # where each field starts in the text read together
    texts: list[str] = []
    kept: list[str] = []  # the fields as written (the spacing of spaced-out letters kept)
    at = 0
    for field, text in fields:
        if not text:
            continue
        what = hidden(text)
        if what is not None:
            found.setdefault("hidden-characters", Hit("hidden-characters", field, what, what))
        readable = visible(text)
        match = _FRAME.search(readable)
        if match is not None:
            hit = Hit(
                "frame-markup", field, _excerpt(readable, match.span()), match.group().lower()
            )
            found.setdefault("frame-markup", hit)
        folded = " ".join(readable.split())
        kept.append(readable)
        parts.append((at, field))
        texts.append(folded)
        at += len(folded) + 1
    whole = " ".join(texts)
    lowered = _lowered(whole)
    for rule, find in TEXT_RULES:
        span = find(lowered)
        if span is not None:
            field = next(f for start, f in reversed(parts) if start <= span[0])
            shown = _excerpt(_shown_as(whole, lowered), span)
            found.setdefault(rule, Hit(rule, field, shown, _matched(lowered, span)))
    if not found.keys() & _SAYS:
        for hit in _encoded_hits("\n".join(kept), "entry"):
            found.setdefault(hit.rule, hit)
    return [found[rule] for rule in RULES if rule in found]


#: the rules about what the text says
_SAYS = frozenset(rule for rule, _ in TEXT_RULES)


def observed_fields(event: Observed) -> list[tuple[str, str]]:
    """The text of an observation, field by field, as the scan reads it."""
    return [
        ("name", event.name),
        ("description", event.description),
        ("reasoning", event.reasoning),
        ("keywords", ", ".join(event.keywords)),
        ("references", "\n".join(event.references)),
        ("details", "\n".join(event.details)),
        ("layout", "\n".join(event.layout)),
        ("project", event.project),
        ("feature", event.feature),
        ("branch", event.branch),
    ]
