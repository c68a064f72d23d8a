"""``describe``: every failure as one line, the same for the CLI and the MCP server."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memlog.errors import (
    Described,
    EntryNotFound,
    InvalidInput,
    RateLimited,
    describe,
)
from memlog.home import Home


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (InvalidInput("line 3: name is empty"), Described("line 3: name is empty", True)),
        (EntryNotFound("no entry with id abc"), Described("no entry with id abc", False)),
        (RateLimited("gemini: rate limited", 30.0), Described("gemini: rate limited", False)),
        (
            sqlite3.OperationalError("database is locked"),
            Described("memory.db: database is locked"),
        ),
        (
            FileNotFoundError(2, "No such file or directory", "/x/y.md"),
            Described("/x/y.md: No such file or directory"),
        ),
    ],
)
def test_known_failures_are_one_line(exc: BaseException, expected: Described) -> None:
    assert describe(exc) == expected


def test_a_crash_is_one_line_and_its_traceback_is_kept(tmp_path: Path) -> None:
    try:
        {}["missing"]
    except KeyError as exc:
        said = describe(exc, Home(tmp_path).errors_log)
    log = tmp_path / "errors.log"
    assert said.message == f"internal error: KeyError: 'missing' (details in {log})"
    assert not said.bad_input
    kept = log.read_text()
    assert "Traceback" in kept and "KeyError: 'missing'" in kept


def test_a_crash_without_a_writable_home_is_still_one_line(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("")
    said = describe(RuntimeError("boom"), Home(blocked / "home").errors_log)
    assert said == Described("internal error: RuntimeError: boom")
