"""Serving the page on 127.0.0.1 until interrupted."""

from __future__ import annotations

import secrets
import signal
import socket
import tempfile
from collections.abc import Callable
from pathlib import Path

import uvicorn

from memlog.api.browsing import unregister
from memlog.errors import MemlogError
from memlog.ui.app import create_app
from memlog.workspace import Workspace

HOST = "127.0.0.1"


class ServeError(MemlogError):
    """The page cannot be served (the port is taken, …)."""


def listen(port: int) -> socket.socket:
    """A socket bound to 127.0.0.1 only (``port`` 0: any free port)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind((HOST, port))
    except OSError as exc:
        sock.close()
        raise ServeError(f"cannot listen on {HOST}:{port}: {exc.strerror or exc}") from None
    sock.listen(64)
    return sock


def serve(ws: Workspace, port: int, announce: Callable[[str], None]) -> None:
    """Serve the page for ``ws``; ``announce`` gets its address (with the token) once bound.

    The snapshots of the past live in a temporary folder removed when the page stops, on
    SIGTERM as on Ctrl-C: uvicorn shuts down gracefully on either, then raises the signal
    again, and SIGTERM's default would end the process before the folder is removed.
    """
    sock = listen(port)
    bound = sock.getsockname()[1]
    token = secrets.token_urlsafe(24)
    before = signal.signal(signal.SIGTERM, _stop)
    try:
        with tempfile.TemporaryDirectory(prefix="memlog-ui-") as snapshots:
            app = create_app(ws, token, bound, Path(snapshots))
            config = uvicorn.Config(
                app, log_level="warning", access_log=False, lifespan="off", server_header=False
            )
            announce(f"http://{HOST}:{bound}/?token={token}")
            try:
                uvicorn.Server(config).run(sockets=[sock])
            finally:
                unregister(ws.home)
    finally:
        signal.signal(signal.SIGTERM, before)


def _stop(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)
