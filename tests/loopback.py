"""A real HTTP server on 127.0.0.1 for tests of memlog's HTTP peers.

``LoopbackServer(handler)`` listens on an ephemeral port in a thread and
answers every request with ``handler(method, path, headers, body)``, which
returns ``(status, headers, body)``.  It records every request it received
and can hold each answer back for ``delay`` seconds (stopping the server
cuts the wait short).  Use it as a context manager::

    with LoopbackServer(lambda *_: (200, {}, b"{}")) as server:
        httpx.post(server.url + "/x", content=b"hi")
        assert server.requests[0].body == b"hi"
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = tuple[int, Mapping[str, str], bytes]
Handler = Callable[[str, str, Mapping[str, str], bytes], Answer]


@dataclass(frozen=True)
class Received:
    """One request as the server saw it; header names are lower-cased."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class LoopbackServer:
    """A threaded HTTP/1.1 server on 127.0.0.1 answering with ``handler``."""

    def __init__(self, handler: Handler, delay: float = 0.0) -> None:
        self.handler = handler
        self.delay = delay
        self.requests: list[Received] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._request_class())
        self._server.daemon_threads = True
        self._server.block_on_close = False
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.01,), daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> LoopbackServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def answer(self, received: Received) -> Answer:
        """Record ``received``, wait ``delay`` (unless stopping), ask the handler."""
        with self._lock:
            self.requests.append(received)
        if self.delay:
            self._stopping.wait(self.delay)
        return self.handler(received.method, received.path, received.headers, received.body)

    def _request_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Request(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                # headers and body go out in two writes: without this, Nagle's
                # algorithm and delayed ACKs add 40 ms to every answer
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def do_POST(self) -> None:
                self._serve()

            def do_GET(self) -> None:
                self._serve()

            def do_HEAD(self) -> None:
                self._serve()

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                headers = {k.lower(): v for k, v in self.headers.items()}
                received = Received(self.command, self.path, headers, self.rfile.read(length))
                status, extra, body = server.answer(received)
                try:
                    self._send(status, extra, body)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True  # the client gave up waiting

            def _send(self, status: int, extra: Mapping[str, str], body: bytes) -> None:
                self.send_response(status)
                if not any(name.lower() == "content-type" for name in extra):
                    self.send_header("Content-Type", "application/json")
                for name, value in extra.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Request
