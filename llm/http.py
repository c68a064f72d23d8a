"""One POST to a model's HTTP API within a deadline, its failures named the way the chains
read them: a refused connection is ``ProviderUnavailable`` (nobody there), a timeout or a
broken connection is ``ProviderError``.

Every network operation is bounded by ``timeout`` and the answer is streamed with the
clock checked after every chunk, so a server that trickles bytes is cut off too: the
whole exchange ends within ``timeout`` seconds.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import httpx
import msgspec

from memlog import __version__
from memlog.embeddings.transport import one_line
from memlog.errors import ProviderError, ProviderUnavailable


def make_client() -> httpx.Client:
    """A client for the models' APIs; whoever makes it closes it."""
    return httpx.Client(headers={"User-Agent": f"memlog/{__version__}"})


class Reply(NamedTuple):
    status: int
    headers: httpx.Headers
    content: bytes


def exchange(
    client: httpx.Client,
    name: str,
    url: str,
    body: bytes,
    timeout: float,
    headers: Mapping[str, str] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Reply:
    """POST ``body`` (JSON) to ``url``; the reply, whatever its status."""
    deadline = clock() + timeout
    sent = {"content-type": "application/json", **(headers or {})}
    try:
        with client.stream("POST", url, content=body, headers=sent, timeout=timeout) as response:
            chunks = []
            for chunk in response.iter_bytes():
                if clock() > deadline:
                    raise httpx.ReadTimeout("the answer trickled past the deadline")
                chunks.append(chunk)
            return Reply(response.status_code, response.headers, b"".join(chunks))
    except httpx.TimeoutException:
        raise ProviderError(f"{name}: no answer within {timeout:g} s") from None
    except httpx.ConnectError as exc:
        where = url.split("/v1/")[0].split("/api/")[0]
        raise ProviderUnavailable(
            f"{name}: cannot connect to {where}: {one_line(str(exc))}"
        ) from None
    except httpx.TransportError as exc:
        why = one_line(str(exc)) or type(exc).__name__
        raise ProviderError(f"{name}: connection failed: {why}") from None


def post(
    client: httpx.Client,
    name: str,
    url: str,
    body: dict[str, Any],
    timeout: float,
    headers: Mapping[str, str] | None = None,
) -> Reply:
    """``exchange`` with ``body`` encoded as JSON."""
    return exchange(client, name, url, msgspec.json.encode(body), timeout, headers)
