"""Anthropic's Messages API with structured outputs, over an injected ``httpx.Client``.

``POST {base}/v1/messages`` with ``x-api-key: $ANTHROPIC_API_KEY`` and
``anthropic-version: 2023-06-01``; body ``{"model": "claude-haiku-4-5",
"max_tokens", "system", "messages": [{"role": "user", "content": …}],
"output_config": {"format": {"type": "json_schema", "schema": …}}}``: the
first ``text`` block of the answer is the JSON object.  ``base`` is
``ANTHROPIC_BASE_URL`` (default ``https://api.anthropic.com``); the model
may be changed with ``MEMLOG_ANTHROPIC_EXTRACTION_MODEL``.

One attempt per call: a 429 (its ``retry-after`` kept) or a 529 raises
``RateLimited`` and the session waits for a later run; 401/403 and a
refused connection mean unavailable; other errors are ``ProviderError``.
An answer cut at ``max_tokens``, a body that is not a message, or text that
is not a JSON object is an invalid answer (``Answer.data`` is None).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any, ClassVar

import httpx
import msgspec

from memlog.embeddings.transport import one_line, retry_after_seconds
from memlog.errors import ProviderError, ProviderUnavailable, RateLimited
from memlog.eventlog.events import Usage
from memlog.llm.base import Answer, StructuredModel, cost_micros
from memlog.llm.http import post

DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_MODEL = "claude-haiku-4-5"
API_VERSION = "2023-06-01"
MAX_TOKENS = 4096


class _Block(msgspec.Struct):
    type: str
    text: str = ""


class _Counts(msgspec.Struct):
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int | None = 0
    cache_read_input_tokens: int | None = 0


class _Message(msgspec.Struct):
    content: list[_Block]
    model: str = ""
    stop_reason: str | None = None
    usage: _Counts = msgspec.field(default_factory=_Counts)


class _Error(msgspec.Struct):
    type: str = ""
    message: str = ""


class _ErrorBody(msgspec.Struct):
    error: _Error


class AnthropicMessages(StructuredModel):
    """Claude Haiku through the Messages API, asked for a JSON-schema answer."""

    name: ClassVar[str] = "anthropic"

    def __init__(self, client: httpx.Client, env: Mapping[str, str] = os.environ) -> None:
        self.client = client
        self.key = env.get("ANTHROPIC_API_KEY", "").strip()
        if not self.key:
            raise ProviderUnavailable("anthropic: set ANTHROPIC_API_KEY to use this provider")
        self.base_url = (env.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self.model = env.get("MEMLOG_ANTHROPIC_EXTRACTION_MODEL") or DEFAULT_MODEL

    def request(self, system: str, prompt: str, schema: dict[str, Any]) -> dict[str, Any]:
        return {
            "model": self.model,
            "max_tokens": MAX_TOKENS,
            "system": system,
            "messages": [{"role": "user", "content": prompt}],
            "output_config": {"format": {"type": "json_schema", "schema": schema}},
        }

    def _url(self) -> str:
        base = self.base_url
        return f"{base}/messages" if base.endswith("/v1") else f"{base}/v1/messages"

    def ask(self, system: str, prompt: str, schema: dict[str, Any], timeout: float) -> Answer:
        headers = {"x-api-key": self.key, "anthropic-version": API_VERSION}
        body = self.request(system, prompt, schema)
        response = post(self.client, self.name, self._url(), body, timeout, headers)
        if response.status_code != 200:
            raise self._refusal(response)
        return self._answer(response.content)

    def _refusal(self, response: httpx.Response) -> Exception:
        status = response.status_code
        try:
            error = msgspec.json.decode(response.content, type=_ErrorBody).error
            said = one_line(f"{error.type}: {error.message}")
        except msgspec.DecodeError:
            said = one_line(response.text)
        if status in (429, 529):
            wait = retry_after_seconds(response.headers.get("retry-after"))
            return RateLimited(f"anthropic: rate limited ({status}): {said}", retry_after=wait)
        if status in (401, 403):
            return ProviderUnavailable(f"anthropic: ANTHROPIC_API_KEY was refused: {said}")
        return ProviderError(f"anthropic: request refused ({status}): {said}")

    def _answer(self, content: bytes) -> Answer:
        try:
            message = msgspec.json.decode(content, type=_Message)
        except msgspec.DecodeError as exc:
            empty = Usage(provider=self.name, model=self.model, calls=1)
            return Answer(None, empty, f"anthropic: malformed answer: {one_line(str(exc))}")
        usage = self._usage(message)
        if message.stop_reason == "max_tokens":
            return Answer(None, usage, "anthropic: the answer was cut at max_tokens")
        text = next((b.text for b in message.content if b.type == "text"), "")
        try:
            data = json.loads(text)
        except ValueError:
            return Answer(None, usage, "anthropic: the answer is not JSON")
        if not isinstance(data, dict):
            return Answer(None, usage, "anthropic: the answer is not a JSON object")
        return Answer(data, usage)

    def _usage(self, message: _Message) -> Usage:
        counts = message.usage
        tokens_in = counts.input_tokens + (counts.cache_creation_input_tokens or 0)
        tokens_in += counts.cache_read_input_tokens or 0
        model = message.model or self.model
        return Usage(
            provider=self.name, model=model, calls=1, tokens_in=tokens_in,
            tokens_out=counts.output_tokens,
            cost_micros=cost_micros(model, tokens_in, counts.output_tokens),
        )  # fmt: skip
