"""Anthropic's Messages API: memlog's one client for it, for extraction and for keyword labels.

Where requests go: ``llm.endpoints.anthropic_url`` (``MEMLOG_ANTHROPIC_BASE_URL``,
else ``ANTHROPIC_BASE_URL``, else ``https://api.anthropic.com``); a base ending
in ``/v1`` is taken as it is.  The key is ``ANTHROPIC_API_KEY``; without it the client is
unavailable and nothing is sent.

One request per call, ``POST {base}/v1/messages`` with ``x-api-key``,
``anthropic-version: 2023-06-01`` and a JSON body the caller builds; the
whole exchange ends within ``timeout`` seconds (``llm.http``).

What an answer means: 200 with a message body is the ``Message``; a body
that is not a message is ``Malformed``; 429 and 529 are ``RateLimited``
(with ``retry-after``); 401, 403, 404 and a refused connection are
``ProviderUnavailable`` (a refused key, an unknown model, nobody there); any
other status, a timeout or a broken connection is a ``ProviderError``.
Errors in the API's shape (``{"type": "error", "error": {"type",
"message"}}``) are quoted on one line.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx
import msgspec

from memlog.embeddings.transport import one_line, retry_after_seconds
from memlog.errors import ProviderError, ProviderUnavailable, RateLimited
from memlog.llm.endpoints import ANTHROPIC_KEY, anthropic_url
from memlog.llm.http import Reply, exchange

API_VERSION = "2023-06-01"
KEY_ENV = ANTHROPIC_KEY


class Block(msgspec.Struct):
    type: str
    text: str = ""


class Counts(msgspec.Struct):
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int | None = 0
    cache_read_input_tokens: int | None = 0

    @property
    def tokens_in(self) -> int:
        """Every input token the call was billed for, cached or not."""
        cached = (self.cache_creation_input_tokens or 0) + (self.cache_read_input_tokens or 0)
        return self.input_tokens + cached


class Message(msgspec.Struct):
    content: list[Block]
    model: str = ""
    stop_reason: str | None = None
    usage: Counts = msgspec.field(default_factory=Counts)

    def text(self) -> str | None:
        """The first ``text`` block (a thinking block may come before it), or None."""
        return next((b.text for b in self.content if b.type == "text"), None)


class _Error(msgspec.Struct):
    type: str = ""
    message: str = ""


class _ErrorBody(msgspec.Struct):
    error: _Error


class Malformed(ProviderError):
    """A 200 whose body is not a message."""


class Messages:
    """``POST /v1/messages`` over an injected ``httpx.Client``, named ``name`` in messages."""

    def __init__(
        self,
        client: httpx.Client,
        name: str,
        env: Mapping[str, str] = os.environ,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.name = name
        self.clock = clock
        self.key = env.get(KEY_ENV, "").strip()
        self.base_url = anthropic_url(env)

    @property
    def available(self) -> bool:
        return bool(self.key)

    @property
    def url(self) -> str:
        base = self.base_url
        return f"{base}/messages" if base.endswith("/v1") else f"{base}/v1/messages"

    def send(self, body: dict[str, Any], timeout: float) -> Message:
        """One request; the decoded message, or the error its answer means."""
        if not self.key:
            raise ProviderUnavailable(f"{self.name}: set {KEY_ENV} to use it")
        headers = {"x-api-key": self.key, "anthropic-version": API_VERSION}
        encoded = msgspec.json.encode(body)
        reply = exchange(self.client, self.name, self.url, encoded, timeout, headers, self.clock)
        if reply.status != 200:
            raise self._refusal(reply)
        try:
            return msgspec.json.decode(reply.content, type=Message)
        except msgspec.DecodeError as exc:
            raise Malformed(f"{self.name}: malformed answer: {one_line(str(exc))}") from None

    def _refusal(self, reply: Reply) -> ProviderError:
        status = reply.status
        said = f"({status}): {_said(reply.content)}"
        if status in (429, 529):
            wait = retry_after_seconds(reply.headers.get("retry-after"))
            return RateLimited(f"{self.name}: rate limited {said}", retry_after=wait)
        if status in (401, 403):
            return ProviderUnavailable(f"{self.name}: {KEY_ENV} was refused {said}")
        if status == 404:
            return ProviderUnavailable(f"{self.name}: not found at {self.base_url} {said}")
        return ProviderError(f"{self.name}: request refused {said}")


def _said(content: bytes) -> str:
    try:
        error = msgspec.json.decode(content, type=_ErrorBody).error
    except msgspec.DecodeError:
        return one_line(content.decode("utf-8", "replace"))
    return one_line(f"{error.type}: {error.message}" if error.type else error.message)
