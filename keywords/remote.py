"""Keyword tiers that ask a language model over HTTP: Claude Haiku and Ollama.

Neither is asked unless ``memory_keyword_provider`` names it: the default
labeller is the local one, and an entry's text leaves the machine only when
its user chose so.  Each tier holds an injected ``httpx.Client`` and makes
one request per entry, with no retry: a label is not worth a second wait.
The request ends within ``timeout`` seconds (5 by default): every network
operation is bounded by it, and the answer is streamed with the clock
checked after every chunk (``llm.http``), so a server that trickles bytes
is cut off too.

Errors.  A missing key, a refused key, a refused connection and a 404
(model not pulled, wrong base URL) raise ``ProviderUnavailable``: the tier
is skipped.  A timeout, a rate limit, a server error and an answer that is
not a JSON array of strings raise ``ProviderError``.  Either way the chain
moves on to the next tier.

Shapes, checked against each API's reference:

- haiku: the Messages API through ``llm.messages``, memlog's one client for
  it (the same base URL, key and errors as extraction's); body ``{"model",
  "max_tokens", "thinking": {"type": "disabled"}, "messages": [{"role":
  "user", "content": …}]}``.  Claude Haiku 5.5 (``claude-haiku-5-5``)
  thinks by default and may open its content with a thinking block, so
  thinking is turned off (it is not needed to pick labels, and its tokens
  would count against the time and ``max_tokens``) and the first block of
  type ``text`` is read, not ``content[0]``.  No ``temperature``: Haiku 5.5
  refuses non-default sampling parameters.  Model:
  ``MEMLOG_ANTHROPIC_KEYWORD_MODEL``.
- ollama: ``POST {base}/api/generate``, no key; body ``{"model", "prompt",
  "stream": false, "options": {"temperature": 0}}``; answer ``{"model",
  "created_at", "response", "done", "done_reason", …}``; errors ``{"error":
  "…"}`` (404 for a model not pulled).  Base URL: ``MEMLOG_OLLAMA_BASE_URL``
  (default ``http://localhost:11434``); model:
  ``MEMLOG_OLLAMA_KEYWORD_MODEL`` (default ``llama3.2``).
"""

from __future__ import annotations

import abc
import os
import re
import time
from collections.abc import Callable, Mapping
from typing import ClassVar

import httpx
import msgspec

from memlog.embeddings.transport import one_line
from memlog.errors import ProviderError, ProviderUnavailable
from memlog.keywords.rules import STOPWORDS
from memlog.keywords.tiers import KeywordProvider
from memlog.llm.endpoints import ollama_url
from memlog.llm.http import exchange
from memlog.llm.messages import KEY_ENV, Messages
from memlog.vocabulary import MAX_KEYWORDS, MIN_KEYWORDS

TIER_TIMEOUT = 5.0
#: how much of a long description or reasoning goes into the prompt
PROMPT_FIELD_CHARS = 4000
_FENCE = re.compile(r"^```[a-z]*\s*|\s*```$")

PROMPT = """\
Choose keyword labels for this engineering memory entry, for search.

Rules:
- {low} to {high} keywords, most specific first;
- lowercase letters, digits and hyphens only; join the words of a phrase with "-";
- at least {low} of them must be words of the description or reasoning, or forms \
of them (parse, parsing, parser);
- name the topic (tools, techniques, file formats, failure modes), not the kind of work;
- never use these generic words: {stopwords}.

Answer with the JSON array alone, for example ["sqlite", "write-ahead-log", "locking"].

Name: {name}
Description: {description}
Reasoning: {reasoning}
"""


def prompt_for(name: str, description: str, reasoning: str) -> str:
    """The prompt asking a model for 3-10 lowercase keywords as a JSON array."""
    return PROMPT.format(
        low=MIN_KEYWORDS,
        high=MAX_KEYWORDS,
        stopwords=", ".join(sorted(STOPWORDS)),
        name=" ".join(name.split()),
        description=description.strip()[:PROMPT_FIELD_CHARS],
        reasoning=reasoning.strip()[:PROMPT_FIELD_CHARS] or "(none)",
    )


class _Keywords(msgspec.Struct):
    keywords: list[str]


def parse_answer(text: str) -> list[str] | None:
    """The JSON array of strings in a model's answer (fences and prose around it allowed)."""
    text = _FENCE.sub("", text.strip())
    start, end = text.find("["), text.rfind("]")
    if start >= 0 and end > start:
        try:
            return msgspec.json.decode(text[start : end + 1], type=list[str])
        except msgspec.DecodeError:
            pass
    try:  # an object holding the array, as JSON-mode models like to answer
        return msgspec.json.decode(text, type=_Keywords).keywords
    except msgspec.DecodeError:
        return None


# -- Claude (Haiku) ---------------------------------------------------------------------


class RemoteKeywords(KeywordProvider):
    """A labeller behind an HTTP API, asked once per entry within ``timeout`` seconds."""

    default_model: ClassVar[str]
    model_env: ClassVar[str]

    def __init__(
        self,
        client: httpx.Client,
        *,
        env: Mapping[str, str] = os.environ,
        timeout: float = TIER_TIMEOUT,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.model = env.get(self.model_env) or self.default_model
        self.timeout = timeout
        self.clock = clock
        self.configure(env)

    @abc.abstractmethod
    def configure(self, env: Mapping[str, str]) -> None:
        """Read where the API is from ``env``."""


class HaikuKeywords(RemoteKeywords):
    """Claude's Messages API, Haiku by default, through memlog's one client for it."""

    name: ClassVar[str] = "haiku"
    default_model = "claude-haiku-5-5"
    model_env = "MEMLOG_ANTHROPIC_KEYWORD_MODEL"
    max_tokens = 300

    def configure(self, env: Mapping[str, str]) -> None:
        self.api = Messages(self.client, self.name, env, self.clock)

    def label(self, name: str, description: str, reasoning: str) -> list[str]:
        if not self.api.available:
            raise ProviderUnavailable(f"{self.name}: set {KEY_ENV} to use this tier")
        request = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "thinking": {"type": "disabled"},
            "messages": [{"role": "user", "content": prompt_for(name, description, reasoning)}],
        }
        message = self.api.send(request, self.timeout)
        text = message.text()
        if text is None:
            why = message.stop_reason or "no text block"
            raise ProviderError(f"{self.name}: the answer has no text ({why})")
        keywords = parse_answer(text)
        if keywords is None:
            raise ProviderError(f"{self.name}: the answer is not a JSON array of keywords")
        return keywords


# -- Ollama -------------------------------------------------------------------------------


class _Generated(msgspec.Struct):
    response: str


class _OllamaErrorBody(msgspec.Struct):
    error: str


class OllamaKeywords(RemoteKeywords):
    """A local or self-hosted Ollama server's ``/api/generate``."""

    name: ClassVar[str] = "ollama"
    default_model = "llama3.2"
    model_env = "MEMLOG_OLLAMA_KEYWORD_MODEL"

    def configure(self, env: Mapping[str, str]) -> None:
        self.base_url = ollama_url(env)

    def label(self, name: str, description: str, reasoning: str) -> list[str]:
        body = {
            "model": self.model,
            "prompt": prompt_for(name, description, reasoning),
            "stream": False,
            "options": {"temperature": 0},
        }
        url = f"{self.base_url}/api/generate"
        encoded = msgspec.json.encode(body)
        reply = exchange(self.client, self.name, url, encoded, self.timeout, clock=self.clock)
        if reply.status != 200:
            said = f"({reply.status}): {_ollama_error(reply.content)}"
            if reply.status == 404:
                where = f"{self.model} not found at {self.base_url}"
                raise ProviderUnavailable(f"{self.name}: {where} {said}")
            raise ProviderError(f"{self.name}: request refused {said}")
        try:
            text = msgspec.json.decode(reply.content, type=_Generated).response
        except msgspec.DecodeError as exc:
            raise ProviderError(f"{self.name}: malformed answer: {exc}") from None
        keywords = parse_answer(text)
        if keywords is None:
            raise ProviderError(f"{self.name}: the answer is not a JSON array of keywords")
        return keywords


def _ollama_error(content: bytes) -> str:
    try:
        return one_line(msgspec.json.decode(content, type=_OllamaErrorBody).error)
    except msgspec.DecodeError:
        return one_line(content.decode("utf-8", "replace"))


TIERS: dict[str, type[RemoteKeywords]] = {
    "haiku": HaikuKeywords,
    "ollama": OllamaKeywords,
}
