"""A local Ollama server as a structured-output model: extraction that never leaves
the machine, at no cost.

``POST {base}/api/chat`` with ``{"model", "messages": [system, user],
"stream": false, "format": <the JSON schema>, "options": {"temperature":
0}}``; the answer's ``message.content`` is the JSON object,
``prompt_eval_count`` and ``eval_count`` the tokens.  ``base`` is
``MEMLOG_OLLAMA_BASE_URL`` (default ``http://localhost:11434``), the model
``MEMLOG_OLLAMA_EXTRACTION_MODEL`` (default ``llama3.2``).  A refused
connection or an unknown model (404) means unavailable.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any, ClassVar

import httpx
import msgspec

from memlog.embeddings.transport import one_line
from memlog.errors import ProviderError, ProviderUnavailable
from memlog.eventlog.events import Usage
from memlog.llm.base import Answer, StructuredModel
from memlog.llm.endpoints import ollama_url
from memlog.llm.http import post

DEFAULT_MODEL = "llama3.2"


class _Said(msgspec.Struct):
    content: str = ""


class _Chat(msgspec.Struct):
    message: _Said = msgspec.field(default_factory=_Said)
    model: str = ""
    prompt_eval_count: int = 0
    eval_count: int = 0


class OllamaChat(StructuredModel):
    """``/api/chat`` with a JSON schema as ``format``."""

    name: ClassVar[str] = "ollama"
    paid: ClassVar[bool] = False

    def __init__(self, client: httpx.Client, env: Mapping[str, str] = os.environ) -> None:
        self.client = client
        self.base_url = ollama_url(env)
        self.model = env.get("MEMLOG_OLLAMA_EXTRACTION_MODEL") or DEFAULT_MODEL

    def request(self, system: str, prompt: str, schema: dict[str, Any]) -> dict[str, Any]:
        return {
            "model": self.model,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": prompt},
            ],
            "stream": False,
            "format": schema,
            "options": {"temperature": 0},
        }

    def ask(self, system: str, prompt: str, schema: dict[str, Any], timeout: float) -> Answer:
        body = self.request(system, prompt, schema)
        response = post(self.client, self.name, f"{self.base_url}/api/chat", body, timeout)
        if response.status == 404:
            raise ProviderUnavailable(f"ollama: {self.model} not found at {self.base_url}")
        if response.status != 200:
            said = one_line(response.content.decode("utf-8", "replace"))
            raise ProviderError(f"ollama: request refused ({response.status}): {said}")
        return self._answer(response.content)

    def _answer(self, content: bytes) -> Answer:
        usage = Usage(provider=self.name, model=self.model, calls=1)
        try:
            chat = msgspec.json.decode(content, type=_Chat)
        except msgspec.DecodeError as exc:
            return Answer(None, usage, f"ollama: malformed answer: {one_line(str(exc))}")
        usage = Usage(
            provider=self.name, model=chat.model or self.model, calls=1,
            tokens_in=chat.prompt_eval_count, tokens_out=chat.eval_count,
        )  # fmt: skip
        try:
            data = json.loads(chat.message.content)
        except ValueError:
            return Answer(None, usage, "ollama: the answer is not JSON")
        if not isinstance(data, dict):
            return Answer(None, usage, "ollama: the answer is not a JSON object")
        return Answer(data, usage)
