"""The page's door: only its own address, only with its token, only to read.

Every request must

* name this server in its ``Host`` header (``127.0.0.1:PORT`` or
  ``localhost:PORT``): a page elsewhere that rebinds its DNS name to
  127.0.0.1 still sends its own name, and is refused;
* carry the token, in the URL (``?token=…``, which sets a cookie and
  redirects to the same page without it) or in that cookie, which is
  ``SameSite=Strict``: a link or form on another site arrives without it;
* come from no other origin (an ``Origin`` header must be this server's,
  ``Sec-Fetch-Site: cross-site`` is refused) and use ``GET`` or ``HEAD``:
  the page is read-only, a later write action would need the token and a
  ``POST``.

Every answer forbids scripts, framing and referrers, and is never cached.
No CORS header is ever sent.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

READ_METHODS = ("GET", "HEAD")
SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
        b"frame-ancestors 'none'; base-uri 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]


class Guard:
    """ASGI middleware that lets through only requests for this server, with its token."""

    def __init__(self, app: App, token: str, port: int) -> None:
        self.app = app
        self.token = token
        self.port = port
        self.hosts = {f"127.0.0.1:{port}", f"localhost:{port}"}
        self.origins = {f"http://{host}" for host in self.hosts}
        self.cookie = f"memlog_ui_{port}"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        refusal = self.refusal(scope, headers)
        if refusal is not None:
            await _answer(send, *refusal)
            return
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        if any(k == "token" for k, _ in query):
            await self._welcome(scope, send, query)
            return
        await self.app(scope, receive, _secured(send))

    def refusal(self, scope: Scope, headers: dict[str, str]) -> tuple[int, str, list[Any]] | None:
        """Why the request is refused (status, text, extra headers), or None."""
        if headers.get("host", "") not in self.hosts:
            return 403, "refused: this page answers only to its own address", []
        origin = headers.get("origin")
        if (origin is not None and origin not in self.origins) or headers.get(
            "sec-fetch-site"
        ) == "cross-site":
            return 403, "refused: no access from other sites", []
        if scope["method"] not in READ_METHODS:
            return 405, "refused: this page is read-only", [(b"allow", b"GET, HEAD")]
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"))
        given = dict(query).get("token") or _cookie(headers.get("cookie", ""), self.cookie)
        if not given or not hmac.compare_digest(given.encode(), self.token.encode()):
            return 403, "refused: open the address memlog ui printed (it holds the token)", []
        return None

    async def _welcome(self, scope: Scope, send: Send, query: list[tuple[str, str]]) -> None:
        """Keep the token in a cookie and show the same page without it in the address."""
        rest = urlencode([(k, v) for k, v in query if k != "token"])
        location = same_origin(scope["path"]) + (f"?{rest}" if rest else "")
        cookie = f"{self.cookie}={self.token}; Path=/; HttpOnly; SameSite=Strict"
        extra = [(b"location", location.encode()), (b"set-cookie", cookie.encode())]
        await _answer(send, 303, "see the page", extra)


def same_origin(path: str) -> str:
    """``path`` as a redirect that stays on this server: one leading slash (``//evil.example/``
    and ``/\\evil.example`` name another host to a browser), everything else escaped (no
    line break ends the header, no scheme starts another URL)."""
    return quote("/" + path.lstrip("/\\"), safe="/:@!$&'()*+,;=-._~")


def _cookie(header: str, name: str) -> str:
    for part in header.split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return ""


def _secured(send: Send) -> Send:
    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
        await send(message)

    return wrapped


async def _answer(send: Send, status: int, text: str, extra: list[Any]) -> None:
    body = (text + "\n").encode()
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
        *extra,
        *SECURITY_HEADERS,
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
