"""The project folder every MCP test starts its server in."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project folder (marked by ``.claude``) with a subfolder to start from."""
    root = tmp_path / "acme-parser"
    (root / ".claude").mkdir(parents=True)
    (root / "src").mkdir()
    return root
