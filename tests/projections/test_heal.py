"""The views heal themselves: damage found is rebuilt aside and swapped in.

``memory.db`` flipped in its middle (SQLite calls it malformed only when a
query reaches the pages), a packed file whose sums fail, views that
``memlog verify`` found drifted: read commands never fail on them, the hook
never injects an empty block while the log holds lessons, and the next
command that writes the views (a catch-up, the hook's background work,
``verify --repair``) rebuilds them from the log.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from memlog.eventlog.events import Observed
from memlog.eventlog.log import EventLog
from memlog.home import Home
from memlog.projections.runner import catch_up
from memlog.projections.sqlite_view import damage, index_files, store
from memlog.tests.hooks.test_session_start import entry_headers, payload, project, run_hook
from memlog.tests.sync.helpers import memlog
from memlog.vocabulary import DEFAULT_SPACES

SPACE = DEFAULT_SPACES["hashing"]
CATEGORIES = ("anti-patterns", "heuristics", "patterns")


def seed(home: Path, count: int = 265) -> None:
    """``count`` lessons (long ones, so the database has pages enough to damage)."""
    events = [
        Observed(
            name=f"Lesson {i}",
            description=f"Lesson {i}: the parser keeps step {i} small, tested and apart "
            f"from the writer; {'reasons differ by the case at hand ' * 6}{i}.",
            category=CATEGORIES[i % 3],  # type: ignore[arg-type]
            reasoning="Seen in review. " * 20,
            project="project-a",
            keywords=("parser", f"step{i}"),
        )
        for i in range(count)
    ]
    EventLog(home).append(events)
    catch_up(home, SPACE)


def flip_middle(home: Path, size: int = 40 << 10) -> None:
    """40 KB flipped in the middle of ``memory.db`` after a checkpoint (no WAL left)."""
    path = home / "memory.db"
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(path.read_bytes())
    assert len(data) > 3 * size
    middle = len(data) // 2
    for i in range(middle, middle + size):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


def flip_table(home: Path, table: str) -> None:
    """Every page of ``table`` in ``memory.db`` flipped, after a checkpoint."""
    path = home / "memory.db"
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size = int(db.execute("PRAGMA page_size").fetchone()[0])
        pages = [n for (n,) in db.execute("SELECT pageno FROM dbstat WHERE name = ?", (table,))]
    data = bytearray(path.read_bytes())
    for page in pages:
        at = (page - 1) * size
        data[at : at + size] = bytes(b ^ 0xFF for b in data[at : at + size])
    path.write_bytes(bytes(data))


def first_id(home: Path) -> str:
    return next(r.event.entry_id for r in EventLog(home).read() if isinstance(r.event, Observed))


def test_read_commands_read_a_malformed_database_healed(memlog_home: Path) -> None:
    seed(memlog_home)
    flip_middle(memlog_home)
    for args in (("list", "--limit", "300", "--json"), ("show", first_id(memlog_home))):
        done = memlog(memlog_home, *args)
        assert done.exit_code == 0, done.output
        assert "malformed" not in done.output
    listed = json.loads(memlog(memlog_home, "list", "--limit", "300", "--json").stdout)
    assert len(listed["entries"]) == 265
    assert memlog(memlog_home, "verify").exit_code == 0


def test_catch_up_rebuilds_a_malformed_database(memlog_home: Path) -> None:
    seed(memlog_home)
    flip_middle(memlog_home)
    done = memlog(memlog_home, "catch-up")
    assert done.exit_code == 0, done.output
    with sqlite3.connect(memlog_home / "memory.db") as db:
        assert db.execute("PRAGMA quick_check").fetchone()[0] == "ok"
    assert memlog(memlog_home, "verify").exit_code == 0


@pytest.mark.slow
def test_the_first_start_on_a_malformed_database_injects_the_lessons(
    memlog_home: Path, tmp_path: Path
) -> None:
    seed(memlog_home)
    flip_middle(memlog_home)
    root = project(tmp_path)
    run = run_hook(memlog_home, payload(root), root)
    assert len(entry_headers(run.context)) >= 9, run.context


def test_a_packed_file_whose_sums_fail_is_rebuilt_by_the_next_catch_up(
    memlog_home: Path,
) -> None:
    seed(memlog_home, 40)
    with store.opened(memlog_home / "memory.db", readonly=True) as db:
        name = index_files.pointer(db, "rnk")
    assert name is not None
    path = memlog_home / "index" / name[0]
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    audit = memlog(memlog_home, "verify")
    assert audit.exit_code == 1 and "fails its checksum" in audit.output
    memlog(memlog_home, "catch-up")
    assert memlog(memlog_home, "verify").exit_code == 0


def test_drift_verify_found_is_healed_by_repair(memlog_home: Path) -> None:
    seed(memlog_home, 40)
    with store.opened(memlog_home / "memory.db") as db, store.transaction(db):
        db.execute("UPDATE entries SET observation_count = 7 WHERE slot = 3")
    assert memlog(memlog_home, "verify").exit_code == 1
    repaired = memlog(memlog_home, "verify", "--repair")
    assert repaired.exit_code == 0, repaired.output
    assert memlog(memlog_home, "verify").exit_code == 0


def test_drift_verify_found_is_healed_by_the_next_catch_up(memlog_home: Path) -> None:
    seed(memlog_home, 40)
    with store.opened(memlog_home / "memory.db") as db, store.transaction(db):
        db.execute("UPDATE entries SET observation_count = 7 WHERE slot = 3")
    assert memlog(memlog_home, "verify").exit_code == 1
    memlog(memlog_home, "catch-up")
    assert memlog(memlog_home, "verify").exit_code == 0


def test_an_aside_a_killed_rebuild_left_is_swept_by_a_read_command(memlog_home: Path) -> None:
    seed(memlog_home, 10)
    aside = memlog_home / ".memory.db.rebuild-999999999-0a0b0c0d0e0f"
    aside.write_bytes(b"x" * 4096)
    os.utime(aside, (0, 0))
    done = memlog(memlog_home, "list")
    assert done.exit_code == 0, done.output
    assert not aside.exists()


def test_a_start_with_no_time_to_rebuild_says_so_and_leaves_it_to_the_background(
    memlog_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rebuild that would not fit in the time left (here: a rebuild slower than any, so
    the start has the time to find the damage whatever the machine's load, and none to
    rebuild) is left to the background, and the start says so."""
    import time

    from memlog.retrieval import inject
    from memlog.retrieval.request import Request
    from memlog.workspace import Workspace

    seed(memlog_home)
    flip_table(memlog_home, "entries")  # the rows a ranking reads, wherever they lie
    monkeypatch.setattr(inject, "REBUILD_BYTES_PER_SECOND", 1)
    ws = Workspace.at(project(tmp_path), home=memlog_home)
    found = inject.build(Request.hook(ws, time.monotonic() + 30))
    assert any("being rebuilt from the log in the background" in n for n in found.notes), (
        found.notes
    )
    for _ in range(300):  # the background catch-up rebuilds the views
        if damage.marked(Home(memlog_home)) is None:
            break
        time.sleep(0.1)
    assert damage.marked(Home(memlog_home)) is None
    assert memlog(memlog_home, "verify").exit_code == 0


@pytest.mark.slow
def test_a_prompt_on_a_malformed_database_says_so_and_the_next_one_recalls(
    memlog_home: Path, tmp_path: Path
) -> None:
    """The prompt hook exits 0 and recalls (from views rebuilt in its time, or the markdown
    files), or says on stderr and in hook-errors.log that the views are being rebuilt; a
    later prompt (of another session: a session is never given a lesson twice) recalls from
    them."""
    import subprocess
    import sys
    import time

    from memlog.tests.hooks.test_session_start import hook_env
    from memlog.tests.hooks.test_user_prompt import payload as prompt_payload

    seed(memlog_home)
    flip_middle(memlog_home)
    root = project(tmp_path)
    asked = prompt_payload(root, "how should the parser keep each step small and tested?")
    hook = [sys.executable, "-m", "memlog", "hook", "user-prompt"]
    done = subprocess.run(hook, input=asked, capture_output=True, cwd=root,
                          env=hook_env(memlog_home), timeout=60)  # fmt: skip
    assert done.returncode == 0
    if b"Lesson " not in done.stdout:  # no rebuild fitted in its time, nor did the files hold
        assert b"memory.db is damaged (" in done.stderr, done.stderr  # one: it says why
        assert "memory.db is damaged (" in (memlog_home / "hook-errors.log").read_text()
    for _ in range(300):  # the background catch-up rebuilds the views
        if damage.marked(Home(memlog_home)) is None:
            break
        time.sleep(0.1)
    asked = prompt_payload(root, "how should the parser keep each step small and tested?")
    again = subprocess.run(hook, input=asked, capture_output=True, cwd=root,
                           env=hook_env(memlog_home), timeout=60)  # fmt: skip
    assert again.returncode == 0 and b"Lesson " in again.stdout, again.stderr
