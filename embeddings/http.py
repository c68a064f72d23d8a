"""Remote embedding providers: Gemini, OpenAI, Voyage and Ollama over httpx.

Each provider says only what is its own: the typed request for a batch
(``_request``), how its answer holds the vectors (``_vectors``) and what its
error body says (``_said``); ``embeddings.transport`` posts the request (key,
deadline and retries) and checks the vectors.  ``make_provider`` builds one by
name with its own client.  Vectors come back raw; the base class checks
their shape and normalises them (Gemini's below 3072 dimensions are not
unit length).

Shapes, checked against each API's reference and real client code:

- gemini: ``POST {base}/v1beta/models/{model}:batchEmbedContents`` with
  ``x-goog-api-key``; body ``{"requests": [{"model": "models/{model}",
  "content": {"parts": [{"text": …}]}, "taskType": "RETRIEVAL_DOCUMENT" |
  "RETRIEVAL_QUERY", "outputDimensionality": 768}]}``, at most 100 requests;
  answer ``{"embeddings": [{"values": […]}]}`` in request order.  Errors are
  ``{"error": {"code", "message", "status", "details"}}``; a 429 is
  ``RESOURCE_EXHAUSTED`` with a ``QuotaFailure`` (``violations[].quotaId``,
  ``quotaValue``) and a ``RetryInfo`` (``retryDelay: "37s"``).  The message
  reads "You exceeded your current quota" for per-minute limits too, so only
  a per-day ``quotaId`` or a zero ``quotaValue`` counts as exhausted (and
  HTTP 402, sent since prepaid credits ran out); ``retryDelay`` is the wait.
  A bad key is a 400 ``INVALID_ARGUMENT`` with ``ErrorInfo.reason``
  ``API_KEY_INVALID``, treated as a refused key.
- openai: ``POST {base}/v1/embeddings`` with ``Authorization: Bearer``;
  body ``{"model", "input": […], "encoding_format": "float", "dimensions"}``
  (``dimensions`` only for text-embedding-3 models), at most 2048 inputs;
  answer ``{"object": "list", "data": [{"object": "embedding", "index",
  "embedding"}], "model", "usage"}``, ordered here by ``index``.  Errors are
  ``{"error": {"message", "type", "param", "code"}}``; an exhausted quota is
  a 429 whose ``code`` is ``insufficient_quota``.
- voyage: ``POST {base}/v1/embeddings`` with ``Authorization: Bearer``; body
  ``{"model", "input": […], "input_type": "query" | "document",
  "output_dimension"}`` (``output_dimension`` only for voyage-4*,
  voyage-3.5*, voyage-3-large and voyage-code-3: 256, 512, 1024 or 2048), at
  most 1000 inputs; answer as OpenAI's (``usage`` has ``total_tokens``);
  errors ``{"detail": "…"}``.
- ollama: ``POST {base}/api/embed``, no key; body ``{"model", "input":
  […], "dimensions"}`` (``dimensions`` only when chosen); answer ``{"model",
  "embeddings": [[…]], "total_duration", "load_duration",
  "prompt_eval_count"}``; errors ``{"error": "…"}`` (404 for a model not
  pulled).  nomic-embed-text needs the task prefixes ``search_query: `` and
  ``search_document: ``, which Ollama does not add, so they are added here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Literal

import httpx
import msgspec

from memlog import __version__
from memlog.embeddings.base import TaskType
from memlog.embeddings.transport import (
    CallPolicy,
    ErrorInfo,
    HttpEmbeddingProvider,
    decode_or_none,
    google_duration,
    one_line,
)
from memlog.errors import ProviderError, ProviderUnavailable
from memlog.untrusted import shown

# -- Gemini -------------------------------------------------------------------


class _Part(msgspec.Struct):
    text: str


class _Content(msgspec.Struct):
    parts: list[_Part]


class _GeminiRequest(msgspec.Struct, rename="camel", omit_defaults=True):
    model: str
    content: _Content
    task_type: str
    output_dimensionality: int | None = None


class _GeminiBatch(msgspec.Struct):
    requests: list[_GeminiRequest]


class _Values(msgspec.Struct):
    values: list[float]


class _GeminiAnswer(msgspec.Struct):
    embeddings: list[_Values]


class _Violation(msgspec.Struct, rename="camel"):
    quota_id: str = ""
    quota_value: str = ""


class _Detail(msgspec.Struct, rename="camel"):
    violations: list[_Violation] = []
    retry_delay: str = ""
    reason: str = ""


class _GoogleError(msgspec.Struct):
    message: str = ""
    status: str = ""
    details: list[_Detail] = []


class _GoogleErrorBody(msgspec.Struct):
    error: _GoogleError


_GEMINI_TASKS: dict[TaskType, str] = {
    "document": "RETRIEVAL_DOCUMENT",
    "query": "RETRIEVAL_QUERY",
}


def _spent_quota(violation: _Violation) -> bool:
    return "PerDay" in violation.quota_id or violation.quota_value == "0"


def _google_error_info(error: _GoogleError) -> ErrorInfo:
    violations = [v for detail in error.details for v in detail.violations]
    delays = [google_duration(d.retry_delay) for d in error.details if d.retry_delay]
    return ErrorInfo(
        message=one_line(error.message or error.status),
        quota=any(_spent_quota(v) for v in violations),
        retry_after=next((d for d in delays if d is not None), None),
        key_refused=any(d.reason == "API_KEY_INVALID" for d in error.details),
    )


class GeminiProvider(HttpEmbeddingProvider):
    """Google's Gemini embedding API (``gemini-embedding-001``, 768 of its 3072 dims)."""

    name = "gemini"
    batch_size = 100
    key_env = "GEMINI_API_KEY"
    default_base_url = "https://generativelanguage.googleapis.com"
    default_model = "gemini-embedding-001"
    default_dimensions = 768

    def _request(self, texts: Sequence[str], task: TaskType) -> tuple[str, msgspec.Struct]:
        model = self.model.removeprefix("models/")
        requests = [
            _GeminiRequest(
                model=f"models/{model}",
                content=_Content([_Part(text)]),
                task_type=_GEMINI_TASKS[task],
                output_dimensionality=self.dimensions,
            )
            for text in texts
        ]
        return f"/v1beta/models/{model}:batchEmbedContents", _GeminiBatch(requests)

    def _vectors(self, content: bytes) -> list[list[float]]:
        return [e.values for e in self._decode(content, _GeminiAnswer).embeddings]

    def _auth_headers(self) -> dict[str, str]:
        return {"x-goog-api-key": self._key}

    def _said(self, content: bytes) -> ErrorInfo | None:
        body = decode_or_none(content, _GoogleErrorBody)
        return None if body is None else _google_error_info(body.error)


# -- OpenAI and Voyage (the same answer shape) ---------------------------------


class _Embedding(msgspec.Struct):
    index: int
    embedding: list[float]


class _EmbeddingList(msgspec.Struct):
    data: list[_Embedding]


class _OpenAIRequest(msgspec.Struct, omit_defaults=True):
    model: str
    input: list[str]
    encoding_format: Literal["float"]
    dimensions: int | None = None


class _OpenAIError(msgspec.Struct):
    message: str = ""
    type: str | None = None
    code: str | int | None = None


class _OpenAIErrorBody(msgspec.Struct):
    error: _OpenAIError


class _VoyageRequest(msgspec.Struct, omit_defaults=True):
    model: str
    input: list[str]
    input_type: Literal["query", "document"]
    output_dimension: int | None = None


class _DetailBody(msgspec.Struct):
    detail: str


#: Voyage models that take ``output_dimension``; the others have one size
_VOYAGE_FLEXIBLE = ("voyage-4", "voyage-3.5", "voyage-3-large", "voyage-code-3")


class _ListProvider(HttpEmbeddingProvider):
    """An API answering ``{"data": [{"index", "embedding"}]}``."""

    def _vectors(self, content: bytes) -> list[list[float]]:
        data = sorted(self._decode(content, _EmbeddingList).data, key=lambda e: e.index)
        if [e.index for e in data] != list(range(len(data))):
            raise ProviderError(f"{self.name}: answer indexes are not 0..{len(data) - 1}")
        return [e.embedding for e in data]


class OpenAIProvider(_ListProvider):
    """OpenAI's embeddings API (``text-embedding-3-small``, 1536 dims by default)."""

    name = "openai"
    batch_size = 512
    key_env = "OPENAI_API_KEY"
    default_base_url = "https://api.openai.com"
    default_model = "text-embedding-3-small"
    default_dimensions = 1536

    def _request(self, texts: Sequence[str], task: TaskType) -> tuple[str, msgspec.Struct]:
        sized = self.model.startswith("text-embedding-3")
        request = _OpenAIRequest(
            model=self.model,
            input=list(texts),
            encoding_format="float",
            dimensions=self.dimensions if sized else None,
        )
        return "/v1/embeddings", request

    def _said(self, content: bytes) -> ErrorInfo | None:
        body = decode_or_none(content, _OpenAIErrorBody)
        if body is None:
            return None
        spent = "insufficient_quota" in (body.error.code, body.error.type)
        return ErrorInfo(one_line(body.error.message), quota=spent)


class VoyageProvider(_ListProvider):
    """Voyage AI's embeddings API (``voyage-code-3``, 1024 dims by default)."""

    name = "voyage"
    batch_size = 128
    key_env = "VOYAGE_API_KEY"
    default_base_url = "https://api.voyageai.com"
    default_model = "voyage-code-3"
    default_dimensions = 1024

    def _request(self, texts: Sequence[str], task: TaskType) -> tuple[str, msgspec.Struct]:
        sized = self.model.startswith(_VOYAGE_FLEXIBLE)
        request = _VoyageRequest(
            model=self.model,
            input=list(texts),
            input_type=task,
            output_dimension=self.dimensions if sized else None,
        )
        return "/v1/embeddings", request

    def _said(self, content: bytes) -> ErrorInfo | None:
        body = decode_or_none(content, _DetailBody)
        return None if body is None else ErrorInfo(one_line(body.detail))


# -- Ollama ----------------------------------------------------------------------


class _OllamaRequest(msgspec.Struct, omit_defaults=True):
    model: str
    input: list[str]
    dimensions: int | None = None


class _OllamaAnswer(msgspec.Struct):
    embeddings: list[list[float]]


class _OllamaErrorBody(msgspec.Struct):
    error: str


_NOMIC_PREFIXES: dict[TaskType, str] = {
    "query": "search_query: ",
    "document": "search_document: ",
}


class OllamaProvider(HttpEmbeddingProvider):
    """A local or self-hosted Ollama server (``nomic-embed-text``, 768 dims)."""

    name = "ollama"
    batch_size = 64
    default_base_url = "http://localhost:11434"
    default_model = "nomic-embed-text"
    default_dimensions = 768

    def _request(self, texts: Sequence[str], task: TaskType) -> tuple[str, msgspec.Struct]:
        request = _OllamaRequest(
            model=self.model,
            input=self._prefixed(texts, task),
            dimensions=self.dimensions if self.dimensions_chosen else None,
        )
        return "/api/embed", request

    def _vectors(self, content: bytes) -> list[list[float]]:
        return self._decode(content, _OllamaAnswer).embeddings

    def _prefixed(self, texts: Sequence[str], task: TaskType) -> list[str]:
        if not self.model.rsplit("/", 1)[-1].startswith("nomic-embed-text"):
            return list(texts)
        return [_NOMIC_PREFIXES[task] + text for text in texts]

    def _said(self, content: bytes) -> ErrorInfo | None:
        body = decode_or_none(content, _OllamaErrorBody)
        return None if body is None else ErrorInfo(one_line(body.error))


# -- by name ---------------------------------------------------------------------

PROVIDERS: dict[str, type[HttpEmbeddingProvider]] = {
    kind.name: kind for kind in (GeminiProvider, OpenAIProvider, VoyageProvider, OllamaProvider)
}


def make_provider(
    name: str,
    model: str | None = None,
    dimensions: int | None = None,
    base_url: str | None = None,
    client: httpx.Client | None = None,
    env: Mapping[str, str] = os.environ,
    policy: CallPolicy | None = None,
) -> HttpEmbeddingProvider:
    """The provider called ``name``, on ``client`` or on a new client it will own."""
    kind = PROVIDERS.get(name)
    if kind is None:
        known = ", ".join(PROVIDERS)
        raise ProviderUnavailable(f"unknown embedding provider {shown(name)} (HTTP ones: {known})")
    owned = client is None
    http = client or httpx.Client(headers={"User-Agent": f"memlog/{__version__}"})
    try:
        return kind(
            http,
            model=model,
            dimensions=dimensions,
            base_url=base_url,
            env=env,
            policy=policy,
            owns_client=owned,
        )
    except BaseException:
        if owned:
            http.close()
        raise
