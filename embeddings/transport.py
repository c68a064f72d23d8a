"""What every remote embedding provider shares: key, deadline, retries, answers.

``HttpEmbeddingProvider`` holds an injected ``httpx.Client``, a base URL, the
key read from the environment (``ProviderUnavailable`` when it is missing)
and a ``CallPolicy``.  Its ``_embed_batch`` posts the request a subclass in
``embeddings.http`` builds (``_request``) and checks the vectors the subclass
reads from the answer (``_vectors``); this module decides what an answer means.

Deadline.  ``deadline`` is an absolute ``time.monotonic()`` value or
``None``.  ``with_deadline(d)`` returns a shallow copy bound to ``d``, so a
shared provider is never mutated and one search cannot shorten another.
With a deadline, every attempt's httpx timeout (connect, write, pool and
each read) is ``min(policy.timeout, time left)``; httpx bounds each network
operation, not the exchange, so the answer is streamed and the clock is
checked after every chunk, cutting off a server that trickles bytes.  No
wait between attempts may end at or after the deadline.  Running out of
time raises ``ProviderError`` naming the deadline; a rate limit met under
it stays a ``RateLimited``, whose message then names the deadline.

Retries.  A ``document`` call (write time) uses ``policy.write``; a
``query`` call uses the shorter ``policy.query`` (defaults: 5 attempts,
waits from 1 s doubling up to 60 s, for writes; 2 attempts and at most 1 s
for queries; 30 s per attempt).  408, 429, 5xx, timeouts and dropped
connections are retried; the wait is the server's ``Retry-After``
(seconds or HTTP date), else the provider's own hint (Gemini's
``retryDelay``), else exponential backoff from ``first_delay``, without
jitter: one user's process does not stampede.  A wait above ``max_delay``
is not taken: the call gives up at once.  Giving up raises ``RateLimited``
(``retry_after`` set) after a 429 and ``ProviderError`` otherwise.  An
exhausted quota (HTTP 402, or a 429 the provider marks as quota) raises
``RateLimited(quota=True)`` without retrying; 401/403 and 404 raise
``ProviderUnavailable`` (refused key, unknown model or wrong base URL), as
does a refused connection; any other 4xx is a ``ProviderError``.
"""

from __future__ import annotations

import abc
import copy
import email.utils
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC
from typing import ClassVar, Self, TypeVar

import httpx
import msgspec

from memlog.embeddings.base import EmbeddingProvider, TaskType
from memlog.errors import InvalidInput, ProviderError, ProviderUnavailable, RateLimited

T = TypeVar("T")

_ENCODER = msgspec.json.Encoder()
_SECONDS = re.compile(r"\d+(?:\.\d+)?")
_MESSAGE_CHARS = 300


@dataclass(frozen=True)
class RetryPolicy:
    """How many attempts one call makes and how long it may wait between them."""

    attempts: int
    first_delay: float
    max_delay: float

    def backoff(self, attempt: int) -> float:
        """The wait after failed attempt ``attempt`` (1-based) when the server gave none."""
        return min(self.max_delay, self.first_delay * 2.0 ** (attempt - 1))


@dataclass(frozen=True)
class CallPolicy:
    """Retry policies, per-attempt timeout and the clock; tests inject ``sleep``."""

    write: RetryPolicy = field(default_factory=lambda: RetryPolicy(5, 1.0, 60.0))
    query: RetryPolicy = field(default_factory=lambda: RetryPolicy(2, 0.2, 1.0))
    timeout: float = 30.0
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic


@dataclass(frozen=True)
class ErrorInfo:
    """What a provider's error body says: a message, and whether a quota is spent."""

    message: str
    quota: bool = False
    retry_after: float | None = None
    #: the key was refused, whatever the status says (Gemini answers 400)
    key_refused: bool = False


@dataclass(frozen=True)
class _Failure:
    """A failed attempt that may be retried."""

    what: str
    rate_limited: bool = False
    hint: float | None = None

    def error(self, name: str, why: str) -> ProviderError:
        text = f"{name}: {self.what}; {why}"
        if self.rate_limited:
            return RateLimited(text, retry_after=self.hint)
        return ProviderError(text)


def one_line(text: str) -> str:
    """``text`` with its whitespace folded, cut to a length fit for one line."""
    folded = " ".join(text.split())
    if len(folded) <= _MESSAGE_CHARS:
        return folded
    return folded[: _MESSAGE_CHARS - 3] + "..."


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: delay-seconds or an HTTP date."""
    if value is None or not value.strip():
        return None
    value = value.strip()
    if _SECONDS.fullmatch(value):
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


def google_duration(value: str) -> float | None:
    """Seconds in a protobuf duration such as ``"37s"`` or ``"0.5s"``."""
    if value.endswith("s") and _SECONDS.fullmatch(value[:-1]):
        return float(value[:-1])
    return None


def decode_or_none(content: bytes, kind: type[T]) -> T | None:
    """``content`` decoded as ``kind``, or ``None`` when it is not that shape."""
    try:
        return msgspec.json.decode(content, type=kind)
    except (msgspec.DecodeError, UnicodeDecodeError):
        return None


def _tries(count: int) -> str:
    return f"{count} {'try' if count == 1 else 'tries'}"


class HttpEmbeddingProvider(EmbeddingProvider):
    """An embedding API reached over HTTP through an injected ``httpx.Client``."""

    #: environment variable holding the API key; ``None`` when no key is needed
    key_env: ClassVar[str | None] = None
    default_base_url: ClassVar[str]
    default_model: ClassVar[str]
    default_dimensions: ClassVar[int]

    def __init__(
        self,
        client: httpx.Client,
        *,
        model: str | None = None,
        dimensions: int | None = None,
        base_url: str | None = None,
        env: Mapping[str, str] = os.environ,
        policy: CallPolicy | None = None,
        deadline: float | None = None,
        owns_client: bool = False,
    ) -> None:
        if dimensions is not None and dimensions <= 0:
            raise InvalidInput(f"{self.name}: dimensions must be positive, got {dimensions}")
        super().__init__(model or self.default_model, dimensions or self.default_dimensions)
        self.client = client
        self.base_url = (base_url or self.default_base_url).rstrip("/")
        self.policy = policy or CallPolicy()
        self.deadline = deadline
        #: whether the caller chose the dimensions (some APIs then get asked for them)
        self.dimensions_chosen = dimensions is not None
        self._key = self._read_key(env)
        self._owns_client = owns_client

    def _read_key(self, env: Mapping[str, str]) -> str:
        if self.key_env is None:
            return ""
        key = env.get(self.key_env, "").strip()
        if not key:
            raise ProviderUnavailable(f"{self.name}: set {self.key_env} to use this provider")
        return key

    def with_deadline(self, deadline: float | None) -> Self:
        """A copy of this provider whose calls end by ``deadline`` (``time.monotonic()``)."""
        bound = copy.copy(self)
        bound.deadline = deadline
        bound._owns_client = False
        return bound

    def close(self) -> None:
        """Close the HTTP client if this provider created it."""
        if self._owns_client:
            self.client.close()

    def _embed_batch(self, texts: Sequence[str], task: TaskType) -> Sequence[Sequence[float]]:
        path, request = self._request(texts, task)
        return self._rows(texts, self._vectors(self._call(path, request, task)))

    # -- what subclasses say ---------------------------------------------------

    @abc.abstractmethod
    def _request(self, texts: Sequence[str], task: TaskType) -> tuple[str, msgspec.Struct]:
        """The path to post to and the body asking for the vectors of ``texts``."""

    @abc.abstractmethod
    def _vectors(self, content: bytes) -> list[list[float]]:
        """The vectors in the body of an answer, in the order of the texts asked about."""

    def _said(self, content: bytes) -> ErrorInfo | None:
        """What an error body in the provider's own shape says (None: not that shape)."""
        return None

    # -- what subclasses use -------------------------------------------------

    def _auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._key}"} if self._key else {}

    def _read_error(self, content: bytes) -> ErrorInfo:
        """The message (and quota flag) in an error body: what the provider's shape of it
        says, else the body itself."""
        return self._said(content) or ErrorInfo(one_line(content.decode("utf-8", "replace")))

    def _decode(self, content: bytes, kind: type[T]) -> T:
        try:
            return msgspec.json.decode(content, type=kind)
        except (msgspec.DecodeError, UnicodeDecodeError) as exc:
            raise ProviderError(f"{self.name}: malformed answer: {exc}") from None

    def _rows(self, texts: Sequence[str], rows: list[list[float]]) -> list[list[float]]:
        """``rows`` once there is one per text, each of ``dimensions`` floats."""
        if len(rows) != len(texts):
            raise ProviderError(
                f"{self.name}/{self.model}: {len(rows)} vectors for {len(texts)} texts"
            )
        for number, row in enumerate(rows):
            if len(row) != self.dimensions:
                raise ProviderError(
                    f"{self.name}/{self.model}: vector {number} has {len(row)} dimensions, "
                    f"expected {self.dimensions}"
                )
        return rows

    def _call(self, path: str, request: msgspec.Struct, task: TaskType) -> bytes:
        """POST ``request`` as JSON to ``path``; the body of the 200 answer."""
        url = self._url(path)
        body = _ENCODER.encode(request)
        policy = self.policy.query if task == "query" else self.policy.write
        attempt = 1
        while True:
            outcome = self._attempt(url, body)
            if isinstance(outcome, bytes):
                return outcome
            if attempt >= policy.attempts:
                raise outcome.error(self.name, f"gave up after {_tries(attempt)}")
            self._wait(outcome, policy, attempt)
            attempt += 1

    # -- one attempt -----------------------------------------------------------

    def _url(self, path: str) -> str:
        if self.base_url.endswith("/v1") and path.startswith("/v1/"):
            path = path[3:]
        return self.base_url + path

    def _remaining(self) -> float | None:
        return None if self.deadline is None else self.deadline - self.policy.clock()

    def _deadline_error(self) -> ProviderError:
        return ProviderError(f"{self.name}: the deadline passed before {self.model} answered")

    def _time_limit(self) -> tuple[float, bool]:
        """This attempt's timeout, and whether the deadline (not the policy) set it."""
        remaining = self._remaining()
        if remaining is None or remaining >= self.policy.timeout:
            return self.policy.timeout, False
        if remaining <= 0:
            raise self._deadline_error()
        return remaining, True

    def _attempt(self, url: str, body: bytes) -> bytes | _Failure:
        timeout, by_deadline = self._time_limit()
        try:
            status, headers, content = self._exchange(url, body, timeout)
        except httpx.TimeoutException:
            if by_deadline:
                raise self._deadline_error() from None
            return _Failure(f"no answer within {timeout:g} s")
        except httpx.ConnectError as exc:
            raise ProviderUnavailable(
                f"{self.name}: cannot connect to {self.base_url}: {one_line(str(exc))}"
            ) from None
        except httpx.TransportError as exc:
            return _Failure(f"connection failed: {one_line(str(exc)) or type(exc).__name__}")
        if status == 200:
            return content
        return self._refusal(status, headers, content)

    def _exchange(self, url: str, body: bytes, timeout: float) -> tuple[int, httpx.Headers, bytes]:
        headers = {"Content-Type": "application/json", **self._auth_headers()}
        with self.client.stream(
            "POST", url, content=body, headers=headers, timeout=timeout
        ) as response:
            chunks = []
            for chunk in response.iter_bytes():
                remaining = self._remaining()
                if remaining is not None and remaining <= 0:
                    raise self._deadline_error()
                chunks.append(chunk)
            return response.status_code, response.headers, b"".join(chunks)

    def _refusal(self, status: int, headers: httpx.Headers, content: bytes) -> _Failure:
        """The retryable failure a non-200 answer is, or raise the error it means."""
        info = self._read_error(content)
        said = f"({status}): {info.message}" if info.message else f"({status})"
        retryable = status in (408, 429) or status >= 500
        if not retryable or info.quota or info.key_refused:
            raise self._refusal_error(status, info, said)
        hint = retry_after_seconds(headers.get("Retry-After"))
        hint = info.retry_after if hint is None else hint
        if status == 429:
            return _Failure(f"rate limited {said}", rate_limited=True, hint=hint)
        return _Failure(f"server error {said}", hint=hint)

    def _refusal_error(self, status: int, info: ErrorInfo, said: str) -> ProviderError:
        if status in (401, 403) or info.key_refused:
            whose = f"the key in {self.key_env}" if self.key_env else "access"
            return ProviderUnavailable(f"{self.name}: {whose} was refused {said}")
        if status == 402 or info.quota:
            return RateLimited(f"{self.name}: quota exhausted {said}", quota=True)
        if status == 404:
            return ProviderUnavailable(
                f"{self.name}: {self.model} not found at {self.base_url} {said}"
            )
        return ProviderError(f"{self.name}: request refused {said}")

    def _wait(self, failure: _Failure, policy: RetryPolicy, attempt: int) -> None:
        """Sleep before the next attempt, or raise if that wait is not allowed."""
        delay = failure.hint if failure.hint is not None else policy.backoff(attempt)
        remaining = self._remaining()
        if remaining is not None and delay >= remaining:
            raise failure.error(self.name, f"waiting {delay:g} s would pass the deadline")
        if delay > policy.max_delay:
            raise failure.error(
                self.name,
                f"asked to wait {delay:g} s, more than the {policy.max_delay:g} s allowed",
            )
        self.policy.sleep(delay)
