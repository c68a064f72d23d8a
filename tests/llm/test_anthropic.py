"""The ``anthropic`` provider against a loopback Messages API with the real shapes."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from memlog.errors import ProviderError, ProviderUnavailable, RateLimited
from memlog.llm.anthropic import AnthropicMessages
from memlog.tests.messages_api import MessagesAPI

SCHEMA = {"type": "object", "properties": {"extractions": {"type": "array"}},
          "required": ["extractions"], "additionalProperties": False}  # fmt: skip
ANSWER = {"extractions": [{"section": "facts", "content": "x", "confidence": 0.5}]}


@pytest.fixture
def api() -> Iterator[MessagesAPI]:
    with MessagesAPI(structured=ANSWER) as server:
        yield server  # type: ignore[misc]


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client() as made:
        yield made


def model(api: MessagesAPI, client: httpx.Client, **env: str) -> AnthropicMessages:
    return AnthropicMessages(
        client, {"ANTHROPIC_API_KEY": "sk-ant-test-key", "ANTHROPIC_BASE_URL": api.url, **env}
    )


def test_a_structured_answer_with_usage_and_cost(api: MessagesAPI, client: httpx.Client) -> None:
    api.usage = {"input_tokens": 3000, "output_tokens": 400}
    answer = model(api, client).ask("You extract.", "the transcript", SCHEMA, 10)
    assert answer.data == ANSWER
    usage = answer.usage
    assert (usage.provider, usage.model, usage.calls) == ("anthropic", "claude-haiku-4-5", 1)
    assert (usage.tokens_in, usage.tokens_out) == (3000, 400)
    assert usage.cost_micros == 3000 * 1 + 400 * 5  # Haiku 4.5: $1 / $5 per million


def test_the_request_is_structured_outputs_with_haiku(
    api: MessagesAPI, client: httpx.Client
) -> None:
    model(api, client).ask("You extract.", "the transcript", SCHEMA, 10)
    (request,) = api.requests[-1:]
    body = request.json()
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == "sk-ant-test-key"
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert body["model"] == "claude-haiku-4-5" and body["system"] == "You extract."
    assert body["output_config"] == {"format": {"type": "json_schema", "schema": SCHEMA}}
    assert body["messages"] == [{"role": "user", "content": "the transcript"}]


def test_a_rate_limit_keeps_retry_after(api: MessagesAPI, client: httpx.Client) -> None:
    api.status, api.retry_after = 429, "17"
    with pytest.raises(RateLimited, match=r"rate limited \(429\)") as caught:
        model(api, client).ask("s", "p", SCHEMA, 10)
    assert caught.value.retry_after == 17


def test_overloaded_is_a_rate_limit_too(api: MessagesAPI, client: httpx.Client) -> None:
    api.status = 529
    with pytest.raises(RateLimited, match="overloaded_error"):
        model(api, client).ask("s", "p", SCHEMA, 10)


@pytest.mark.parametrize(
    ("status", "error", "message"),
    [(401, ProviderUnavailable, "ANTHROPIC_API_KEY was refused"),
     (400, ProviderError, r"request refused \(400\)"),
     (500, ProviderError, r"request refused \(500\)")],
)  # fmt: skip
def test_refusals(
    api: MessagesAPI, client: httpx.Client, status: int, error: type[Exception], message: str
) -> None:
    api.status = status
    with pytest.raises(error, match=message):
        model(api, client).ask("s", "p", SCHEMA, 10)


@pytest.mark.parametrize(
    ("raw", "problem"),
    [(b'{"id": "msg_1", "type": "message", "content": [{"type": "te', "malformed answer"),
     (b"<html>gateway</html>", "malformed answer")],
)  # fmt: skip
def test_a_truncated_or_foreign_body_is_an_invalid_answer(
    api: MessagesAPI, client: httpx.Client, raw: bytes, problem: str
) -> None:
    api.raw = raw
    answer = model(api, client).ask("s", "p", SCHEMA, 10)
    assert answer.data is None and problem in answer.problem and answer.usage.calls == 1


def test_text_that_is_not_json_is_an_invalid_answer(api: MessagesAPI, client: httpx.Client) -> None:
    api.structured = None
    api.text = "Here are the extractions: {broken"
    answer = model(api, client).ask("s", "p", SCHEMA, 10)
    assert answer.data is None and answer.problem == "anthropic: the answer is not JSON"


def test_no_key_means_unavailable(client: httpx.Client) -> None:
    with pytest.raises(ProviderUnavailable, match="set ANTHROPIC_API_KEY"):
        AnthropicMessages(client, {})


def test_a_base_url_ending_in_v1_and_another_model(api: MessagesAPI, client: httpx.Client) -> None:
    chosen = model(api, client, ANTHROPIC_BASE_URL=api.url + "/v1",
                   MEMLOG_ANTHROPIC_EXTRACTION_MODEL="claude-haiku-5-5")  # fmt: skip
    chosen.ask("s", "p", SCHEMA, 10)
    assert api.requests[-1].path == "/v1/messages"
    assert json.loads(api.requests[-1].body)["model"] == "claude-haiku-5-5"


def test_nobody_listening_means_unavailable(client: httpx.Client) -> None:
    with MessagesAPI() as gone:
        url = gone.url
    down = AnthropicMessages(client, {"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": url})
    with pytest.raises(ProviderUnavailable, match="cannot connect"):
        down.ask("s", "p", SCHEMA, 5)


def test_memlogs_own_base_url_wins_over_the_gateway(api: MessagesAPI, client: httpx.Client) -> None:
    with MessagesAPI(structured=ANSWER) as gateway:
        chosen = model(
            api, client, ANTHROPIC_BASE_URL=gateway.url, MEMLOG_ANTHROPIC_BASE_URL=api.url
        )
        assert chosen.ask("s", "p", SCHEMA, 10).data == ANSWER
        assert gateway.requests == []
    assert [r.path for r in api.requests] == ["/v1/messages"]


def test_extraction_and_labels_share_one_messages_client() -> None:
    from memlog.keywords.remote import HaikuKeywords
    from memlog.llm.messages import Messages

    with httpx.Client() as made:
        env = {"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": "http://gateway.invalid"}
        extraction, labels = AnthropicMessages(made, env), HaikuKeywords(made, env=env)
    assert isinstance(extraction.api, Messages) and isinstance(labels.api, Messages)
    assert extraction.api.url == labels.api.url == "http://gateway.invalid/v1/messages"
