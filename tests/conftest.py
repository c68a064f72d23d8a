"""Every test runs against a temporary memlog home and HOME, never the real ones."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from memlog.tests import real_home, standalone


@pytest.fixture(scope="session", autouse=True)
def away_from_the_real_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The run's HOME is a folder of its own, every process of the run with it; writes
    under the real ``~/.claude`` are refused, and the run fails if it made the real
    ``~/.claude`` or memlog home (``real_home``).  The real test caches stay in use."""
    before = {path: path.exists() for path in real_home.NOT_CREATED}
    names = ("HOME", "MEMLOG_TEST_CACHE", "npm_config_userconfig", "npm_config_cache")
    kept = {name: os.environ.get(name) for name in names}
    os.environ.setdefault("MEMLOG_TEST_CACHE", str(real_home.TEST_CACHE))
    npmrc = real_home.REAL_HOME / ".npmrc"  # the user's registry, for the CLI's first install
    if npmrc.exists():
        os.environ.setdefault("npm_config_userconfig", str(npmrc))
    os.environ.setdefault("npm_config_cache", str(real_home.REAL_HOME / ".npm"))
    home = tmp_path_factory.mktemp("user-home")
    os.environ["HOME"] = str(home)
    real_home.watch()
    yield home
    real_home.unwatch()
    for name, value in kept.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    made = real_home.created(before)
    if made or real_home.touched:
        pytest.fail(f"the run wrote into the real home: {made or real_home.touched}")


@pytest.fixture(autouse=True)
def real_home_untouched() -> Iterator[None]:
    """The test fails, loudly, when it tried to write into the real home, even if the
    code under test swallowed the refusal."""
    before = len(real_home.touched)
    yield
    if len(real_home.touched) > before:
        tried = real_home.touched[before:]
        del real_home.touched[before:]  # this test's fault: reported here, once
        pytest.fail(f"this test tried to write into the real home: {tried}")


def pytest_configure(config: pytest.Config) -> None:
    """Reads beside the repository are noted from the start, collection included."""
    standalone.watch()


#: tests that take minutes by design, started first: on workers that take tests in order,
#: one started last would run alone at the end of the suite
LONGEST = ("tests/test_chaos.py",)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest tests first (the order of the rest is kept)."""
    items.sort(key=lambda item: not item.nodeid.startswith(LONGEST))


@pytest.fixture(scope="session", autouse=True)
def within_the_repository() -> Iterator[None]:
    """The run fails when something read beside the repository outside any test (a test
    module reading a fixture as it is collected)."""
    yield
    standalone.unwatch()
    if standalone.outside:
        pytest.fail(f"the run read outside the repository: {standalone.outside}")


@pytest.fixture(autouse=True)
def reads_nothing_beside_the_repository(within_the_repository: None) -> Iterator[None]:
    """The test fails when it read a file or folder beside the repository (where its
    fixtures once came from): a clone has nothing there, so it would fail in the clone."""
    before = len(standalone.outside)
    yield
    if len(standalone.outside) > before:
        read = standalone.outside[before:]
        del standalone.outside[before:]
        pytest.fail(f"this test read outside the repository (a clone has none of it): {read}")


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
