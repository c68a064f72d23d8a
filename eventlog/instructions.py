"""What an instruction in a lesson says, as patterns of the scan of lessons (``steering``).

Each rule about what a text says (``override``, ``remote-exec``,
``fetch-and-follow``, ``exfiltration``) is one finder over lower-cased text:
the span it holds, or None.  ``DECODE_RULE`` is an instruction to decode
something and act on it.  The patterns were written against the tuned part of
the payload corpus and the largest real knowledge bank only
(``benchmarks/bench_trust.py``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

_NEAR = r"[^.\n]{0,40}"
URL = r"(?:https?|ftp)://[^\s)>\]\"'`]+"
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
    rf"{_FETCH_VERB}[^.\n]{{0,60}}{URL}[^\n]{{0,200}}{_FOLLOW}",
    rf"{URL}[^\n]{{0,120}}{_FETCH_VERB}[^\n]{{0,60}}{_FOLLOW}",
    rf"{_FOLLOW}[^\n]{{0,60}}{URL}",
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
    rf"(?:{URL}|[\w.+-]+@[\w-]+\.[\w.-]+|\b(?:public|new) (?:gist|fork|repo\w*|issue|paste)"
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
DECODE_RULE = _compiled(_DECODE)
