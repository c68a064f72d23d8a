"""Packed files carry their own checksums.

Flipped bytes in ``index/*.lex``, ``.nbr`` or ``.rnk`` went unseen: verify said
the views matched a rebuild, search scores changed or ranking failed
(``IndexError``), the SessionStart hook injected an empty context on every
start, and ``memlog replay`` kept the damaged file (then named by its content).  Each file
now has block checksums beside it (``<file>.sums``): a start checks a file's
size and its first and last block (a damaged one is ranked without, from
the rows, and logged), ``verify`` checks every block, ``replay`` writes a
damaged file again.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from memlog.commands.cli import cli
from memlog.home import Home
from memlog.projections.sqlite_view import packsums
from memlog.tests.test_links import invoke, ok

TOPICS = ("retry", "cache", "schema", "deploy", "parser", "logging")


@pytest.fixture
def home(memlog_home: Path) -> Path:
    lines = [
        json.dumps({
            "name": f"{topic.title()} lesson {i}",
            "description": f"When the {topic} step fails, check the {topic} settings first ({i}).",
            "category": ("patterns", "anti-patterns", "heuristics")[i % 3],
        })
        for i, topic in enumerate(TOPICS * 4)
    ]  # fmt: skip
    result = CliRunner().invoke(cli, ["observe", "--from", "-"], input="\n".join(lines))
    assert result.exit_code == 0, result.output
    return memlog_home


def named(home: Path, suffix: str) -> Path:
    db = sqlite3.connect(home / "memory.db")
    try:
        files = [r[0] for r in db.execute("SELECT file FROM packed_sets")]
    finally:
        db.close()
    (name,) = [f for f in files if f.endswith(suffix)]
    return home / "index" / name


def flip(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at % len(data)] ^= 0x5A
    path.write_bytes(bytes(data))


def test_sums_are_written_with_every_packed_file(home: Path) -> None:
    for folder in ("index",):
        for path in (home / folder).iterdir():
            if path.name.endswith((".lex", ".lxd", ".nbr", ".rnk", ".vec")):
                assert packsums.sidecar(path).exists() and packsums.full(path) is None, path


def test_an_append_sums_only_what_it_adds(tmp_path: Path) -> None:
    (tmp_path / "index").mkdir()
    path = tmp_path / "index" / "f.lxd"
    path.write_bytes(os.urandom(3 * packsums.BLOCK + 100))
    packsums.record(path)
    packsums.noticed()  # what other tests noticed, forgotten
    with open(path, "ab") as handle:
        handle.write(os.urandom(packsums.BLOCK))
    assert (
        packsums.quick(Home(path.parent.parent), path) is None
    )  # grown since: what the sums cover is unchanged
    packsums.record(path, changed_from=3 * packsums.BLOCK + 100)
    assert packsums.full(path) is None
    flip(path, packsums.BLOCK + 7)  # a block in the middle
    assert (
        packsums.quick(Home(path.parent.parent), path) is None
    )  # a start reads only the ends: cheap at any size
    assert packsums.full(path) == "block 2 of 5 fails its checksum"
    flip(path, 0)
    assert packsums.quick(Home(path.parent.parent), path) == "block 1 of 5 fails its checksum"
    assert packsums.noticed() == ["index/f.lxd: block 1 of 5 fails its checksum"]
    path.write_bytes(path.read_bytes()[:100])
    assert "shorter than" in (packsums.quick(Home(path.parent.parent), path) or "")


def test_a_patch_under_way_is_not_damage(tmp_path: Path) -> None:
    """A catch-up patches a slot file's records in place, their bytes before their sums:
    a start checks its structure only (``verify`` every block), and a size it finds short
    while a patch cuts and appends records is checked again once the patch is done."""
    folder = tmp_path / "index"
    folder.mkdir()
    path = folder / "f.rnk"
    path.write_bytes(os.urandom(3 * packsums.BLOCK))
    packsums.record(path)
    packsums.noticed()  # what other tests noticed, forgotten
    flip(path, 5)  # a record's bytes ahead of its sums
    assert packsums.quick(Home(path.parent.parent), path) is None
    assert packsums.full(path) == "block 1 of 3 fails its checksum"
    packsums.record(path, changed=[(5, 6)])
    cut = threading.Event()

    def patch() -> None:
        with packsums.patching(folder):
            os.truncate(path, 2 * packsums.BLOCK)  # records a crash left, cut first
            cut.set()
            time.sleep(0.2)
            with open(path, "ab") as handle:
                handle.write(os.urandom(packsums.BLOCK))
            packsums.record(path, changed_from=2 * packsums.BLOCK)  # then its sums

    writer = threading.Thread(target=patch)
    writer.start()
    cut.wait()
    assert packsums.quick(Home(path.parent.parent), path) is None  # waited for the sums
    writer.join()
    assert packsums.noticed() == [] and packsums.full(path) is None
    os.truncate(path, packsums.BLOCK)  # cut with no patch under way: damage
    assert "shorter than" in (packsums.quick(Home(path.parent.parent), path) or "")


@pytest.mark.parametrize("suffix", [".lex", ".nbr", ".rnk"])
@pytest.mark.parametrize("where", [0, 200, -50], ids=["header", "ids", "arrays"])
def test_a_damaged_index_file_is_seen_ranked_around_and_written_again(
    home: Path, suffix: str, where: int
) -> None:
    path = named(home, suffix)
    before = path.read_bytes()
    flip(path, where)

    checked = invoke("verify")
    assert checked.exit_code == 1
    assert f"drift: index/{path.name}: block 1 of 1 fails its checksum" in checked.stderr

    found = ok("search", "when the cache step fails check the cache settings", "--json")
    assert "Cache lesson" in found.stdout  # ranked, from the rows: no IndexError, no nothing

    replayed = ok("replay")
    assert "events applied" in replayed.stdout
    again = named(home, suffix)  # named by the replay's last event
    assert packsums.full(again) is None  # written again
    if suffix != ".lex":  # (the lexical index: what catch-ups added since, folded into it)
        assert again.read_bytes() == before
    assert "views: match a rebuild" in ok("verify").stdout


@pytest.mark.slow
def test_the_hook_injects_from_the_rows_and_logs_a_damaged_file(home: Path, tmp_path: Path) -> None:
    path = named(home, ".rnk")
    flip(path, 0)
    lex = named(home, ".lex")
    flip(lex, 0)
    payload = json.dumps({"session_id": "s", "cwd": str(tmp_path), "source": "startup"})
    env = {**os.environ, "MEMLOG_HOME": str(home)}
    done = subprocess.run(
        [sys.executable, "-m", "memlog", "hook", "session-start"], input=payload,
        capture_output=True, text=True, env=env, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "## Engineering Memory" in context and "lesson" in context
    errors = (home / "hook-errors.log").read_text()
    assert f"index/{path.name}: not its kind's header: ranked from the rows" in errors
