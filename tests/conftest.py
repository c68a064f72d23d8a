"""Every test runs against a temporary memlog home, never the real one."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[2] / "shared"
FIXTURES = SHARED / "fixtures"


@pytest.fixture(scope="session")
def memlog_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache directory for the whole run: the local model's runtime weights are
    built once, and nothing is written to the real ``~/.cache/memlog``."""
    return tmp_path_factory.mktemp("memlog-cache")


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
    return home
