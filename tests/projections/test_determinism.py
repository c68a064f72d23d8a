"""The whole home is a function of the log: replays leave byte-identical homes.

Every file is compared byte for byte, ``memory.db`` by its ``.dump`` (SQLite
may lay pages out differently for the same content).  Left out: the log
itself (the input), SQLite's working files (``-wal``, ``-shm``: part of the
database, compared through it) and ``.last-injection.json``, the record of
the last injection, which no replay writes.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from memlog.commands.cli import cli
from memlog.eventlog.events import content_hash
from memlog.tests.support import FIXTURES

KB = FIXTURES / "knowledge-bank-6bb5ea25"
#: an iflow global store (its entries keep the lines they were written with)
STORE = Path(__file__).parents[1] / "retrieval" / "fixtures" / "memory_py" / "global-store"
STALE = "Reading a cache without checking what it was built from serves yesterday's answer."
NOT_VIEWS = {".last-injection.json"}


def invoke(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def home_files(home: Path) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    for path in sorted(home.rglob("*")):
        rel = str(path.relative_to(home))
        if not path.is_file() or rel.startswith("events/") or path.name in NOT_VIEWS:
            continue
        if path.name.endswith(("-wal", "-shm")):
            continue
        if path.name == "memory.db":
            db = sqlite3.connect(path)
            found[rel] = "\n".join(db.iterdump()).encode()
            db.close()
        else:
            found[rel] = path.read_bytes()
    return found


def differences(one: dict[str, bytes], other: dict[str, bytes]) -> list[str]:
    return [k for k in sorted(one.keys() | other.keys()) if one.get(k) != other.get(k)]


@pytest.fixture
def busy_home(memlog_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home that has seen every kind of write: import (of a global store too), observe
    (with a secret), promote, retire, a retired entry observed again, labels, vectors, an
    injection, a redaction."""
    project = tmp_path / "parser-project"
    shutil.copytree(KB, project / "docs" / "knowledge-bank")
    (project / ".claude").mkdir()
    monkeypatch.chdir(project)
    invoke("import", str(project / "docs" / "knowledge-bank"))
    invoke("import", *(str(STORE / name) for name in ("anti-patterns.md", "heuristics.md")))
    # a stored entry observed again: its lines as written, with the new count and date
    invoke("observe", "--name", "Stale caches", "--description", STALE, "--category",
           "anti-patterns")  # fmt: skip
    description = "Cache parsed headers by path; password=Hunter2-staging was in the notes."
    invoke("observe", "--name", "Header cache", "--description", description,
           "--category", "heuristics", "--keyword", "Header Cache")  # fmt: skip
    other = "Retry uploads with jitter; the mirror at https://ci:s3cretpw@mirror.local is slow."
    invoke("observe", "--name", "Upload retries", "--description", other,
           "--category", "patterns", "--no-redact")  # fmt: skip
    retired = content_hash("Lesson to retire: pin the parser version in CI.")
    invoke("observe", "--name", "Pin", "--description",
           "Lesson to retire: pin the parser version in CI.", "--category", "patterns")  # fmt: skip
    invoke("promote", retired[:8], "--scope", "universal", "--reason", "seen twice")
    invoke("retire", retired[:8], "--reason", "superseded by the lockfile")
    invoke("observe", "--name", "Pin", "--description",
           "Lesson to retire: pin the parser version in CI.", "--category", "patterns")  # fmt: skip
    invoke("inject", "--limit", "9", "--record")
    invoke("redact", "--match", "s3cretpw", "--reason", "a mirror password")
    return memlog_home


def test_two_replays_and_a_replay_from_the_log_alone_give_the_same_home(
    busy_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    invoke("replay")
    first = home_files(busy_home)
    assert {"memory.db", ".markdown-state.json", "patterns.md"} <= set(first)
    assert "projects/parser-project/heuristics.md" in first
    packed = sorted(n.split(".", 1)[1] for n in first if n.startswith("index/0"))
    kinds = ["lex", "nbr", "rnk", "vec"]
    assert packed == sorted([*kinds, *(f"{k}.sums" for k in kinds)])  # one of each kind, named
    # by the log, each with its checksums
    invoke("replay")
    assert differences(first, home_files(busy_home)) == []

    fresh = tmp_path / "fresh-home"
    shutil.copytree(busy_home / "events", fresh / "events")
    monkeypatch.setenv("MEMLOG_HOME", str(fresh))
    invoke("replay")
    assert differences(first, home_files(fresh)) == []


def test_the_live_home_equals_its_replay(busy_home: Path, tmp_path: Path) -> None:
    """What incremental catch-ups built holds the same entries as a replay (verify's audit)."""
    result = CliRunner().invoke(cli, ["verify"])
    assert result.exit_code == 0, result.output
    assert "views: match a rebuild from the log" in result.stdout
