"""Keyword tiers that ask a language model over HTTP: Claude Haiku and Ollama.

Each tier holds an injected ``httpx.Client`` and makes one request per
entry, with no retry: a label is not worth a second wait.  The request ends
within ``timeout`` seconds (5 by default): every network operation is
bounded by it, and the answer is streamed with the clock checked after
every chunk, so a server that trickles bytes is cut off too.

Errors.  A missing key, a refused connection and a 404 (model not pulled,
wrong base URL) raise ``ProviderUnavailable``: the tier is skipped.  A
timeout, a refused key, a rate limit, a server error and an answer that is
not a JSON array of strings raise ``ProviderError``.  Either way the chain
moves on to the next tier.

Shapes, checked against each API's reference:

- haiku: ``POST {base}/v1/messages`` with ``x-api-key``, ``anthropic-version:
  2023-06-01`` and ``content-type: application/json``; body ``{"model",
  "max_tokens", "thinking": {"type": "disabled"}, "messages": [{"role":
  "user", "content": …}]}``; answer ``{"id", "type": "message", "role":
  "assistant", "model", "content": [{"type": "text", "text": …}],
  "stop_reason", "usage"}``.  Claude Haiku 5.5 (``claude-haiku-5-5``)
  thinks by default and may open its content with a thinking block, so
  thinking is turned off (it is not needed to pick labels, and its tokens
  would count against the time and ``max_tokens``) and the first block of
  type ``text`` is read, not ``content[0]``.  No ``temperature``: Haiku 5.5
  refuses non-default sampling parameters.  Errors are ``{"type": "error",
  "error": {"type", "message"}}``.  Base URL: ``MEMLOG_ANTHROPIC_BASE_URL``
  (default ``https://api.anthropic.com``); model:
  ``MEMLOG_ANTHROPIC_KEYWORD_MODEL``; key: ``ANTHROPIC_API_KEY``.
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
from typing import Any, ClassVar

import httpx
import msgspec

from memlog import __version__
from memlog.errors import ProviderError, ProviderUnavailable
from memlog.keywords.rules import STOPWORDS
from memlog.keywords.tiers import KeywordProvider
from memlog.vocabulary import MAX_KEYWORDS, MIN_KEYWORDS

TIER_TIMEOUT = 5.0
#: how much of a long description or reasoning goes into the prompt
PROMPT_FIELD_CHARS = 4000
_MESSAGE_CHARS = 200
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


def make_client() -> httpx.Client:
    """A client for the HTTP tiers; whoever makes it closes it."""
    return httpx.Client(headers={"User-Agent": f"memlog/{__version__}"})


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


def _one_line(text: str) -> str:
    folded = " ".join(text.split())
    return folded if len(folded) <= _MESSAGE_CHARS else folded[: _MESSAGE_CHARS - 3] + "..."


class HttpKeywords(KeywordProvider):
    """A language model behind an HTTP API, asked once per entry."""

    default_base_url: ClassVar[str]
    base_url_env: ClassVar[str]
    default_model: ClassVar[str]
    model_env: ClassVar[str]
    key_env: ClassVar[str | None] = None
    path: ClassVar[str]

    def __init__(
        self,
        client: httpx.Client,
        *,
        env: Mapping[str, str] = os.environ,
        timeout: float = TIER_TIMEOUT,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.base_url = (env.get(self.base_url_env) or self.default_base_url).rstrip("/")
        self.model = env.get(self.model_env) or self.default_model
        self.timeout = timeout
        self.clock = clock
        self._key = env.get(self.key_env, "").strip() if self.key_env else ""

    def label(self, name: str, description: str, reasoning: str) -> list[str]:
        if self.key_env and not self._key:
            raise ProviderUnavailable(f"{self.name}: set {self.key_env} to use this tier")
        prompt = prompt_for(name, description, reasoning)
        text = self._answer_text(self._post(self._request(prompt)))
        keywords = parse_answer(text)
        if keywords is None:
            raise ProviderError(f"{self.name}: the answer is not a JSON array of keywords")
        return keywords

    # -- what each API decides ------------------------------------------------------

    @abc.abstractmethod
    def _request(self, prompt: str) -> dict[str, Any]:
        """The JSON body asking for labels."""

    @abc.abstractmethod
    def _answer_text(self, content: bytes) -> str:
        """The model's text in a 200 answer."""

    def _headers(self) -> dict[str, str]:
        return {}

    def _error_message(self, content: bytes) -> str:
        return _one_line(content.decode("utf-8", "replace"))

    # -- one request ---------------------------------------------------------------------

    def _url(self) -> str:
        path = self.path
        if self.base_url.endswith("/v1") and path.startswith("/v1/"):
            path = path[3:]
        return self.base_url + path

    def _post(self, payload: dict[str, Any]) -> bytes:
        deadline = self.clock() + self.timeout
        try:
            status, content = self._exchange(msgspec.json.encode(payload), deadline)
        except httpx.TimeoutException:
            raise self._late() from None
        except httpx.ConnectError as exc:
            raise ProviderUnavailable(
                f"{self.name}: cannot connect to {self.base_url}: {_one_line(str(exc))}"
            ) from None
        except httpx.TransportError as exc:
            why = _one_line(str(exc)) or type(exc).__name__
            raise ProviderError(f"{self.name}: connection failed: {why}") from None
        if status == 200:
            return content
        said = f"({status}): {self._error_message(content)}"
        if status == 404:
            raise ProviderUnavailable(
                f"{self.name}: {self.model} not found at {self.base_url} {said}"
            )
        raise ProviderError(f"{self.name}: request refused {said}")

    def _exchange(self, body: bytes, deadline: float) -> tuple[int, bytes]:
        headers = {"Content-Type": "application/json", **self._headers()}
        with self.client.stream(
            "POST", self._url(), content=body, headers=headers, timeout=self.timeout
        ) as response:
            chunks = []
            for chunk in response.iter_bytes():
                if self.clock() > deadline:
                    raise self._late()
                chunks.append(chunk)
            return response.status_code, b"".join(chunks)

    def _late(self) -> ProviderError:
        return ProviderError(f"{self.name}: no answer within {self.timeout:g} s")


# -- Claude (Haiku) ---------------------------------------------------------------------


class _Block(msgspec.Struct):
    type: str
    text: str = ""


class _Message(msgspec.Struct):
    content: list[_Block]
    stop_reason: str | None = None


class _AnthropicError(msgspec.Struct):
    message: str = ""
    type: str = ""


class _AnthropicErrorBody(msgspec.Struct):
    error: _AnthropicError


class HaikuKeywords(HttpKeywords):
    """Claude's Messages API, Haiku by default."""

    name: ClassVar[str] = "haiku"
    default_base_url = "https://api.anthropic.com"
    base_url_env = "MEMLOG_ANTHROPIC_BASE_URL"
    default_model = "claude-haiku-5-5"
    model_env = "MEMLOG_ANTHROPIC_KEYWORD_MODEL"
    key_env = "ANTHROPIC_API_KEY"
    path = "/v1/messages"
    api_version = "2023-06-01"
    max_tokens = 300

    def _request(self, prompt: str) -> dict[str, Any]:
        return {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "thinking": {"type": "disabled"},
            "messages": [{"role": "user", "content": prompt}],
        }

    def _headers(self) -> dict[str, str]:
        return {"x-api-key": self._key, "anthropic-version": self.api_version}

    def _answer_text(self, content: bytes) -> str:
        try:
            message = msgspec.json.decode(content, type=_Message)
        except msgspec.DecodeError as exc:
            raise ProviderError(f"{self.name}: malformed answer: {exc}") from None
        texts = [block.text for block in message.content if block.type == "text"]
        if not texts:
            why = message.stop_reason or "no text block"
            raise ProviderError(f"{self.name}: the answer has no text ({why})")
        return texts[0]

    def _error_message(self, content: bytes) -> str:
        try:
            error = msgspec.json.decode(content, type=_AnthropicErrorBody).error
        except msgspec.DecodeError:
            return super()._error_message(content)
        return _one_line(f"{error.type}: {error.message}" if error.type else error.message)


# -- Ollama -------------------------------------------------------------------------------


class _Generated(msgspec.Struct):
    response: str


class _OllamaErrorBody(msgspec.Struct):
    error: str


class OllamaKeywords(HttpKeywords):
    """A local or self-hosted Ollama server's ``/api/generate``."""

    name: ClassVar[str] = "ollama"
    default_base_url = "http://localhost:11434"
    base_url_env = "MEMLOG_OLLAMA_BASE_URL"
    default_model = "llama3.2"
    model_env = "MEMLOG_OLLAMA_KEYWORD_MODEL"
    path = "/api/generate"

    def _request(self, prompt: str) -> dict[str, Any]:
        return {
            "model": self.model,
            "prompt": prompt,
            "stream": False,
            "options": {"temperature": 0},
        }

    def _answer_text(self, content: bytes) -> str:
        try:
            return msgspec.json.decode(content, type=_Generated).response
        except msgspec.DecodeError as exc:
            raise ProviderError(f"{self.name}: malformed answer: {exc}") from None

    def _error_message(self, content: bytes) -> str:
        try:
            return _one_line(msgspec.json.decode(content, type=_OllamaErrorBody).error)
        except msgspec.DecodeError:
            return super()._error_message(content)


TIERS: dict[str, type[HttpKeywords]] = {"haiku": HaikuKeywords, "ollama": OllamaKeywords}
