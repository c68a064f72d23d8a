"""One POST of JSON to a model's HTTP API, its failures named the way the chain reads them:
a refused connection is ``ProviderUnavailable`` (nobody there), a timeout or a broken
connection is ``ProviderError``."""

from __future__ import annotations

from typing import Any

import httpx

from memlog.embeddings.transport import one_line
from memlog.errors import ProviderError, ProviderUnavailable


def post(
    client: httpx.Client,
    name: str,
    url: str,
    body: dict[str, Any],
    timeout: float,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    """POST ``body`` as JSON to ``url``; the response, whatever its status."""
    try:
        return client.post(url, json=body, headers=headers, timeout=timeout)
    except httpx.ConnectError as exc:
        where = url.split("/v1/")[0].split("/api/")[0]
        why = one_line(str(exc))
        raise ProviderUnavailable(f"{name}: cannot connect to {where}: {why}") from None
    except httpx.TimeoutException:
        raise ProviderError(f"{name}: no answer within {timeout:.0f} s") from None
    except httpx.TransportError as exc:
        raise ProviderError(f"{name}: connection failed: {one_line(str(exc))}") from None
