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

import base64
import binascii
import codecs
import html
import re
import unicodedata
import urllib.parse
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

from memlog.eventlog import markup
from memlog.eventlog.events import Observed

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

_TAGS = range(0xE0000, 0xE0080)
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


# -- what an instruction says --------------------------------------------------------------------

_NEAR = r"[^.\n]{0,40}"
_URL = r"(?:https?|ftp)://[^\s)>\]\"'`]+"
_OVERRIDE = [
    rf"\b(?:ignore|disregard|forget|override|overrule|bypass|skip)\b{_NEAR}"
    r"\b(?:previous|prior|above|earlier|preceding|existing|original|all|any|other|your|these)\b"
    rf"{_NEAR}\b(?:instructions?|prompts?|rules|guidelines|directions|guidance|directives)\b",
    r"\b(?:ignore|disregard|forget|override)\b[^.\n]{0,25}\b(?:claude\.md|the system prompt|"
    r"system prompts?|the user\b|the user'?s\b|your (?:rules|guidelines|training)|safety)",
    r"\b(?:override|bypass|disable|lift(?:ed)?)\b[^.\n]{0,30}\b(?:safety|guardrails|"
    r"content polic(?:y|ies)|restrictions|system prompt)\b",
    r"\b(?:new|updated|real|actual|true)\s+(?:instructions|rules|task|orders)\b"
    r"[^.\n]{0,20}(?:follow|are|is|:)",
    r"\byou are (?:now|no longer)\b",
    r"\bfrom now on\b[^.\n]{0,20}\b(?:you|answer|respond|always|obey|only)\b",
    r"\b(?:developer|maintenance|god|jailbreak|dan|admin|unrestricted) mode\b",
    r"\b(?:unrestricted|unfiltered|uncensored) (?:assistant|agent|ai|model|mode)\b",
    r"\b(?:no|without any) (?:content )?(?:polic(?:y|ies)|restrictions|rules|guardrails)\b",
    r"\b(?:do not|don't|never)\b[^.\n]{0,30}\b(?:tell|inform|mention|reveal|show|notify|report"
    r"|disclose)\b[^.\n]{0,30}\b(?:the )?user\b",
    r"\b(?:keep|hide)\b[^.\n]{0,40}\b(?:secret|confidential|hidden)\b[^.\n]{0,40}\buser\b",
    r"\b(?:confidential|secret)\b[^.\n]{0,40}\b(?:do not|don't|never|not) (?:reveal|mention|tell)",
    r"\b(?:never|do not|don't|without)\b[^.\n]{0,20}\bask(?:ing)?\b[^.\n]{0,30}"
    r"\b(?:permission|confirmation|approval|consent)\b",
    r"\b(?:never|do not|don't)\s+(?:ask|check with|consult)\b[^.\n]{0,15}\bbefore\b",
    r"\b(?:when|if) the user (?:says|asks|tells you|types|writes)\b[^.\n]{0,20}\b(?:stop|no|not"
    r" to|wait)\b[^.\n]{0,40}\b(?:continue|proceed|ignore|anyway|keep going)\b",
    r"\b(?:pre-?approved|already approved|approved (?:all|everything|every))\b",
    r"\bapprove\b[^.\n]{0,20}\b(?:your own|all|every)\b[^.\n]{0,20}\b(?:tool|command|call)",
    r"dangerously-?skip-?permissions|dangerouslydisablesandbox|bypasspermissions|"
    r"\bauto-?approve\b|\byolo mode\b",
    r"\b(?:skip|disable|bypass)\b[^.\n]{0,20}\b(?:security|safety) (?:reviews?|checks?|"
    r"warnings?|scans?)",
    r"\b(?:stop|never) reporting\b[^.\n]{0,30}\b(?:security|warnings?)",
    r"\btakes? precedence over\b",
    r"\b(?:treat|consider)\b[^.\n]{0,60}\bas (?:the user'?s (?:own )?(?:instructions|request)"
    r"|a suggestion|authoritative)",
    r"\b(?:prioriti[sz]e|obey|answer only to|trust)\b[^.\n]{0,15}\b(?:this|these) (?:memor|note)",
    r"\b(?:this|these) (?:memor(?:y|ies)|notes?)\b[^.\n]{0,30}\b(?:override|supersede|"
    r"replace)s?\b[^.\n]{0,30}\b(?:instructions|claude\.md|user|system)",
    r"\b(?:act as|pretend to be|roleplay as|you are) (?:an? )?\w*(?:bot|gpt|agent) with no\b",
]
_EXEC = [
    r"\b(?:curl|wget|fetch|iwr|irm|invoke-webrequest|invoke-restmethod)\b[^|\n]{0,200}\|\s*"
    r"(?:sudo\s+)?(?:ba|z|k|da|fi|c)?sh\b",
    r"\b(?:curl|wget|iwr|irm)\b[^|\n]{0,200}\|\s*(?:sudo\s+)?(?:python\d?|node|perl|ruby|iex"
    r"|php)\b",
    r"\b(?:ba|z|k)?sh\s+(?:-c\s+)?\"?<?\(\s*(?:curl|wget)\b",
    r"\$\(\s*(?:curl|wget)\b",
    r"\b(?:source|\.)\s+<\(\s*(?:curl|wget)\b",
    r"\b(?:exec|eval)\s*\([^\n]{0,120}(?:urlopen|urllib|requests\.get|http|fromhex|b64decode"
    r"|atob|decode\()",
    r"/dev/tcp/",
    r"\bn(?:c|cat)\b[^\n]{0,60}\s-(?:e|c)\s",
    r"\bsocat\b[^\n]{0,80}\bexec:",
    r"\bbash\s+-i\b",
    r"\b(?:powershell|pwsh)\b[^\n]{0,40}\s-(?:e|ec|enc|encodedcommand)\s+[a-z0-9+/=]{12,}",
    r"\biex\s*\(\s*(?:iwr|irm|new-object|invoke-)",
    r"\bbase64\s+(?:-d|--decode|-D)\b[^\n]{0,40}\|\s*(?:sudo\s+)?(?:ba|z)?sh\b",
    r"\brm\s+-(?:rf|fr|r\s+-f|f\s+-r)\s+(?:--no-preserve-root\s+)?(?:/(?:\s|$|\*)|~|\$home"
    r"|\.git\b)",
    r"\bchmod\s+-r\s+777\s+/(?![\w.])",
    r"\bmkfs\b|\bdd\s+if=[^\n]{0,40}\bof=/dev/",
    r"\bgit\s+push\b[^\n]{0,40}(?:--force\b|\s-f\b)[^\n]{0,40}\b(?:main|master|--all)\b",
    r"\bgit\s+remote\s+(?:set-url|add)\b[^\n]{0,80}\bgit\s+push\b",
    r"\bcore\.hookspath\s+/dev/null\b",
    r"\bauthorized_keys\b",
    r"\bssl_?verify\s+false\b|\bnode_tls_reject_unauthorized\s*=\s*0\b|\b--insecure\b[^\n]{0,60}"
    r"\|\s*(?:ba)?sh",
    r"--privileged\b[^\n]{0,80}\s-v\s+/:",
    r"(?:--index-url|--extra-index-url|\s-i)\s+https?://(?!pypi\.org|files\.pythonhosted\.org)"
    r"[^\s]+[^\n]{0,40}\b[a-z]",
    r"\bpostinstall\b[^\n]{0,80}\b(?:curl|wget|child_process|exec)\b",
    r"\b(?:curl|wget)\b[^\n]{0,160}\bchmod\s+\+x\b",
    r"\bchmod\s+\+x\s+/tmp/\S+\s*&&",
    r"\b(?:git\s+clone|curl|wget)\b[^\n]{0,160}&&\s*(?:sudo\s+)?(?:ba|z)?sh\s+\S",
    r"\bnpx\s+(?:--yes|-y)\b",
    r"\bsudo\s+(?:ba)?sh\b",
    r"\b(?:delete|remove|wipe)\s+the\s+(?:\.git|repository|home|tests?)\b(?:\s+(?:directory|"
    r"folder))?",
]
_FETCH_VERB = (
    r"\b(?:fetch|read|open|visit|load|download|retrieve|get|webfetch|look\w* (?:it )?up|go to"
    r"|pull|consult|curl|wget)\w*\b"
)
_FOLLOW = (
    r"\b(?:follow|obey|apply|execute|exec|do what|do them|do as|comply|take precedence|replace"
    r"|verbatim|without (?:review|confirm|asking|checking)|instructions|rules it|treat\b"
    r"[^.\n]{0,40}\bas\b)"
)
_FETCH = [
    rf"{_FETCH_VERB}[^.\n]{{0,60}}{_URL}[^\n]{{0,200}}{_FOLLOW}",
    rf"{_URL}[^\n]{{0,120}}{_FETCH_VERB}[^\n]{{0,60}}{_FOLLOW}",
    rf"{_FOLLOW}[^\n]{{0,60}}{_URL}",
    r"\b(?:pastebin\.com/raw|gist\.githubusercontent\.com|transfer\.sh|webhook\.site|"
    r"requestbin|ngrok\.io)\b",
]
_SECRET = (
    r"(?:~/\.ssh\b|\bid_(?:rsa|dsa|ecdsa|ed25519)\b|\bprivate keys?\b|(?<![\w.])\.env\b"
    r"(?!\.example)|\.netrc\b|~/\.aws\b|aws/credentials|\bcredentials\b|\.kube/config\b"
    r"|\bkubeconfig\b|\bapi[ _-]?keys?\b|\btokens?\b|\bgithub_token\b|\bpasswords?\b"
    r"|\bsecrets?\b|\bsecret values\b|\bprintenv\b|\benv\b(?! var)|\benvironment"
    r"(?: variables)?\b|\bcookies\b|\bthe user'?s prompts\b|\bprompts verbatim\b"
    r"|\bdatabase dump\b|\.pgpass\b|\bkeychain\b)"
)
_SEND = (
    r"\b(?:send|sends|sent|post|upload|email|e-mail|mail|paste|share|forward|exfiltrate"
    r"|transmit|leak|commit\w*|push|print|log|include|attach|copy|scp|rsync|tar)\b"
)
_WHERE = (
    rf"(?:{_URL}|[\w.+-]+@[\w-]+\.[\w.-]+|\b(?:public|new) (?:gist|fork|repo\w*|issue|paste)"
    r"|\bgist\b|\bpull requests?\b|\bpr descriptions?\b|\breview comments?\b|\bci (?:output|log)\b"
    r"|\bslack\b|\bdiscord\b|\bwebhook\b|\btelegram\b|\byour (?:final )?answer\b"
    r"|\bthe (?:issue|pull request|commit|review)\b|\bupstream\b|\bon-call\b|\bto (?:the )?"
    r"(?:repository|repo)\b|\bconfig/ folder\b)"
)
_EXFIL = [
    r"\b(?:cat|env|printenv|tar|set)\b[^\n|]{0,80}\|\s*(?:curl|wget|nc|ncat|netcat)\b",
    r"\bcurl\b[^\n]{0,120}\s(?:-d|--data(?:-binary|-raw)?|-f|--form|-t|--upload-file)\s+@",
    r"\b(?:scp|rsync)\b[^\n]{0,80}(?:id_(?:rsa|ed25519)|\.ssh|\.env\b|credentials)",
    r"\bcommit\w*\b[^.\n]{0,30}(?:(?<![\w.])\.env\b(?!\.example)|credentials|id_rsa|private key)",
]


def _exfiltration(text: str) -> tuple[int, int] | None:
    """A secret sent somewhere: a verb of sending with a secret near it and a destination
    around it (or a command that pipes one out)."""
    match = _EXFIL_COMMAND.search(text)
    if match is not None:
        return match.span()
    for verb in _SEND_RE.finditer(text):
        start, end = verb.span()
        if _NEGATED.search(text, max(0, start - 24), start):
            continue  # "never log tokens": advice against it
        if _SECRET_RE.search(text, max(0, start - 60), end + 60) and _WHERE_RE.search(
            text, max(0, start - 120), end + 200
        ):
            return start, end
    return None


_DECODE = [
    r"\b(?:decode[ds]?|decoding|base64 (?:-d|--decode)|atob|fromhex|b64decode|unhex|url-?decod\w*"
    r"|rot13|read (?:it )?backwards|reverse (?:the following|this|it))\b[^.\n]{0,40}"
    r"\b(?:run|execute|exec|apply|follow|obey|eval|sh|bash|do|rules)\b",
    r"\b(?:run|execute|apply|follow|obey)\b[^.\n]{0,25}\b(?:decoded|the decoding)\b",
    r"\b(?:hex|base64|url|rot13)-?encoded\b[^.\n]{0,40}\b(?:run|execute|apply|follow|bootstrap"
    r"|setup|rules|instructions)\b",
]


def _compiled(patterns: Iterable[str]) -> re.Pattern[str]:
    """One pattern of ``patterns``, for lower-cased text (matching without IGNORECASE is
    about twice as fast)."""
    return re.compile("|".join(f"(?:{p})" for p in patterns))


Finder = Callable[[str], "tuple[int, int] | None"]


def _searching(pattern: re.Pattern[str]) -> Finder:
    def find(text: str) -> tuple[int, int] | None:
        match = pattern.search(text)
        return match.span() if match is not None else None

    return find


_SEND_RE, _SECRET_RE, _WHERE_RE = (re.compile(p) for p in (_SEND, _SECRET, _WHERE))
#: a negation right before a verb (an adverb between at most): the lesson advises against it
_NEGATED = re.compile(
    r"\b(?:never|don't|do not|must not|mustn't|avoid|no longer|stop)\s+(?:\w+ly\s+)?$"
)
_EXFIL_COMMAND = _compiled(_EXFIL)
#: each rule about what the text says, and what finds the span it holds in lower-cased text
TEXT_RULES: tuple[tuple[str, Finder], ...] = (
    ("override", _searching(_compiled(_OVERRIDE))),
    ("remote-exec", _searching(_compiled(_EXEC))),
    ("fetch-and-follow", _searching(_compiled(_FETCH))),
    ("exfiltration", _exfiltration),
)
_DECODE_RULE = _compiled(_DECODE)


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


# -- encodings -----------------------------------------------------------------------------------

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
    tagged = "".join(chr(ord(c) - 0xE0000) for c in text if ord(c) in _TAGS)
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
_OBFUSCATIONS = frozenset(("base64", "hex", "percent-encoding", "HTML entities", "tag characters",
                           "spaced letters"))  # fmt: skip


def _encoded_hits(text: str, field: str) -> list[Hit]:
    lowered = _lowered(text)
    match = _DECODE_RULE.search(lowered)
    if match is not None:
        shown = _excerpt(_shown_as(text, lowered), match.span())
        return [Hit("encoded-instruction", field, shown, _matched(lowered, match.span()))]
    for how, decoded in decodings(text):
        readable = visible(decoded)
        url = re.search(_URL, readable)
        if how in _OBFUSCATIONS and url is not None and not re.search(_URL, text):
            shown = f"{how}: a URL: {_excerpt(readable)}"
            return [Hit("encoded-instruction", field, shown, f"{how}: {url.group().lower()}")]
        inner = _text_hits(" ".join(readable.split()), field)
        if not inner and how in _OBFUSCATIONS:  # (frame markup in the plain text is its own)
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
