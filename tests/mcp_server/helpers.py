"""What the MCP server's tests share: its environment, the official client, raw lines."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import IO, Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from memlog.home import Home
from memlog.hooks.recorder import settled

TIMEOUT = 30.0
LOCKED = ("database is locked", "sqlite_busy", "database table is locked")


def server_env(home: Path, **extra: str) -> dict[str, str]:
    env = {
        "MEMLOG_HOME": str(home),
        "MEMLOG_EMBEDDING_PROVIDER": "hashing",
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
    }
    return env | extra


def full_env(home: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, **server_env(home, **extra)}


@asynccontextmanager
async def mcp_client(cwd: Path, home: Path, errlog: IO[str]) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memlog", "serve-mcp"],
        env=server_env(home),
        cwd=cwd,
    )
    async with stdio_client(params, errlog=errlog) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=TIMEOUT) as client:
            await client.initialize()
            yield client


def run_mcp(cwd: Path, home: Path, body: Callable[[ClientSession], Any], errlog_path: Path) -> Any:
    """Run ``body(client)`` against a fresh server; its stderr goes to ``errlog_path``."""

    async def main() -> Any:
        with open(errlog_path, "a", encoding="utf-8") as errlog:
            async with mcp_client(cwd, home, errlog) as client:
                return await body(client)

    return anyio.run(main)


def store_args(n: int | str, **over: Any) -> dict[str, Any]:
    args = {
        "name": f"Parser lesson {n}",
        "description": f"Read real file samples before writing parser number {n}.",
        "reasoning": f"Synthetic inputs hid a quoting bug in parser {n}.",
        "category": "patterns",
    }
    return args | over


def text_of(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


def run_hook(project: Path, home: Path, **env: str) -> dict[str, Any]:
    # each run is a session of its own: a second run for one session start injects nothing
    payload = {
        "session_id": f"s-{uuid.uuid4()}", "cwd": str(project), "hook_event_name": "SessionStart",
        "source": "startup", "transcript_path": "",
    }  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "memlog", "hook", "session-start"],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=full_env(home, **env),
        cwd=project,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stderr
    assert not any(word in done.stderr.lower() for word in LOCKED), done.stderr
    assert settled(Home(home))
    output: dict[str, Any] = json.loads(done.stdout)
    return output


def observe(cwd: Path, home: Path, name: str, description: str, category: str) -> Any:
    argv = ["observe", "--name", name, "--description", description, "--category", category]
    return subprocess.run(
        [sys.executable, "-m", "memlog", *argv],
        capture_output=True,
        text=True,
        env=full_env(home),
        cwd=cwd,
        timeout=TIMEOUT,
    )


def assert_no_lock_errors(*texts: str) -> None:
    for text in texts:
        assert not any(word in text.lower() for word in LOCKED), text


def read_text(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""


class Raw:
    """A server process spoken to in raw lines: ``send`` bytes, read each ``reply``."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self.proc = proc
        self.stdin = proc.stdin
        self.replies: queue.Queue[bytes] = queue.Queue()
        self.reader = threading.Thread(target=self._pump, args=(proc.stdout,), daemon=True)
        self.reader.start()

    def _pump(self, stdout: IO[bytes]) -> None:
        for line in stdout:
            self.replies.put(line)
        self.replies.put(b"")

    def send(self, line: bytes) -> None:
        self.stdin.write(line + b"\n")
        self.stdin.flush()

    def reply(self, timeout: float = TIMEOUT) -> dict[str, Any]:
        line = self.replies.get(timeout=timeout)
        assert line, "the server closed stdout"
        assert line.endswith(b"\n") and line.count(b"\n") == 1
        found: dict[str, Any] = json.loads(line)  # every stdout line is JSON-RPC
        return found

    def silent(self, seconds: float = 0.5) -> bool:
        """Whether nothing more was answered (checked with a ping that must come first)."""
        self.send(json.dumps({"jsonrpc": "2.0", "id": "quiet?", "method": "ping"}).encode())
        return self.reply(timeout=seconds + TIMEOUT)["id"] == "quiet?"

    def exchange(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """Send ``message``; its response (None for a notification)."""
        self.send(json.dumps(message).encode("utf-8"))
        if "id" not in message:
            return None  # a notification has no response
        while True:
            reply = self.reply()
            if reply.get("id") == message["id"]:
                return reply


@contextmanager
def raw_server(cwd: Path, home: Path, stderr: IO[bytes]) -> Iterator[Raw]:
    """A server process for raw lines; stdin closed at the end, and a clean exit checked."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "memlog", "serve-mcp"], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=stderr, cwd=cwd, env=full_env(home),
    )  # fmt: skip
    raw = Raw(proc)
    try:
        yield raw
    finally:
        raw.stdin.close()
        try:
            assert proc.wait(timeout=TIMEOUT) == 0  # EOF on stdin: a clean exit
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            raw.reader.join(TIMEOUT)
            assert proc.stdout is not None
            proc.stdout.close()


def request(number: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": number, "method": method, "params": params}


def call(number: int, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return request(number, "tools/call", {"name": tool, "arguments": arguments})
