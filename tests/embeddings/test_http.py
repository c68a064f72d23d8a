"""The HTTP embedding providers against a real loopback server.

Each fake API answers with that API's own JSON shapes (success, errors,
quota refusals); the server records what it received so the request bodies
and auth headers are checked exactly.  Waits between retries go to a
recorder instead of sleeping; deadlines run on the real clock.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from email.utils import formatdate
from typing import Any

import httpx
import numpy as np
import pytest

from memlog.embeddings.http import OllamaProvider, make_provider
from memlog.embeddings.transport import CallPolicy, HttpEmbeddingProvider, retry_after_seconds
from memlog.errors import ProviderError, ProviderUnavailable, RateLimited
from memlog.tests.loopback import Answer, LoopbackServer

KEY = "test-key-123"
Json = Any


def vector(seed: int, dims: int) -> list[float]:
    """A non-zero vector whose first component tells which text it belongs to."""
    return [float(seed + 1)] + [0.5] * (dims - 1)


def dumps(value: Json) -> bytes:
    return json.dumps(value).encode()


# -- the four APIs, in their own shapes ------------------------------------------


@dataclass(frozen=True)
class Api:
    name: str
    env: str | None
    path: str
    default_dims: int
    texts: Callable[[Json], list[str]]
    dims: Callable[[Json], int]
    answer: Callable[[Json, list[list[float]]], Json]
    body: Callable[[list[str], str, int], Json]
    server_error: Answer
    rate_limited: Answer | None
    quota: Answer | None
    missing_field: bytes


def gemini_answer(request: Json, vectors: list[list[float]]) -> Json:
    return {"embeddings": [{"values": v} for v in vectors]}


def gemini_body(texts: list[str], task: str, dims: int) -> Json:
    kind = {"query": "RETRIEVAL_QUERY", "document": "RETRIEVAL_DOCUMENT"}[task]
    return {
        "requests": [
            {
                "model": "models/gemini-embedding-001",
                "content": {"parts": [{"text": t}]},
                "taskType": kind,
                "outputDimensionality": dims,
            }
            for t in texts
        ]
    }


def google_429(quota_id: str, retry_delay: str) -> bytes:
    return dumps(
        {
            "error": {
                "code": 429,
                "message": "You exceeded your current quota, please check your plan and "
                "billing details.\n* Quota exceeded for metric: generativelanguage."
                "googleapis.com/embed_content_free_tier_requests, limit: 100\n"
                f"Please retry in {retry_delay}.",
                "status": "RESOURCE_EXHAUSTED",
                "details": [
                    {
                        "@type": "type.googleapis.com/google.rpc.Help",
                        "links": [{"description": "Learn more about Gemini API quotas"}],
                    },
                    {
                        "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                        "violations": [
                            {
                                "quotaMetric": "generativelanguage.googleapis.com/"
                                "embed_content_free_tier_requests",
                                "quotaId": quota_id,
                                "quotaDimensions": {"model": "gemini-embedding-001"},
                                "quotaValue": "100",
                            }
                        ],
                    },
                    {
                        "@type": "type.googleapis.com/google.rpc.RetryInfo",
                        "retryDelay": retry_delay,
                    },
                ],
            }
        }
    )


def listed_answer(request: Json, vectors: list[list[float]]) -> Json:
    data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
    return {
        "object": "list",
        "data": data[::-1],  # order is by "index", never by position
        "model": request["model"],
        "usage": {"prompt_tokens": len(vectors), "total_tokens": len(vectors)},
    }


def openai_body(texts: list[str], task: str, dims: int) -> Json:
    return {
        "model": "text-embedding-3-small",
        "input": texts,
        "encoding_format": "float",
        "dimensions": dims,
    }


def openai_error(message: str, kind: str, code: str | None) -> bytes:
    return dumps({"error": {"message": message, "type": kind, "param": None, "code": code}})


def voyage_body(texts: list[str], task: str, dims: int) -> Json:
    return {"model": "voyage-code-3", "input": texts, "input_type": task, "output_dimension": dims}


def ollama_answer(request: Json, vectors: list[list[float]]) -> Json:
    return {
        "model": request["model"],
        "embeddings": vectors,
        "total_duration": 14143917,
        "load_duration": 1019500,
        "prompt_eval_count": 8,
    }


def ollama_body(texts: list[str], task: str, dims: int) -> Json:
    prefix = {"query": "search_query: ", "document": "search_document: "}[task]
    return {"model": "nomic-embed-text", "input": [prefix + t for t in texts]}


GEMINI = Api(
    name="gemini",
    env="GEMINI_API_KEY",
    path="/v1beta/models/gemini-embedding-001:batchEmbedContents",
    default_dims=768,
    texts=lambda r: [q["content"]["parts"][0]["text"] for q in r["requests"]],
    dims=lambda r: r["requests"][0].get("outputDimensionality", 3072),
    answer=gemini_answer,
    body=gemini_body,
    server_error=(
        500,
        {},
        dumps({"error": {"code": 500, "message": "Internal error.", "status": "INTERNAL"}}),
    ),
    rate_limited=(
        429,
        {},
        google_429("EmbedContentRequestsPerMinutePerProjectPerModel-FreeTier", "3s"),
    ),
    quota=(429, {}, google_429("EmbedContentRequestsPerDayPerProjectPerModel-FreeTier", "9s")),
    missing_field=dumps({"embeddings": [{"value": [1.0, 2.0]}]}),
)
OPENAI = Api(
    name="openai",
    env="OPENAI_API_KEY",
    path="/v1/embeddings",
    default_dims=1536,
    texts=lambda r: r["input"],
    dims=lambda r: r.get("dimensions", 1536),
    answer=listed_answer,
    body=openai_body,
    server_error=(
        500,
        {},
        openai_error(
            "The server had an error while processing your request.", "server_error", None
        ),
    ),
    rate_limited=(
        429,
        {},
        openai_error(
            "Rate limit reached for text-embedding-3-small on requests per min (RPM): "
            "Limit 3000, Used 3000, Requested 1. Please try again in 20ms.",
            "requests",
            "rate_limit_exceeded",
        ),
    ),
    quota=(
        429,
        {},
        openai_error(
            "You exceeded your current quota, please check your plan and billing details.",
            "insufficient_quota",
            "insufficient_quota",
        ),
    ),
    missing_field=dumps({"object": "list", "data": [{"object": "embedding", "index": 0}]}),
)
VOYAGE = Api(
    name="voyage",
    env="VOYAGE_API_KEY",
    path="/v1/embeddings",
    default_dims=1024,
    texts=lambda r: r["input"],
    dims=lambda r: r.get("output_dimension", 1024),
    answer=listed_answer,
    body=voyage_body,
    server_error=(500, {}, dumps({"detail": "Internal Server Error"})),
    rate_limited=(429, {}, dumps({"detail": "Rate limit exceeded. Please slow down."})),
    quota=(402, {}, dumps({"detail": "Payment required: your usage credits are used up."})),
    missing_field=dumps({"object": "list", "data": [{"object": "embedding", "embedding": [1.0]}]}),
)
OLLAMA = Api(
    name="ollama",
    env=None,
    path="/api/embed",
    default_dims=768,
    texts=lambda r: r["input"],
    dims=lambda r: r.get("dimensions", 768),
    answer=ollama_answer,
    body=ollama_body,
    server_error=(
        503,
        {},
        dumps({"error": "server busy, please try again.  maximum pending requests exceeded"}),
    ),
    rate_limited=None,
    quota=None,
    missing_field=dumps({"embedding": [0.5, 0.25]}),  # the older /api/embeddings shape
)
APIS = [GEMINI, OPENAI, VOYAGE, OLLAMA]
CLOUD = [GEMINI, OPENAI, VOYAGE]


class FakeApi:
    """Answers scripted replies first, then successes shaped like ``api``'s."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self.script: list[Answer] = []
        #: added to the requested dimensions in successful answers
        self.dims_offset = 0
        #: added to the number of vectors in successful answers
        self.count_offset = 0

    def __call__(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> Answer:
        if self.script:
            return self.script.pop(0)
        request = json.loads(body)
        count = len(self.api.texts(request)) + self.count_offset
        dims = self.api.dims(request) + self.dims_offset
        vectors = [vector(i, dims) for i in range(count)]
        return 200, {}, dumps(self.api.answer(request, vectors))


# -- fixtures ----------------------------------------------------------------------


@pytest.fixture(params=APIS, ids=lambda a: a.name)
def api(request: pytest.FixtureRequest) -> Api:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def fake(api: Api) -> FakeApi:
    return FakeApi(api)


@pytest.fixture
def server(fake: FakeApi) -> Iterator[LoopbackServer]:
    with LoopbackServer(fake) as server:
        yield server


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(trust_env=False) as client:
        yield client


@pytest.fixture
def sleeps() -> list[float]:
    return []


def env_for(api: Api) -> dict[str, str]:
    return {api.env: KEY} if api.env else {}


@pytest.fixture
def provider(
    api: Api, server: LoopbackServer, client: httpx.Client, sleeps: list[float]
) -> HttpEmbeddingProvider:
    return make_provider(
        api.name,
        base_url=server.url,
        client=client,
        env=env_for(api),
        policy=CallPolicy(sleep=sleeps.append),
    )


cloud_only = pytest.mark.parametrize("api", CLOUD, ids=lambda a: a.name, indirect=True)
only_gemini = pytest.mark.parametrize("api", [GEMINI], ids=["gemini"], indirect=True)
only_openai = pytest.mark.parametrize("api", [OPENAI], ids=["openai"], indirect=True)
only_voyage = pytest.mark.parametrize("api", [VOYAGE], ids=["voyage"], indirect=True)
only_ollama = pytest.mark.parametrize("api", [OLLAMA], ids=["ollama"], indirect=True)


# -- success -----------------------------------------------------------------------


def assert_auth(api: Api, headers: Mapping[str, str]) -> None:
    if api.name == "gemini":
        assert headers["x-goog-api-key"] == KEY
        assert "authorization" not in headers
    elif api.env:
        assert headers["authorization"] == f"Bearer {KEY}"
    else:
        assert "authorization" not in headers and "x-goog-api-key" not in headers


def test_one_query_sends_the_api_request_and_returns_a_unit_vector(
    api: Api, provider: HttpEmbeddingProvider, server: LoopbackServer
) -> None:
    vec = provider.embed("how do retries work?", task="query")

    assert vec.shape == (api.default_dims,)
    assert np.isclose(np.linalg.norm(vec), 1.0)
    (received,) = server.requests
    assert (received.method, received.path) == ("POST", api.path)
    assert received.headers["content-type"] == "application/json"
    assert_auth(api, received.headers)
    assert received.json() == api.body(["how do retries work?"], "query", api.default_dims)


def test_a_batch_of_documents_keeps_the_order_of_the_texts(
    api: Api, provider: HttpEmbeddingProvider, server: LoopbackServer
) -> None:
    texts = ["first", "second", "third"]

    matrix = provider.embed_batch(texts, task="document")

    assert matrix.shape == (3, api.default_dims)
    assert matrix[0, 0] < matrix[1, 0] < matrix[2, 0]  # vector(i) grows with i
    (received,) = server.requests
    assert received.json() == api.body(texts, "document", api.default_dims)


def test_more_texts_than_a_batch_takes_are_split_over_several_calls(
    api: Api, provider: HttpEmbeddingProvider, server: LoopbackServer
) -> None:
    provider.batch_size = 2  # type: ignore[misc]

    matrix = provider.embed_batch([f"text {i}" for i in range(5)])

    assert matrix.shape == (5, api.default_dims)
    assert [len(api.texts(r.json())) for r in server.requests] == [2, 2, 1]


@only_gemini
def test_gemini_batches_hold_at_most_100_requests(
    provider: HttpEmbeddingProvider, server: LoopbackServer
) -> None:
    provider.embed_batch([f"entry {i}" for i in range(101)])

    assert [len(r.json()["requests"]) for r in server.requests] == [100, 1]


def test_chosen_dimensions_are_requested(
    api: Api, server: LoopbackServer, client: httpx.Client
) -> None:
    provider = make_provider(
        api.name, dimensions=256, base_url=server.url, client=client, env=env_for(api)
    )

    assert provider.embed("x").shape == (256,)
    assert api.dims(server.requests[0].json()) == 256


@only_openai
def test_openai_models_of_one_size_are_not_asked_for_dimensions(
    server: LoopbackServer, client: httpx.Client
) -> None:
    env = {"OPENAI_API_KEY": KEY}
    make_provider("openai", "text-embedding-ada-002", 1536, server.url, client, env).embed("x")

    assert server.requests[0].json() == {
        "model": "text-embedding-ada-002",
        "input": ["x"],
        "encoding_format": "float",
    }


@only_voyage
def test_voyage_models_of_one_size_are_not_asked_for_dimensions(
    server: LoopbackServer, client: httpx.Client
) -> None:
    env = {"VOYAGE_API_KEY": KEY}
    make_provider("voyage", "voyage-law-2", 1024, server.url, client, env).embed("x")

    assert server.requests[0].json() == {
        "model": "voyage-law-2",
        "input": ["x"],
        "input_type": "query",
    }


@only_ollama
def test_ollama_models_other_than_nomic_get_no_prefix(
    server: LoopbackServer, client: httpx.Client
) -> None:
    provider = OllamaProvider(
        client, model="mxbai-embed-large", dimensions=1024, base_url=server.url
    )

    provider.embed("plain")

    assert server.requests[0].json() == {
        "model": "mxbai-embed-large",
        "input": ["plain"],
        "dimensions": 1024,
    }


@only_openai
def test_a_base_url_ending_in_v1_is_not_doubled(
    server: LoopbackServer, client: httpx.Client
) -> None:
    env = {"OPENAI_API_KEY": KEY}
    provider = make_provider("openai", base_url=server.url + "/v1/", client=client, env=env)

    provider.embed("x")

    assert server.requests[0].path == "/v1/embeddings"


# -- retries at write time ----------------------------------------------------------


@cloud_only
def test_a_429_waits_for_retry_after_then_succeeds(
    api: Api,
    fake: FakeApi,
    provider: HttpEmbeddingProvider,
    server: LoopbackServer,
    sleeps: list[float],
) -> None:
    assert api.rate_limited is not None
    status, _, body = api.rate_limited
    fake.script.append((status, {"Retry-After": "2"}, body))

    assert provider.embed_batch(["a", "b"]).shape == (2, api.default_dims)
    assert sleeps == [2.0]
    assert len(server.requests) == 2


@only_openai
def test_retry_after_may_be_an_http_date(
    api: Api, fake: FakeApi, provider: HttpEmbeddingProvider, sleeps: list[float]
) -> None:
    assert api.rate_limited is not None
    status, _, body = api.rate_limited
    fake.script.append((status, {"Retry-After": formatdate(time.time() + 30, usegmt=True)}, body))

    provider.embed("x", task="document")

    assert len(sleeps) == 1 and 28 <= sleeps[0] <= 31


@only_gemini
def test_gemini_per_minute_limit_waits_for_its_retry_delay(
    api: Api, fake: FakeApi, provider: HttpEmbeddingProvider, sleeps: list[float]
) -> None:
    assert api.rate_limited is not None
    fake.script.append(api.rate_limited)  # no Retry-After header: RetryInfo says 3s

    provider.embed("x", task="document")

    assert sleeps == [3.0]


@cloud_only
def test_an_exhausted_quota_stops_at_once(
    api: Api,
    fake: FakeApi,
    provider: HttpEmbeddingProvider,
    server: LoopbackServer,
    sleeps: list[float],
) -> None:
    assert api.quota is not None
    fake.script.extend([api.quota] * 3)

    with pytest.raises(RateLimited) as caught:
        provider.embed_batch(["a"])

    assert caught.value.quota is True
    assert "quota exhausted" in str(caught.value) and "\n" not in str(caught.value)
    assert len(server.requests) == 1 and sleeps == []


@cloud_only
def test_persistent_429_raises_rate_limited_with_retry_after(
    api: Api,
    fake: FakeApi,
    provider: HttpEmbeddingProvider,
    server: LoopbackServer,
    sleeps: list[float],
) -> None:
    assert api.rate_limited is not None
    status, _, body = api.rate_limited
    fake.script.extend([(status, {"Retry-After": "1"}, body)] * 5)

    with pytest.raises(RateLimited) as caught:
        provider.embed_batch(["a"])

    assert caught.value.quota is False and caught.value.retry_after == 1.0
    assert "gave up after 5 tries" in str(caught.value)
    assert len(server.requests) == 5 and sleeps == [1.0] * 4


def test_a_server_error_is_retried_with_backoff(
    api: Api,
    fake: FakeApi,
    provider: HttpEmbeddingProvider,
    server: LoopbackServer,
    sleeps: list[float],
) -> None:
    fake.script.extend([api.server_error, api.server_error])

    assert provider.embed_batch(["a"]).shape == (1, api.default_dims)
    assert sleeps == [1.0, 2.0]
    assert len(server.requests) == 3


def test_persistent_server_errors_raise_provider_error(
    api: Api,
    fake: FakeApi,
    provider: HttpEmbeddingProvider,
    server: LoopbackServer,
    sleeps: list[float],
) -> None:
    fake.script.extend([api.server_error] * 5)

    with pytest.raises(ProviderError) as caught:
        provider.embed_batch(["a"])

    assert not isinstance(caught.value, RateLimited)
    message = str(caught.value)
    assert message.startswith(f"{api.name}: server error ({api.server_error[0]})")
    assert "gave up after 5 tries" in message
    assert sleeps == [1.0, 2.0, 4.0, 8.0] and len(server.requests) == 5


def test_a_wait_longer_than_allowed_is_not_taken(
    api: Api, fake: FakeApi, provider: HttpEmbeddingProvider, sleeps: list[float]
) -> None:
    status, _, body = api.server_error
    fake.script.append((status, {"Retry-After": "3600"}, body))

    with pytest.raises(ProviderError, match="asked to wait 3600 s"):
        provider.embed_batch(["a"])
    assert sleeps == []


# -- bad answers --------------------------------------------------------------------


def test_malformed_json_is_a_provider_error(fake: FakeApi, provider: HttpEmbeddingProvider) -> None:
    fake.script.append((200, {}, b'{"embeddings": [nope]}'))

    with pytest.raises(ProviderError, match="malformed answer: JSON is malformed"):
        provider.embed("x")


def test_a_missing_field_is_a_provider_error_naming_it(
    api: Api, fake: FakeApi, provider: HttpEmbeddingProvider
) -> None:
    fake.script.append((200, {}, api.missing_field))

    with pytest.raises(ProviderError, match="malformed answer: Object missing required field"):
        provider.embed("x")


def test_wrong_dimensions_are_a_provider_error(
    api: Api, fake: FakeApi, provider: HttpEmbeddingProvider
) -> None:
    fake.dims_offset = -1

    with pytest.raises(ProviderError, match=f"has {api.default_dims - 1} dimensions, expected"):
        provider.embed_batch(["a", "b"])


def test_a_missing_vector_is_a_provider_error(
    fake: FakeApi, provider: HttpEmbeddingProvider
) -> None:
    fake.count_offset = -1

    with pytest.raises(ProviderError, match="1 vectors for 2 texts"):
        provider.embed_batch(["a", "b"])


def test_a_refused_key_makes_the_provider_unavailable(
    api: Api, fake: FakeApi, provider: HttpEmbeddingProvider, server: LoopbackServer
) -> None:
    fake.script.append((401, {}, dumps({"error": {"message": "Incorrect API key provided."}})))

    with pytest.raises(ProviderUnavailable, match="refused"):
        provider.embed("x")
    assert len(server.requests) == 1


@only_gemini
def test_gemini_says_400_for_a_bad_key_and_is_unavailable(
    fake: FakeApi, provider: HttpEmbeddingProvider
) -> None:
    error = {
        "code": 400,
        "message": "API key not valid. Please pass a valid API key.",
        "status": "INVALID_ARGUMENT",
        "details": [
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "API_KEY_INVALID",
                "domain": "googleapis.com",
                "metadata": {"service": "generativelanguage.googleapis.com"},
            }
        ],
    }
    fake.script.append((400, {}, dumps({"error": error})))

    with pytest.raises(ProviderUnavailable) as caught:
        provider.embed("x")
    assert str(caught.value) == (
        "gemini: the key in GEMINI_API_KEY was refused (400): "
        "API key not valid. Please pass a valid API key."
    )


def test_other_client_errors_are_provider_errors(
    api: Api, fake: FakeApi, provider: HttpEmbeddingProvider, server: LoopbackServer
) -> None:
    fake.script.append((400, {}, b"bad request"))

    with pytest.raises(ProviderError, match=r"request refused \(400\): bad request"):
        provider.embed("x")
    assert len(server.requests) == 1


@only_ollama
def test_an_ollama_model_not_pulled_is_unavailable(
    fake: FakeApi, provider: HttpEmbeddingProvider
) -> None:
    body = dumps({"error": 'model "nomic-embed-text" not found, try pulling it first'})
    fake.script.append((404, {}, body))

    with pytest.raises(ProviderUnavailable, match="try pulling it first"):
        provider.embed("x")


# -- deadlines (query time) ------------------------------------------------------------


def test_a_slow_answer_past_the_deadline_raises_in_time(
    provider: HttpEmbeddingProvider, server: LoopbackServer
) -> None:
    server.delay = 2.0
    start = time.monotonic()

    with pytest.raises(ProviderError, match="deadline"):
        provider.with_deadline(start + 0.3).embed("slow", task="query")

    assert time.monotonic() - start < 0.3 + 0.25
    assert provider.deadline is None  # the shared provider is untouched


class Trickle(httpx.SyncByteStream):
    """A body that arrives one small chunk every 50 ms, for two seconds."""

    def __iter__(self) -> Iterator[bytes]:
        for _ in range(40):
            time.sleep(0.05)
            yield b" "


def test_a_body_trickling_past_the_deadline_is_cut_off() -> None:
    transport = httpx.MockTransport(lambda request: httpx.Response(200, stream=Trickle()))
    with httpx.Client(transport=transport) as client:
        provider = make_provider("ollama", client=client, env={})
        start = time.monotonic()

        with pytest.raises(ProviderError, match="deadline"):
            provider.with_deadline(start + 0.3).embed("q")

    assert time.monotonic() - start < 0.3 + 0.25


def test_a_passed_deadline_sends_nothing(
    provider: HttpEmbeddingProvider, server: LoopbackServer
) -> None:
    with pytest.raises(ProviderError, match="deadline"):
        provider.with_deadline(time.monotonic() - 0.01).embed("late")
    assert server.requests == []


def test_no_retry_waits_past_the_deadline(
    api: Api,
    fake: FakeApi,
    provider: HttpEmbeddingProvider,
    server: LoopbackServer,
    sleeps: list[float],
) -> None:
    status, _, body = api.server_error
    fake.script.append((status, {"Retry-After": "5"}, body))

    with pytest.raises(ProviderError, match="would pass the deadline"):
        provider.with_deadline(time.monotonic() + 2.0).embed("q", task="query")
    assert sleeps == [] and len(server.requests) == 1


def test_a_query_retries_briefly_within_its_deadline(
    api: Api,
    fake: FakeApi,
    provider: HttpEmbeddingProvider,
    server: LoopbackServer,
    sleeps: list[float],
) -> None:
    fake.script.append(api.server_error)

    vec = provider.with_deadline(time.monotonic() + 5.0).embed("q", task="query")

    assert vec.shape == (api.default_dims,)
    assert sleeps == [0.2] and len(server.requests) == 2


# -- keys, names and connections ---------------------------------------------------------


@cloud_only
def test_a_missing_key_is_one_clear_line(api: Api, client: httpx.Client) -> None:
    with pytest.raises(ProviderUnavailable) as caught:
        make_provider(api.name, client=client, env={str(api.env): "  "})

    assert str(caught.value) == f"{api.name}: set {api.env} to use this provider"


def test_ollama_needs_no_key(client: httpx.Client) -> None:
    assert make_provider("ollama", client=client, env={}).name == "ollama"


def test_an_unknown_provider_name_is_unavailable() -> None:
    with pytest.raises(ProviderUnavailable, match="unknown embedding provider 'cohere'"):
        make_provider("cohere", env={})


def test_the_factory_client_is_owned_and_closed() -> None:
    provider = make_provider("ollama", env={})
    bound = provider.with_deadline(time.monotonic() + 1)

    bound.close()
    assert not provider.client.is_closed  # a bound copy never closes the shared client
    provider.close()
    assert provider.client.is_closed


def test_no_server_listening_makes_the_provider_unavailable(client: httpx.Client) -> None:
    with LoopbackServer(lambda *_: (200, {}, b"")) as gone:
        url = gone.url
    provider = make_provider("ollama", base_url=url, client=client, env={})

    with pytest.raises(ProviderUnavailable, match="cannot connect to"):
        provider.embed("x")


# -- Retry-After -----------------------------------------------------------------------


def test_retry_after_parses_seconds_and_http_dates() -> None:
    now = 1_700_000_000.0
    assert retry_after_seconds("120") == 120.0
    assert retry_after_seconds(" 1.5 ") == 1.5
    assert retry_after_seconds(formatdate(now + 42, usegmt=True), now=now) == 42.0
    assert retry_after_seconds(formatdate(now - 42, usegmt=True), now=now) == 0.0
    assert retry_after_seconds("soon") is None
    assert retry_after_seconds("inf") is None
    assert retry_after_seconds(None) is None
