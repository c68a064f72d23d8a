"""Serving the page on 127.0.0.1 until interrupted."""

from __future__ import annotations

import secrets
import socket
import tempfile
from collections.abc import Callable
from pathlib import Path

import uvicorn

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
    """Serve the page for ``ws``; ``announce`` gets its address (with the token) once bound."""
    sock = listen(port)
    bound = sock.getsockname()[1]
    token = secrets.token_urlsafe(24)
    with tempfile.TemporaryDirectory(prefix="memlog-ui-") as snapshots:
        app = create_app(ws, token, bound, Path(snapshots))
        config = uvicorn.Config(
            app, log_level="warning", access_log=False, lifespan="off", server_header=False
        )
        announce(f"http://{HOST}:{bound}/?token={token}")
        uvicorn.Server(config).run(sockets=[sock])
