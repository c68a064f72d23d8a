"""The real Claude Code CLI, installed from npm for end-to-end tests, run offline.

Two pinned releases, each installed once into a cache directory of its own
(``$MEMLOG_TEST_CACHE``, default ``~/.cache/memlog-tests``; a test is skipped
with the reason when npm or the registry cannot be reached):

* ``claude_binary()``: Claude Code ``CLAUDE_CODE`` (2.1.197), the newest that
  installs on Node 20, which most of the end-to-end tests run;
* ``latest_claude_binary()``: Claude Code ``LATEST`` (2.1.332), which needs
  Node 22 to install: npm's ``node`` package (Node's own binaries, pinned to
  ``NODE``) is installed first and npm runs under it.  On Node 20 a plain
  ``npm install @anthropic-ai/claude-code`` silently gives 2.1.197.

``ClaudeCode`` runs either with a temporary HOME (never the real
``~/.claude``), the API at a loopback ``MessagesAPI``, and no traffic to
anything else (``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1``; the
environment is scrubbed of inherited ``ANTHROPIC_*``, ``CLAUDE*`` and
``OTEL_*``).
"""

from __future__ import annotations

import fcntl
import functools
import json
import os
import pty
import re
import select
import shutil
import signal
import struct
import subprocess
import termios
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

_CONTROL = re.compile(
    rb"\x1b(?:\[[0-9;?<=>]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[()][0-9A-Za-z]|[0-9A-Za-z=>])"
)


def screen_words(raw: bytes) -> bytes:
    """A terminal's output with every control sequence read as a space and spaces runs
    made one: the terminal UI moves its cursor between words (``ESC[181G``) where a
    plain writer prints a space, so a phrase is found whichever way it was drawn."""
    return re.sub(rb"[ \r\n]+", b" ", _CONTROL.sub(b" ", raw))


PACKAGE = "@anthropic-ai/claude-code"
#: the Claude Code releases the tests run: the newest on Node 20, and the newest checked
CLAUDE_CODE = "2.1.197"
LATEST = "2.1.332"
#: the Node that installs ``LATEST`` (its ``engines`` asks for 22 or later)
NODE = "22.23.3"
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


@functools.cache
def claude_binary() -> Path:
    """Claude Code ``CLAUDE_CODE``'s ``claude`` (installed now if needed); the test is
    skipped when that is impossible."""
    binary = npm_binary(
        f"{PACKAGE}@{CLAUDE_CODE}", "claude", cache_dir(f"claude-code-{CLAUDE_CODE}")
    )
    return _of_version(binary, CLAUDE_CODE)


@functools.cache
def latest_claude_binary() -> Path:
    """Claude Code ``LATEST``'s ``claude``, installed by npm running under Node ``NODE``
    (both installed now if needed); the test is skipped when that is impossible."""
    node = npm_binary(f"node@{NODE}", "node", cache_dir(f"node-{NODE}"))
    path = f"{node.parent}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    folder = cache_dir(f"claude-code-{LATEST}")
    binary = npm_binary(f"{PACKAGE}@{LATEST}", "claude", folder, {**os.environ, "PATH": path})
    return _of_version(binary, LATEST)


def _of_version(binary: Path, version: str) -> Path:
    """``binary``, once it says it is Claude Code ``version`` (an install whose native part
    never came, with scripts turned off say, runs nothing and is skipped)."""
    try:
        said = subprocess.run([str(binary), "--version"], capture_output=True, text=True,
                              timeout=60, check=False).stdout  # fmt: skip
    except OSError as exc:
        pytest.skip(f"{binary} does not run: {exc}")
    if not said.startswith(f"{version} "):
        pytest.skip(f"{binary} is not Claude Code {version}: {said.strip()!r}")
    return binary


def npm_binary(package: str, name: str, folder: Path, env: Mapping[str, str] | None = None) -> Path:
    """The binary ``name`` of npm ``package`` installed in ``folder`` (installed now if
    needed, npm run with ``env``); the test is skipped when npm or the registry cannot
    be reached."""
    binary = folder / "node_modules" / ".bin" / name
    if binary.exists():
        return binary
    npm = shutil.which("npm", path=(env or os.environ).get("PATH"))
    if npm is None:
        pytest.skip(f"npm is not installed: cannot install {package}")
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one installer when tests run in parallel
        if not binary.exists():
            _install(npm, folder, package, env)
    if not binary.exists():
        pytest.skip(f"npm installed {package} without a {name} binary in {folder}")
    return binary


def _install(npm: str, folder: Path, package: str, env: Mapping[str, str] | None) -> None:
    command = [npm, "install", "--prefix", str(folder), "--no-audit", "--no-fund", package]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, check=False,
            env=None if env is None else dict(env),
        )  # fmt: skip
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

    def interactive(self, cwd: Path, until: Callable[[bytes], bool], timeout: float = 60) -> bytes:
        """What an interactive session in ``cwd`` shows on a terminal (a pseudo-terminal of
        200 columns), as words (see :func:`screen_words`), up to the moment ``until`` holds
        of it or ``timeout`` passes; the session is then killed.  Onboarding, the folder's
        trust and the API key's approval are marked done in ``~/.claude.json`` first, as a
        user who has run Claude Code before has them."""
        self._trusted(cwd)
        pid, fd = pty.fork()
        if pid == 0:  # the child: the session
            os.chdir(cwd)
            os.execve(str(self.binary), [str(self.binary)], self.env({"TERM": "xterm-256color"}))
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
        shown, deadline = b"", time.monotonic() + timeout
        try:
            while not until(screen_words(shown)) and time.monotonic() < deadline:
                if select.select([fd], [], [], 0.2)[0]:
                    try:
                        shown += os.read(fd, 1 << 16)
                    except OSError:  # the session ended
                        break
        finally:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(fd)
        return screen_words(shown)

    def _trusted(self, cwd: Path) -> None:
        path = self.home / ".claude.json"
        state = json.loads(path.read_text()) if path.exists() else {}
        key = self.env()["ANTHROPIC_API_KEY"][-20:]  # the key asked about once, approved
        state.update(hasCompletedOnboarding=True, theme="dark",
                     customApiKeyResponses={"approved": [key], "rejected": []})  # fmt: skip
        project = state.setdefault("projects", {}).setdefault(str(cwd), {})
        project.update(hasTrustDialogAccepted=True, hasCompletedProjectOnboarding=True)
        path.write_text(json.dumps(state))

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
