"""The ``ollama`` provider against a loopback ``/api/chat`` with Ollama's shapes; the chain."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import httpx
import pytest

from memlog.errors import ProviderError, ProviderUnavailable
from memlog.llm.base import Chain
from memlog.llm.ollama import OllamaChat
from memlog.llm.registry import ORDER, make_chain
from memlog.tests.loopback import Answer, LoopbackServer

SCHEMA = {"type": "object", "properties": {"extractions": {"type": "array"}}}
ANSWER = {"extractions": []}


def chat(content: str, status: int = 200) -> Any:
    def handle(method: str, path: str, headers: Mapping[str, str], body: bytes) -> Answer:
        if status != 200:
            return status, {}, json.dumps({"error": "model 'llama3.2' not found"}).encode()
        answer = {
            "model": "llama3.2", "created_at": "2026-11-23T10:00:00Z",
            "message": {"role": "assistant", "content": content}, "done": True,
            "done_reason": "stop", "prompt_eval_count": 812, "eval_count": 64,
        }  # fmt: skip
        return 200, {}, json.dumps(answer).encode()

    return handle


def test_a_local_structured_answer_costs_nothing() -> None:
    with LoopbackServer(chat(json.dumps(ANSWER))) as server, httpx.Client() as client:
        model = OllamaChat(client, {"MEMLOG_OLLAMA_BASE_URL": server.url})
        answer = model.ask("You extract.", "the transcript", SCHEMA, 10)
        body = server.requests[0].json()
    assert answer.data == ANSWER
    assert (answer.usage.tokens_in, answer.usage.tokens_out, answer.usage.cost_micros) == (
        812,
        64,
        0,
    )
    assert server.requests[0].path == "/api/chat"
    assert body["format"] == SCHEMA and body["stream"] is False
    assert body["messages"][0] == {"role": "system", "content": "You extract."}
    assert model.estimate(10_000, 1_000) == 0


def test_text_that_is_not_json_is_an_invalid_answer() -> None:
    with LoopbackServer(chat("sure, here you go")) as server, httpx.Client() as client:
        answer = OllamaChat(client, {"MEMLOG_OLLAMA_BASE_URL": server.url}).ask(
            "s", "p", SCHEMA, 10
        )
    assert answer.data is None and answer.problem == "ollama: the answer is not JSON"


def test_a_missing_model_is_unavailable_and_other_errors_are_errors() -> None:
    with LoopbackServer(chat("", status=404)) as server, httpx.Client() as client:
        with pytest.raises(ProviderUnavailable, match="llama3.2 not found"):
            OllamaChat(client, {"MEMLOG_OLLAMA_BASE_URL": server.url}).ask("s", "p", SCHEMA, 10)
    with LoopbackServer(chat("", status=500)) as server, httpx.Client() as client:
        with pytest.raises(ProviderError, match=r"refused \(500\)"):
            OllamaChat(client, {"MEMLOG_OLLAMA_BASE_URL": server.url}).ask("s", "p", SCHEMA, 10)


def test_the_chain_moves_past_unavailable_models(tmp_path: Any) -> None:
    with LoopbackServer(chat(json.dumps(ANSWER))) as server, httpx.Client() as client:
        env = {"PATH": str(tmp_path), "MEMLOG_OLLAMA_BASE_URL": server.url}
        chain = make_chain("auto", client, env)  # no claude on PATH, no key: ollama answers
        answer = chain.ask("s", "p", SCHEMA, 10)
        assert answer.data == ANSWER and answer.usage.provider == "ollama"
        assert set(chain.unavailable) == {"claude-cli", "anthropic"}
        assert "Claude CLI not found" in chain.unavailable["claude-cli"]


def test_off_and_nothing_available() -> None:
    with httpx.Client() as client:
        assert ORDER["off"] == () and make_chain("off", client, {}).empty
    with pytest.raises(ProviderUnavailable, match="extraction is off"):
        Chain([]).current()
