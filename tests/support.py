"""Paths the tests share: the repository, and the fixtures it holds.

Every fixture a test reads lives under ``tests/fixtures/`` (its README says where each
comes from and at which commit); tests reach them through ``FIXTURES`` and never read
outside the repository (``tests/test_standalone.py`` holds that).
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"
