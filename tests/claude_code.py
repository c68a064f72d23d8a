"""The real Claude Code CLI, installed from npm for end-to-end tests, run offline.

``claude_binary()`` installs ``@anthropic-ai/claude-code`` once into a cache
directory (``$MEMLOG_TEST_CACHE``, default ``~/.cache/memlog-tests``) and
returns the path of its ``claude``; when npm or the registry cannot be
reached the calling test is skipped with the reason.  ``ClaudeCode`` runs
it with a temporary HOME (never the real ``~/.claude``), the API at a
loopback ``MessagesAPI``, and no traffic to anything else
(``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1``; the environment is
scrubbed of inherited ``ANTHROPIC_*``, ``CLAUDE*`` and ``OTEL_*``).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

PACKAGE = "@anthropic-ai/claude-code"
INSTALL_TIMEOUT = 600
OFFLINE = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_MAX_RETRIES": "0",
}
_SCRUBBED = ("ANTHROPIC_", "CLAUDE", "OTEL_", "MEMLOG_")


def cache_dir(name: str = "claude-code") -> Path:
    configured = os.environ.get("MEMLOG_TEST_CACHE")
    base = Path(configured) if configured else Path.home() / ".cache" / "memlog-tests"
    return base / name


def claude_binary() -> Path:
    """The installed ``claude`` (installed now if needed); skip the test when impossible."""
    return npm_binary(PACKAGE, "claude", cache_dir())


def npm_binary(package: str, name: str, folder: Path) -> Path:
    """The binary ``name`` of npm ``package`` installed in ``folder`` (installed now if
    needed); the test is skipped when npm or the registry cannot be reached."""
    binary = folder / "node_modules" / ".bin" / name
    if binary.exists():
        return binary
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip(f"npm is not installed: cannot install {package}")
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one installer when tests run in parallel
        if not binary.exists():
            _install(npm, folder, package)
    if not binary.exists():
        pytest.skip(f"npm installed {package} without a {name} binary in {folder}")
    return binary


def _install(npm: str, folder: Path, package: str) -> None:
    command = [npm, "install", "--prefix", str(folder), "--no-audit", "--no-fund", package]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired:
        pytest.skip(f"npm install {package} took over {INSTALL_TIMEOUT} s (registry unreachable?)")
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"npm install {package} failed (registry unreachable?): {why}")


@dataclass
class Ran:
    """One run of ``claude``: exit status, output, and the JSON result when there is one."""

    returncode: int
    stdout: str
    stderr: str

    @property
    def result(self) -> dict[str, Any]:
        found: dict[str, Any] = json.loads(self.stdout.strip().splitlines()[-1])
        return found


@dataclass
class ClaudeCode:
    """The CLI with a home of its own, talking to ``api_url`` only."""

    binary: Path
    home: Path
    api_url: str
    extra_env: dict[str, str] = field(default_factory=dict)

    def env(self, more: Mapping[str, str] | None = None) -> dict[str, str]:
        kept = {k: v for k, v in os.environ.items() if not k.startswith(_SCRUBBED)}
        return {
            **kept,
            **OFFLINE,
            "HOME": str(self.home),
            "ANTHROPIC_BASE_URL": self.api_url,
            "ANTHROPIC_API_KEY": "sk-ant-test-key",
            "MEMLOG_RESIDENT_MINUTES": "0",  # no resident outlives the test
            **self.extra_env,
            **(more or {}),
        }

    def run(
        self,
        args: Sequence[str],
        cwd: Path,
        env: Mapping[str, str] | None = None,
        timeout: float = 180,
        stdin: str = "",
    ) -> Ran:
        done = subprocess.run(
            [str(self.binary), *args], cwd=cwd, env=self.env(env), input=stdin,
            capture_output=True, text=True, timeout=timeout, check=False,
        )  # fmt: skip
        return Ran(done.returncode, done.stdout, done.stderr)

    def install_plugin(self, marketplace: Path, cwd: Path) -> Ran:
        """``claude plugin marketplace add`` the folder, then install ``memlog@memlog``."""
        added = self.run(["plugin", "marketplace", "add", str(marketplace)], cwd=cwd)
        assert added.returncode == 0, added.stdout + added.stderr
        return self.run(["plugin", "install", "memlog@memlog"], cwd=cwd)

    def settings(self) -> Path:
        """The user settings file of this home (``~/.claude/settings.json``)."""
        return self.home / ".claude" / "settings.json"

    def transcripts(self, cwd: Path) -> list[Path]:
        """The transcripts Claude Code wrote for work in ``cwd``."""
        folder = self.home / ".claude" / "projects" / project_folder(cwd)
        return sorted(folder.glob("*.jsonl"))


def project_folder(cwd: Path) -> str:
    """Claude Code's folder name for a working directory: non-alphanumerics become ``-``."""
    return "".join(c if c.isalnum() else "-" for c in str(cwd))
