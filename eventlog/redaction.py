"""Finding secrets in text: ``redact(text)`` returns the cleaned text and what was found.

Every writer's text passes through here before it reaches the log (see
``secrets.redact_event``); extraction and anything else that handles text
from outside can call ``redact`` directly.  Each finding has a class
(``stripe-key``, ``jwt``, ``url-password`` …) so callers can say what was
removed without repeating it.

The rules, most specific first:

* PEM private key blocks (a block cut short is removed to its end);
* credentials in URLs (``scheme://user:PASSWORD@host``: the password only);
* JSON Web Tokens (``eyJ….eyJ….sig``);
* keys with a well-known prefix: Stripe (``sk_live_``, ``rk_``, ``whsec_``),
  OpenAI and Anthropic (``sk-``, ``sk-proj-``, ``sk-ant-``), AWS key ids
  (``AKIA``/``ASIA``), GitHub, GitLab, Slack, Google, npm, Hugging Face,
  SendGrid;
* ``Authorization:`` headers and ``Bearer`` tokens;
* ``KEY=value`` / ``key: value`` / ``"key": "value"`` assignments whose key
  names a secret (``*PASSWORD*``, ``*SECRET*``, ``*TOKEN*``, ``*_KEY`` …):
  the value goes, the key stays.  A value that cannot be a secret is kept:
  a number (``MAX_TOKENS=4096``), a word-like identifier (``SORT_KEY=
  created_at``), a path, a URL, a placeholder (``${TOKEN}``, ``<key>``);
  a password after ``=`` only needs 4 characters;
* a high-entropy string (16+ characters, letters and digits) right after a
  word that names a secret (``secret``, ``token``, ``api key`` …).

Ordinary engineering text passes untouched: commit hashes, sha256 digests,
UUIDs, version strings, ``Content-Hash:`` lines, file paths.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from typing import NamedTuple

REDACTED = "[REDACTED]"


class Cleaned(NamedTuple):
    """Text with its secrets replaced by ``[REDACTED]``, the class of each one, and the
    texts removed (for scrubbing copies elsewhere; never to be stored or shown)."""

    text: str
    found: tuple[str, ...]
    removed: tuple[str, ...] = ()


#: where the secret of a match lies (absolute offsets), or None: not a secret after all
Span = tuple[int, int] | None
Rule = tuple[str, re.Pattern[str], Callable[[re.Match[str]], Span]]


def _whole(match: re.Match[str]) -> Span:
    return match.span()


def _group(name: str) -> Callable[[re.Match[str]], Span]:
    """Only the named group of the match is the secret."""

    def span(match: re.Match[str]) -> Span:
        if REDACTED in match[name]:
            return None  # removed by an earlier rule already
        return match.span(name)

    return span


# -- what a secret value looks like ----------------------------------------------

_PLACEHOLDER = re.compile(
    r"^(?:\$\{?\w+\}?|<[^>]*>|\{\{[^}]*\}\}|%\(?\w+\)?s?|x{3,}|\*{3,}|\.{3})$"
)
_IDENTIFIER = re.compile(r"^[a-z][a-z_.-]*$")
#: ``settings.SECRET``, ``config.api.token``: an attribute, not a value
_ATTRIBUTE = re.compile(r"^[A-Za-z_]+\d*(?:\.[A-Za-z_]+\d*)+$")
_HEX = re.compile(r"^[0-9a-fA-F]+$")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$")
_NOT_SECRET = frozenset({"true", "false", "null", "none", "nil", "yes", "no", "on", "off"})


def entropy(text: str) -> float:
    """Shannon entropy of ``text`` in bits per character."""
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def _plausible(value: str, password: bool) -> bool:
    """Whether an assigned value can be a secret (not a number, word, path, placeholder)."""
    value = value.strip("'\"`").rstrip(".,:!?")  # prose: the sentence's punctuation
    if REDACTED in value or value.lower() in _NOT_SECRET or _PLACEHOLDER.match(value):
        return False
    if value.startswith(("/", "./", "~/", "../")) or "://" in value:
        return False
    if any(c in value for c in "()[]{}<>") or _ATTRIBUTE.match(value):
        return False  # code: a call, an index, an attribute
    if password:
        return len(value) >= 4 and not value.isdigit()
    if len(value) < 8 or value.replace(".", "").replace("_", "").isdigit():
        return False
    return not _IDENTIFIER.match(value)


def _high_entropy(value: str) -> bool:
    value = value.strip("'\"`")
    if len(value) < 16 or REDACTED in value or _UUID.match(value):
        return False
    has_digit = any(c.isdigit() for c in value)
    has_alpha = any(c.isalpha() for c in value)
    return has_digit and has_alpha and entropy(value) >= (3.0 if _HEX.match(value) else 3.5)


# -- the rules ---------------------------------------------------------------------

_SECRET_KEY = (
    r"(?:[A-Za-z0-9_.-]*?(?:passw(?:or)?d|passphrase|secret|token|credentials?|api[_-]?key|"
    r"access[_-]?key|private[_-]?key|auth[_-]?key|signing[_-]?key|client[_-]?key|_key|_pwd)"
    r"[A-Za-z0-9_]*|pwd)"
)
_VALUE = r"(?P<value>\"[^\"\n]*\"|'[^'\n]*'|[^\s\"',;)\]}]+)"
_ASSIGNMENT = re.compile(
    rf"(?i)(?<![A-Za-z0-9_.-])[\"']?(?P<key>{_SECRET_KEY})[\"']?"
    rf"(?P<sep>\s*(?::=|=>|=|:)\s*)(?![\s=]){_VALUE}"
)
_SECRET_WORD = re.compile(
    r"(?i)\b(?:secret|token|api[ -]?key|access[ -]?key|secret[ -]?key|private[ -]?key|"
    r"signing[ -]?key|client[ -]?secret|credentials?|password|passphrase)"
    r"(?:\s*(?:[:=]|\bis\b|\bwas\b|\bof\b)\s*|\s+)['\"`]?(?P<value>[A-Za-z0-9+/_\-=.]{16,})"
)


def _names_password(key: str) -> bool:
    return any(w in key.lower() for w in ("passw", "pwd", "passphrase"))


def _assignment(passwords: bool) -> Callable[[re.Match[str]], Span]:
    """The value of a ``key = value`` whose key names a password (or another secret)."""

    def span(match: re.Match[str]) -> Span:
        if _names_password(match["key"]) != passwords:
            return None
        sep, value = match["sep"], match["value"]
        # ``password: must be rotated`` is prose; ``password: hunter2``, ``"password":
        # "x"`` and ``password=x`` are not
        explicit = "=" in sep or value[:1] in "'\"" or not value.isalpha()
        if not _plausible(value, passwords and explicit):
            return None
        start, end = match.span("value")
        quoted = value[:1] in "'\"" and len(value) > 1 and value[-1] == value[0]
        return (start + 1, end - 1) if quoted else (start, end)

    return span


def _entropic(match: re.Match[str]) -> Span:
    return match.span("value") if _high_entropy(match["value"]) else None


RULES: list[Rule] = [
    (
        "private-key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
            r"(?:.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|.*\Z)",
            re.DOTALL,
        ),
        _whole,
    ),
    (
        "url-password",
        re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]*:(?P<value>[^\s@/]+)@[^\s@]"),
        _group("value"),
    ),
    (
        "jwt",
        re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
        _whole,
    ),
    ("stripe-key", re.compile(r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,}"), _whole),
    ("stripe-key", re.compile(r"\bwhsec_[A-Za-z0-9]{16,}"), _whole),
    ("anthropic-key", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{20,}"), _whole),
    ("openai-key", re.compile(r"\bsk-(?:proj-|live-|test-)?[A-Za-z0-9_\-]{20,}"), _whole),
    ("aws-access-key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), _whole),
    ("github-token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b"), _whole),
    ("github-token", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{30,}\b"), _whole),
    ("gitlab-token", re.compile(r"\bglpat-[A-Za-z0-9_\-]{20,}"), _whole),
    ("slack-token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), _whole),
    (
        "slack-webhook",
        re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,}"),
        _whole,
    ),
    ("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_\-]{30,}"), _whole),
    ("npm-token", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"), _whole),
    ("huggingface-token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b"), _whole),
    (
        "sendgrid-key",
        re.compile(r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"),
        _whole,
    ),
    (
        "authorization-header",
        re.compile(r"(?i)\bauthorization\s*:\s*(?:basic|bearer|token|digest)\s+(?P<value>\S{8,})"),
        _group("value"),
    ),
    (
        "bearer-token",
        re.compile(r"(?i)\bbearer\s+(?P<value>[A-Za-z0-9._~+/\-]{16,}=*)"),
        _group("value"),
    ),
    ("password", _ASSIGNMENT, _assignment(passwords=True)),
    ("secret-assignment", _ASSIGNMENT, _assignment(passwords=False)),
    ("high-entropy", _SECRET_WORD, _entropic),
]


def redact(text: str) -> Cleaned:
    """``text`` with every secret the rules recognise replaced, and the class of each."""
    found: list[str] = []
    removed: list[str] = []
    for kind, pattern, locate in RULES:
        if _may_match(kind, text):
            text = _apply(text, kind, pattern, locate, found, removed)
    return Cleaned(text, tuple(found), tuple(removed))


def _apply(
    text: str,
    kind: str,
    pattern: re.Pattern[str],
    locate: Callable[[re.Match[str]], Span],
    found: list[str],
    removed: list[str],
) -> str:
    def substitute(match: re.Match[str]) -> str:
        span = locate(match)
        if span is None or span[0] == span[1]:
            return match[0]
        start, end = span[0] - match.start(), span[1] - match.start()
        found.append(kind)
        removed.append(match[0][start:end])
        return match[0][:start] + REDACTED + match[0][end:]

    return pattern.sub(substitute, text)


#: cheap substrings without which a rule cannot match (most text has none of them)
_HINTS: dict[str, tuple[str, ...]] = {
    "private-key": ("-----BEGIN",),
    "url-password": ("://",),
    "jwt": ("eyJ",),
    "stripe-key": ("_live_", "_test_", "whsec_"),
    "anthropic-key": ("sk-ant-",),
    "openai-key": ("sk-",),
    "aws-access-key": ("AKIA", "ASIA"),
    "github-token": ("gh", "github_pat_"),
    "gitlab-token": ("glpat-",),
    "slack-token": ("xox",),
    "slack-webhook": ("hooks.slack.com",),
    "google-api-key": ("AIza",),
    "npm-token": ("npm_",),
    "huggingface-token": ("hf_",),
    "sendgrid-key": ("SG.",),
}


def _may_match(kind: str, text: str) -> bool:
    hints = _HINTS.get(kind)
    return hints is None or any(h in text for h in hints)


def remove(text: str, needle: str) -> tuple[str, int]:
    """``text`` with every occurrence of ``needle`` replaced, and how many there were."""
    if not needle:
        return text, 0
    count = text.count(needle)
    return (text.replace(needle, REDACTED), count) if count else (text, 0)
