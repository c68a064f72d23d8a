"""Every test runs against a temporary memlog home, never the real one."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[2] / "shared"
FIXTURES = SHARED / "fixtures"


@pytest.fixture(scope="session", autouse=True)
def resident_sockets() -> Iterator[Path]:
    """The run's own socket folder for residents: whatever resident a test left is
    stopped when the run ends (a short path: a socket's holds ~100 bytes)."""
    folder = Path(tempfile.mkdtemp(prefix="mr-", dir="/tmp"))
    before = os.environ.get("XDG_RUNTIME_DIR")
    os.environ["XDG_RUNTIME_DIR"] = str(folder)
    yield folder
    for path in folder.glob("memlog-*/*.sock"):
        with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as sock:
            sock.settimeout(2)
            sock.connect(str(path))
            sock.sendall(b'{"op": "stop"}\n')
            sock.recv(1024)
    if before is None:
        del os.environ["XDG_RUNTIME_DIR"]
    else:
        os.environ["XDG_RUNTIME_DIR"] = before
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def memlog_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache directory for the whole run: the local model's runtime weights are
    built once, and nothing is written to the real ``~/.cache/memlog``."""
    return tmp_path_factory.mktemp("memlog-cache")


#: environment variables that move or turn off Claude Code's auto memory
CLAUDE_CODE_SWITCHES = (
    "CLAUDE_CODE_DISABLE_AUTO_MEMORY", "CLAUDE_CODE_SIMPLE", "CLAUDE_COWORK_MEMORY_PATH_OVERRIDE",
    "CLAUDE_CODE_REMOTE_MEMORY_DIR",
)  # fmt: skip


@pytest.fixture(autouse=True)
def memlog_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, memlog_cache: Path) -> Path:
    """A fresh, empty ``MEMLOG_HOME`` (not yet created) for each test."""
    home = tmp_path / "memlog-home"
    monkeypatch.setenv("MEMLOG_HOME", str(home))
    monkeypatch.setenv("MEMLOG_CACHE_DIR", str(memlog_cache))
    for name in ("GEMINI_API_KEY", "OPENAI_API_KEY", "VOYAGE_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    # Fast, deterministic vectors by default; tests of the local model ask for it.
    monkeypatch.setenv("MEMLOG_EMBEDDING_PROVIDER", "hashing")
    # No model is ever asked unless a test says which (tests of extraction do).
    monkeypatch.setenv("MEMLOG_EXTRACTION_PROVIDER", "off")
    # No resident ranker outlives a test unless the test starts (and stops) it.
    monkeypatch.setenv("MEMLOG_RESIDENT_MINUTES", "0")
    # Claude Code's own files (CLAUDE.md, settings, auto memory) are never the user's.
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-config"))
    for name in CLAUDE_CODE_SWITCHES:
        monkeypatch.delenv(name, raising=False)
    return home
