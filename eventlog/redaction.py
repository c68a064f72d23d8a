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
  SendGrid, and the prefixed tokens of gitleaks' rule set that name a
  service (``PREFIXED``: Shopify, PyPI, DigitalOcean, Vault, Grafana, …);
* Azure: the key of a storage (or Service Bus, Event Hubs) connection
  string (``AccountKey=``, ``SharedAccessKey=``), the signature of a SAS
  token (``sig=`` beside ``sv=``), and Azure AD client secrets;
* ``curl -u user:password``;
* memlog's own sync key (``memlog-key-1.…``);
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
import string
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple

from memlog.eventlog.tokens import PREFIXED

REDACTED = "[REDACTED]"


class Cleaned(NamedTuple):
    """Text with its secrets replaced by ``[REDACTED]``, the class of each one, and the
    texts removed (for scrubbing copies elsewhere; never to be stored or shown)."""

    text: str
    found: tuple[str, ...]
    removed: tuple[str, ...] = ()


#: where the secret of a match lies (absolute offsets), or None: not a secret after all
Span = tuple[int, int] | None
#: a secret found: where it starts and ends, and its class
Found = tuple[int, int, str]
Finder = Callable[[str], Iterator[Found]]


def _whole(match: re.Match[str]) -> Span:
    return match.span()


def _group(name: str) -> Callable[[re.Match[str]], Span]:
    """Only the named group of the match is the secret."""

    def span(match: re.Match[str]) -> Span:
        if REDACTED in match[name]:
            return None  # removed by an earlier rule already
        return match.span(name)

    return span


def _regex(kind: str, pattern: str, locate: Callable[[re.Match[str]], Span] = _whole) -> Finder:
    compiled = re.compile(pattern, re.DOTALL if kind == "private-key" else 0)

    def find(text: str) -> Iterator[Found]:
        for match in compiled.finditer(text):
            span = locate(match)
            if span is not None:
                yield span[0], span[1], kind

    return find


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


# -- secrets next to words that name them -----------------------------------------------

#: words one of which a key naming a secret holds (looked for with ``str.find``: fast)
_KEY_WORDS = ("pass", "pwd", "secret", "token", "credential", "key")
#: and what the key must then hold (``SORT_KEY`` and ``keyboard`` name no secret)
_KEY_FORMS = (
    "passw", "passphrase", "pwd", "secret", "token", "credential", "_key",
    *(f"{w}{sep}key" for w in ("api", "access", "private", "auth", "signing", "client")
      for sep in ("", "-")),
)  # fmt: skip
#: keys that name something about a secret, not the secret (``SharedAccessKeyName``)
_NOT_VALUES = ("name", "id", "path", "file", "url", "type", "length", "size", "count")
_KEY_CHARS = frozenset(string.ascii_letters + string.digits + "_.-")
_NAME_CHARS = frozenset(string.ascii_letters + string.digits + "_")
_LONGEST_KEY = 64
_VALUE = r"(?P<value>\"[^\"\n]*\"|'[^'\n]*'|[^\s\"',;)\]}]+)"
#: what follows a key: its separator and its value
_ASSIGNED = re.compile(rf"[\"']?(?P<sep>\s*(?::=|=>|=|:)\s*)(?![\s=]){_VALUE}")
#: words after which a high-entropy string is a secret; ``key`` only after a qualifier
_SECRET_WORDS = ("secret", "token", "credential", "password", "passphrase", "key")
_KEY_QUALIFIERS = re.compile(r"(?:api|access|secret|private|signing)[ -]?$")
_SAID = re.compile(
    r"s?(?:\s*(?:[:=]|\bis\b|\bwas\b|\bof\b)\s*|\s+)['\"`]?(?P<value>[A-Za-z0-9+/_\-=.]{16,})"
)


def _occurrences(lower: str, words: Iterable[str]) -> list[tuple[int, int]]:
    """Where each of ``words`` occurs in ``lower``, in order (``str.find``: fast on any size)."""
    hits = []
    for word in words:
        at = lower.find(word)
        while at >= 0:
            hits.append((at, at + len(word)))
            at = lower.find(word, at + 1)
    return sorted(hits)


def _key_around(text: str, start: int, end: int) -> tuple[int, int] | None:
    """The whole key a word sits in (``DB_PASSWORD`` around ``passw``), if it is short."""
    low, high = start, end
    while low > 0 and text[low - 1] in _KEY_CHARS and start - low < _LONGEST_KEY:
        low -= 1
    while high < len(text) and text[high] in _NAME_CHARS and high - end < _LONGEST_KEY:
        high += 1
    inside = (low > 0 and text[low - 1] in _KEY_CHARS) or (
        high < len(text) and text[high] in _NAME_CHARS
    )
    return None if inside else (low, high)


def _names_password(key: str) -> bool:
    return any(w in key.lower() for w in ("passw", "pwd", "passphrase"))


def _assignments(text: str) -> Iterator[Found]:
    """Values of ``key = value`` / ``key: value`` / ``"key": "value"`` whose key names a
    password (class ``password``) or another secret (``secret-assignment``)."""
    seen: set[int] = set()
    for start, end in _occurrences(text.lower(), _KEY_WORDS):
        key = _key_around(text, start, end)
        if key is None or key[1] in seen:
            continue
        seen.add(key[1])
        named = text[key[0] : key[1]].lower()
        if not any(form in named for form in _KEY_FORMS) or named.endswith(_NOT_VALUES):
            continue
        match = _ASSIGNED.match(text, key[1])
        if match is not None:
            found = _assigned(text[key[0] : key[1]], match)
            if found is not None:
                yield found


def _assigned(key: str, match: re.Match[str]) -> Found | None:
    sep, value = match["sep"], match["value"]
    password = _names_password(key)
    # ``password: must be rotated`` is prose; ``password: hunter2``, ``"password": "x"``
    # and ``password=x`` are not
    explicit = "=" in sep or value[:1] in "'\"" or not value.isalpha()
    if not _plausible(value, password and explicit):
        return None
    start, end = match.span("value")
    if value[:1] in "'\"" and len(value) > 1 and value[-1] == value[0]:
        start, end = start + 1, end - 1  # the quotes stay
    return start, end, "password" if password else "secret-assignment"


def _entropic(text: str) -> Iterator[Found]:
    """A high-entropy string right after a word that names a secret."""
    lower, seen = text.lower(), set()
    for start, end in _occurrences(lower, _SECRET_WORDS):
        if lower.startswith("key", start):
            qualifier = _KEY_QUALIFIERS.search(lower, max(start - 9, 0), start)
            if qualifier is None:
                continue  # ``cache key 9f86…``: a key, not a secret
            start = qualifier.start()
        if start > 0 and lower[start - 1].isalnum():
            continue
        match = _SAID.match(text, end)
        if match is not None and match.start("value") not in seen:
            seen.add(match.start("value"))
            if _high_entropy(match["value"]):
                yield match.start("value"), match.end("value"), "high-entropy"


# -- Azure's SAS tokens ------------------------------------------------------------------


def _sas(text: str) -> Iterator[Found]:
    """The signature of an Azure SAS token: ``sig=`` in a query that also says ``sv=``."""
    for match in _SAS_SIG.finditer(text):
        start, end = match.span()
        low = max(text.rfind(c, 0, start) for c in " \t\n\"'<>`")
        high = min([i for i in (text.find(c, end) for c in " \t\n\"'<>`") if i >= 0] or [len(text)])
        if _SAS_VERSION.search(text, low + 1, high):
            yield match.span("value") + ("azure-sas",)


_SAS_SIG = re.compile(r"(?i)(?<![\w-])sig=(?P<value>[A-Za-z0-9%+/_-]{20,}(?:%3D|=){0,3})")
_SAS_VERSION = re.compile(r"(?<![\w-])sv=\d{4}-\d\d-\d\d")


# -- the rules, most specific first ------------------------------------------------------

#: each rule, and substrings without one of which it cannot match (most text has none)
RULES: list[tuple[Finder, tuple[str, ...]]] = [
    (
        _regex(
            "private-key",
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
            r"(?:.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|.*\Z)",
        ),
        ("-----BEGIN",),
    ),
    (
        _regex(
            "url-password",
            r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]*:(?P<value>[^\s@/]+)@[^\s@]",
            _group("value"),
        ),
        ("://",),
    ),
    (
        _regex("jwt", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
        ("eyJ",),
    ),
    (_regex("stripe-key", r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,}"), ("_live_", "_test_")),
    (_regex("stripe-key", r"\bwhsec_[A-Za-z0-9]{16,}"), ("whsec_",)),
    (_regex("anthropic-key", r"\bsk-ant-[A-Za-z0-9_\-]{20,}"), ("sk-ant-",)),
    (_regex("openai-key", r"\bsk-(?:proj-|live-|test-)?[A-Za-z0-9_\-]{20,}"), ("sk-",)),
    (_regex("aws-access-key", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), ("AKIA", "ASIA")),
    (
        _regex("github-token", r"\bgh[pousr]_[A-Za-z0-9]{30,}\b"),
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    ),
    (_regex("github-token", r"\bgithub_pat_[A-Za-z0-9_]{30,}\b"), ("github_pat_",)),
    (_regex("gitlab-token", r"\bglpat-[A-Za-z0-9_\-]{20,}"), ("glpat-",)),
    (_regex("slack-token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), ("xox",)),
    (
        _regex("slack-webhook", r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,}"),
        ("hooks.slack.com",),
    ),
    (_regex("google-api-key", r"\bAIza[0-9A-Za-z_\-]{30,}"), ("AIza",)),
    (_regex("npm-token", r"\bnpm_[A-Za-z0-9]{36}\b"), ("npm_",)),
    (_regex("huggingface-token", r"\bhf_[A-Za-z0-9]{30,}\b"), ("hf_",)),
    (_regex("sendgrid-key", r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"), ("SG.",)),
    (
        _regex(
            "azure-storage-key",
            r"(?i)\b(?:AccountKey|SharedAccessKey|PrimaryKey|SecondaryKey)\s*=\s*"
            r"(?P<value>[A-Za-z0-9+/]{20,}={0,2})",
            _group("value"),
        ),
        ("ccountKey", "ccessKey", "ACCOUNTKEY", "ACCESSKEY", "aryKey", "ARYKEY"),
    ),
    (_sas, ("sig=", "SIG=", "Sig=")),
    (
        _regex(
            "curl-password",
            r"\bcurl\b[^\n]*?\s(?:-u|--user)(?:=|\s{1,5})['\"]?[^\s:'\"]{1,64}:['\"]?"
            r"(?P<value>(?![$%{<])[^\s'\"]{3,})",
            _group("value"),
        ),
        ("curl",),
    ),
    (
        _regex(
            "authorization-header",
            r"(?i)\bauthorization\s*:\s*(?:basic|bearer|token|digest)\s+(?P<value>\S{8,})",
            _group("value"),
        ),
        ("uthorization", "UTHORIZATION"),
    ),
    (
        _regex(
            "bearer-token",
            r"(?i)\bbearer\s+(?P<value>[A-Za-z0-9._~+/\-]{16,}=*)",
            _group("value"),
        ),
        ("earer", "EARER"),
    ),
    (_assignments, ()),
    (_entropic, ()),
]


#: the prefixed tokens' rules; each secret is 20 characters or more without a space, so
#: their hints are looked for in such words only (prose has few; most text holds none)
TOKEN_RULES = [(_regex(kind, pattern), hints) for kind, pattern, hints in PREFIXED]
_TOKEN_HINTS = tuple(sorted({hint for _, hints in TOKEN_RULES for hint in hints}))
_SHORTEST_TOKEN = 20


def redact(text: str) -> Cleaned:
    """``text`` with every secret the rules recognise replaced, and the class of each."""
    found: list[str] = []
    removed: list[str] = []
    for finder, hints in RULES[:-2]:  # the prefixed tokens go before assignments, entropy
        if not hints or any(h in text for h in hints):
            text = _replace(text, finder(text), found, removed)
    tokens = " ".join(w for w in text.split() if len(w) >= _SHORTEST_TOKEN)
    present = {hint for hint in _TOKEN_HINTS if hint in tokens} if tokens else set()
    for finder, hints in TOKEN_RULES if present else ():
        if not present.isdisjoint(hints):
            text = _replace(text, finder(text), found, removed)
    for finder, _ in RULES[-2:]:
        text = _replace(text, finder(text), found, removed)
    return Cleaned(text, tuple(found), tuple(removed))


def _replace(text: str, spans: Iterable[Found], found: list[str], removed: list[str]) -> str:
    """``text`` with each span (in order, not overlapping) replaced by ``[REDACTED]``."""
    parts, at = [], 0
    for start, end, kind in sorted(spans):
        if start < at or start >= end or REDACTED in text[start:end]:
            continue
        parts += [text[at:start], REDACTED]
        found.append(kind)
        removed.append(text[start:end])
        at = end
    return "".join(parts) + text[at:] if parts else text


def remove(text: str, needle: str) -> tuple[str, int]:
    """``text`` with every occurrence of ``needle`` replaced, and how many there were."""
    if not needle:
        return text, 0
    count = text.count(needle)
    return (text.replace(needle, REDACTED), count) if count else (text, 0)
