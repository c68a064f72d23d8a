"""The ways a lesson may hide an instruction, undone: each gives the text decoded, for the
scan of lessons (``steering``) to read again.

Base64 and hex tokens, percent-encoding and HTML entities, Unicode tag characters,
letters spaced out; and, when the text holds words they would spell, ROT13, the text
reversed, and digits standing for letters.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import html
import re
import urllib.parse
from collections.abc import Iterable

#: Unicode's tag characters, which spell ASCII no one sees
TAGS = range(0xE0000, 0xE0080)
_B64 = re.compile(r"[A-Za-z0-9+/_-]{16,}={0,2}")
_HEX = re.compile(r"\b(?:[0-9a-fA-F]{2}){8,}\b")
_PERCENT = re.compile(r"(?:%[0-9A-Fa-f]{2}){4,}")
_ENTITY = re.compile(r"(?:&#(?:x[0-9a-fA-F]+|[0-9]+);){4,}")
_SPACED = re.compile(r"(?:\S {1,3}){5,}\S")
_LEET = str.maketrans("013457@$", "oieastas")
#: words of English as ROT13 or reversed text spells them: only text holding one is decoded so
_ROT13_WORDS = re.compile(r"\b(?:gur|naq|lbh|vf|sbe|gb|bs|vtaber|eha|srgpu|fraq|cbfg)\b")
_REVERSED_WORDS = re.compile(r"\b(?:eht|dna|uoy|rof|ot|fo|erongi|nur|lruc|hctef|dnes)\b")
#: a word with a digit or sign among its letters (``1gn0r3``)
_LEET_WORDS = re.compile(r"\b[a-z]*[0134578@$][a-z]+[0-9a-z]*\b")


def _printable(raw: bytes) -> str | None:
    """``raw`` as text when it reads as text (mostly printable), else None."""
    for encoding in ("utf-8", "utf-16-le"):
        try:
            text = raw.decode(encoding)
        except UnicodeDecodeError:
            continue
        shown = sum(c.isprintable() or c in "\n\t" for c in text)
        if len(text) >= 6 and shown >= 0.9 * len(text) and any(c.isalpha() for c in text):
            return text
    return None


def _base64(token: str) -> str | None:
    padded = token + "=" * (-len(token) % 4)
    try:
        raw = base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
    except (binascii.Error, ValueError):
        return None
    return _printable(raw)


def decodings(text: str) -> Iterable[tuple[str, str]]:
    """Each way ``text`` may hide an instruction, as ``(how, the text decoded)``."""
    for token in _B64.findall(text):
        found = _base64(token)
        if found is not None:
            yield "base64", found
    for token in _HEX.findall(text):
        found = _printable(bytes.fromhex(token))
        if found is not None:
            yield "hex", found
    if _PERCENT.search(text):
        yield "percent-encoding", urllib.parse.unquote(text)
    if _ENTITY.search(text):
        yield "HTML entities", html.unescape(text)
    tagged = "".join(chr(ord(c) - 0xE0000) for c in text if ord(c) in TAGS)
    if tagged:
        yield "tag characters", tagged
    for run in _SPACED.findall(text):
        if sum(len(w) == 1 for w in run.split(" ")) >= 6:
            yield "spaced letters", re.sub(r"(?<=\S) (?=\S)", "", run)
    lowered = text.lower()
    if _ROT13_WORDS.search(lowered):
        yield "ROT13", codecs.encode(text, "rot13")
    if _REVERSED_WORDS.search(lowered):
        yield "reversed", text[::-1]
    if len(_LEET_WORDS.findall(lowered)) >= 2:
        yield "digits for letters", text.translate(_LEET)


#: encodings no lesson writes prose in: a URL found only once decoded is hidden on purpose
OBFUSCATIONS = frozenset(("base64", "hex", "percent-encoding", "HTML entities", "tag characters",
                           "spaced letters"))  # fmt: skip
