"""``memlog serve-mcp``: the memory tools over MCP's stdio transport.

A small server of memlog's own, not the ``mcp`` SDK: importing the SDK took
1.6-2.3 s, and Claude Code starts a session's first turn without the tools
of a server that has not answered by then.  This one answers ``initialize``
after loading msgspec alone; the workspace, an iflow store waiting to be
adopted and the modules the tools need are loaded in a thread once that
answer is out.

MCP methods: ``initialize`` (protocol versions 2025-11-25, 2025-06-18,
2025-03-26 and 2024-11-05: the client's when it is one of them, else the
newest), ``ping``, ``tools/list`` and ``tools/call``; the client's
notifications (``notifications/initialized``, ``notifications/cancelled``)
need no answer.  Any other method is ``-32601``, an unknown tool ``-32602``.
Arguments a tool refuses (schema, size, memlog's own checks) are a tool
error, one line with ``isError``, and a crash is kept in ``errors.log`` and
reported as one line: the server keeps serving whatever a message holds.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import IO, TYPE_CHECKING, Any

from memlog import __version__
from memlog.errors import describe
from memlog.mcp_server import catalog, protocol
from memlog.mcp_server.protocol import Refused, Request
from memlog.mcp_server.results import as_data

if TYPE_CHECKING:
    from memlog.workspace import Workspace

VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
#: how long the end of input waits for the loading thread (an adoption) to finish
SETTLE_SECONDS = 30.0
INSTRUCTIONS = (
    "memlog is a persistent engineering memory shared across projects. Call store_memory "
    "when you learn something worth keeping (a pattern to follow, an anti-pattern to avoid, "
    "a heuristic), search_memory to recall what is known about a topic, and list_memories "
    "to browse. Stored memories are injected at the start of later work; when one you were "
    "given helped, or turned out wrong here, say so with record_influence."
)


class Backend:
    """The workspace and the tools' modules, loaded in a thread once asked for."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self.ws: Workspace | None = None
        self.tools: ModuleType | None = None
        self.failure: BaseException | None = None
        self.thread = threading.Thread(target=self._load, name="memlog-mcp-load", daemon=True)

    def start(self) -> None:
        if self.thread.ident is None:
            self.thread.start()

    def ready(self) -> tuple[Workspace, ModuleType]:
        self.start()
        self.thread.join()
        if self.failure is not None:
            raise self.failure
        assert self.ws is not None and self.tools is not None
        return self.ws, self.tools

    def _load(self) -> None:
        try:
            from memlog.api.adoption import adopt
            from memlog.mcp_server import tools
            from memlog.workspace import Workspace

            self.ws = Workspace.open(self.cwd)
            adopted = adopt(self.ws, settle=False)
            for line in [*adopted.notes, adopted.line] if adopted is not None else []:
                print(f"memlog: {line}", file=sys.stderr)
            self.tools = tools
        except BaseException as exc:  # noqa: BLE001 - reported at the first tool call
            self.failure = exc


class Server:
    """What each request gets; one instance per connection."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.version = VERSIONS[0]
        #: whether ``initialize`` was answered: loading starts once the answer is out
        self.initialized = False
        self.methods: dict[str, Callable[[dict[str, Any]], Any]] = {
            "initialize": self.initialize,
            "ping": lambda params: {},
            "tools/list": self.list_tools,
            "tools/call": self.call_tool,
        }

    def receive(self, line: bytes | protocol.TooLarge) -> bytes | None:
        """The answer to one line, if it gets one."""
        request: Request | None = None
        try:
            if isinstance(line, protocol.TooLarge):
                raise protocol.too_large(line.size)
            if not line.strip():
                return None
            request = protocol.parse(line)
            if request is None:
                return None
            answer = self.answer(request)
        except Refused as refused:
            return protocol.error(refused)
        except Exception as exc:  # noqa: BLE001 - a message never ends the server
            known = request.id if request is not None else None
            message = f"Internal error: {_described(exc, self.backend.ws)}"
            return protocol.error(Refused(protocol.INTERNAL_ERROR, message, known))
        return None if request.id is None else protocol.result(request.id, answer)

    def answer(self, request: Request) -> Any:
        handler = self.methods.get(request.method)
        if request.id is None:  # a notification: nothing is answered, whatever it says
            return None
        if handler is None:
            message = f"Method not found: {request.method}"
            raise Refused(protocol.METHOD_NOT_FOUND, message, request.id)
        try:
            return handler(request.params)
        except Refused as refused:
            refused.id = request.id
            raise

    def initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        asked = params.get("protocolVersion")
        self.version = asked if asked in VERSIONS else VERSIONS[0]
        self.initialized = True
        info = {"name": "memlog", "title": "memlog", "version": __version__}
        return {
            "protocolVersion": self.version,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": info,
            "instructions": INSTRUCTIONS,
        }

    def list_tools(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"tools": [tool.listing(self.version) for tool in catalog.TOOLS.values()]}

    def call_tool(self, params: dict[str, Any]) -> dict[str, Any]:
        name, arguments = params.get("name"), params.get("arguments", {})
        if not isinstance(name, str):
            raise Refused(protocol.INVALID_PARAMS, "Invalid params: name must be a string")
        tool = catalog.TOOLS.get(name)
        if tool is None:
            raise Refused(protocol.INVALID_PARAMS, f"Unknown tool: {name}")
        if not isinstance(arguments, dict):
            raise Refused(protocol.INVALID_PARAMS, "Invalid params: arguments must be an object")
        try:
            outcome = as_data(self._healing(tool, catalog.check(tool, arguments)))
        except catalog.Invalid as exc:
            return self._failed(name, str(exc))
        except Exception as exc:  # noqa: BLE001 - one line to the model, the details logged
            return self._failed(name, _described(exc, self.backend.ws))
        text = protocol.encode(outcome).decode("utf-8")
        shown: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
        if self.version >= "2025-06-18":
            shown["structuredContent"] = outcome
        return {**shown, "isError": False}

    def _healing(self, tool: catalog.Tool, values: dict[str, Any]) -> Any:
        """``_run``; a tool that only reads and finds the views damaged (SQLite calls
        ``memory.db`` malformed) has them rebuilt from the log and runs again, once."""
        try:
            return self._run(tool, values)
        except Exception as exc:
            from memlog.api.healing import heal
            from memlog.projections.sqlite_view.damage import is_corrupt

            ws = self.backend.ws
            if tool.name == "store_memory" or ws is None or not is_corrupt(exc):
                raise
            if not heal(ws.home, str(exc), ws.space):
                raise
        return self._run(tool, values)

    def _run(self, tool: catalog.Tool, values: dict[str, Any]) -> Any:
        ws, tools = self.backend.ready()
        with contextlib.redirect_stdout(sys.stderr):  # stdout carries the protocol alone
            return getattr(tools, tool.name)(ws, **values)

    def _failed(self, name: str, message: str) -> dict[str, Any]:
        text = f"Error executing tool {name}: {message}"
        return {"content": [{"type": "text", "text": " ".join(text.split())}], "isError": True}


def _described(exc: BaseException, ws: Workspace | None = None) -> str:
    return describe(exc, ws.home.errors_log if ws is not None else None).message


def serve(cwd: Path, stdin: IO[bytes], stdout: IO[bytes]) -> None:
    """Answer every line of ``stdin`` on ``stdout`` until ``stdin`` ends."""
    backend = Backend(cwd)
    server = Server(backend)
    for line in protocol.lines(stdin):
        answer = server.receive(line)
        if answer is not None:
            stdout.write(answer + b"\n")
            stdout.flush()
        if server.initialized:
            backend.start()
    if backend.thread.ident is not None:
        backend.thread.join(SETTLE_SECONDS)


def main() -> None:
    """``memlog serve-mcp``: stdio, until the client closes the stream."""
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    sys.stdout = sys.stderr  # whatever else prints goes to stderr, never into the protocol
    try:
        serve(Path.cwd(), sys.stdin.buffer, out)
    except KeyboardInterrupt:
        pass
    finally:
        with contextlib.suppress(OSError):
            out.close()
