"""Anthropic's Messages API with structured outputs, for extraction.

The request goes through ``llm.messages`` (memlog's one Messages API client:
``MEMLOG_ANTHROPIC_BASE_URL``, else ``ANTHROPIC_BASE_URL``, else the public
endpoint; ``ANTHROPIC_API_KEY``); its body is ``{"model":
"claude-haiku-4-5", "max_tokens", "system", "messages": [{"role": "user",
"content": …}], "output_config": {"format": {"type": "json_schema",
"schema": …}}}`` and the first ``text`` block of the answer is the JSON
object.  The model may be changed with ``MEMLOG_ANTHROPIC_EXTRACTION_MODEL``.

One attempt per call: a 429 (its ``retry-after`` kept) or a 529 raises
``RateLimited`` and the session waits for a later run; 401/403, 404 and a
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

from memlog.errors import ProviderUnavailable
from memlog.eventlog.events import Usage
from memlog.llm.base import Answer, StructuredModel, cost_micros
from memlog.llm.messages import KEY_ENV, Malformed, Message, Messages

DEFAULT_MODEL = "claude-haiku-4-5"
MAX_TOKENS = 4096


class AnthropicMessages(StructuredModel):
    """Claude Haiku through the Messages API, asked for a JSON-schema answer."""

    name: ClassVar[str] = "anthropic"

    def __init__(self, client: httpx.Client, env: Mapping[str, str] = os.environ) -> None:
        self.api = Messages(client, self.name, env)
        if not self.api.available:
            raise ProviderUnavailable(f"anthropic: set {KEY_ENV} to use this provider")
        self.model = env.get("MEMLOG_ANTHROPIC_EXTRACTION_MODEL") or DEFAULT_MODEL

    def request(self, system: str, prompt: str, schema: dict[str, Any]) -> dict[str, Any]:
        return {
            "model": self.model,
            "max_tokens": MAX_TOKENS,
            "system": system,
            "messages": [{"role": "user", "content": prompt}],
            "output_config": {"format": {"type": "json_schema", "schema": schema}},
        }

    def ask(self, system: str, prompt: str, schema: dict[str, Any], timeout: float) -> Answer:
        try:
            message = self.api.send(self.request(system, prompt, schema), timeout)
        except Malformed as exc:
            return Answer(None, Usage(provider=self.name, model=self.model, calls=1), str(exc))
        return self._answer(message)

    def _answer(self, message: Message) -> Answer:
        usage = self._usage(message)
        if message.stop_reason == "max_tokens":
            return Answer(None, usage, "anthropic: the answer was cut at max_tokens")
        try:
            data = json.loads(message.text() or "")
        except ValueError:
            return Answer(None, usage, "anthropic: the answer is not JSON")
        if not isinstance(data, dict):
            return Answer(None, usage, "anthropic: the answer is not a JSON object")
        return Answer(data, usage)

    def _usage(self, message: Message) -> Usage:
        counts = message.usage
        model = message.model or self.model
        return Usage(
            provider=self.name, model=model, calls=1, tokens_in=counts.tokens_in,
            tokens_out=counts.output_tokens,
            cost_micros=cost_micros(model, counts.tokens_in, counts.output_tokens),
        )  # fmt: skip
