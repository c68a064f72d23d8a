"""The view commands (replay, verify audit, show, retire, stats) and crash safety."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from memlog.commands.cli import cli
from memlog.eventlog.events import Observed, Promoted, Recalled
from memlog.eventlog.log import EventLog
from memlog.home import Home
from memlog.projections.runner import catch_up, rebuild
from memlog.projections.sqlite_view import plain, queries, reading, schema, store


def invoke(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input)


def seed(home: Path, n: int = 6) -> list[str]:
    events = [
        Observed(name=f"Entry {i}", description=f"Description {i}", category="patterns",
                 project="alpha", feature="023")
        for i in range(n)
    ]  # fmt: skip
    stored = EventLog(home).append(events)
    EventLog(home).append([Promoted(entry_id=stored[0].entry_id, reason="universal")])
    return [e.entry_id for e in stored]


def test_replay_prints_counts_and_digests(memlog_home: Path) -> None:
    seed(memlog_home)
    result = invoke("replay")
    assert result.exit_code == 0, result.output
    assert "events applied: 7" in result.output
    assert "live entries: 6" in result.output
    assert "memory.db digest: " in result.output and "markdown digest: " in result.output
    assert (memlog_home / "patterns.md").read_text().startswith("# Global Patterns\n")
    again = invoke("replay")
    digest_lines = [ln for ln in result.output.splitlines() if "digest" in ln]
    assert digest_lines == [ln for ln in again.output.splitlines() if "digest" in ln]


def test_everything_but_the_log_is_restored(memlog_home: Path) -> None:
    seed(memlog_home)
    invoke("replay")
    files = {p.relative_to(memlog_home): p.read_bytes() for p in memlog_home.rglob("*.md")}
    for path in memlog_home.iterdir():
        if path.name != "events":
            subprocess.run(["rm", "-rf", str(path)], check=True)
    assert invoke("replay").exit_code == 0
    assert {p.relative_to(memlog_home): p.read_bytes() for p in memlog_home.rglob("*.md")} == files


def test_time_travel_writes_elsewhere_and_leaves_live_views(
    memlog_home: Path, tmp_path: Path
) -> None:
    seed(memlog_home)
    invoke("replay")
    live = (memlog_home / "projects" / "alpha" / "patterns.md").read_bytes()
    result = invoke("replay", "--until", "3", "--to", str(tmp_path / "then"))
    assert result.exit_code == 0, result.output
    assert "events applied: 3" in result.output
    then = (tmp_path / "then" / "projects" / "alpha" / "patterns.md").read_text()
    assert then.count("### Pattern:") == 3
    assert (memlog_home / "projects" / "alpha" / "patterns.md").read_bytes() == live
    assert not (tmp_path / "then" / "patterns.md").exists()  # the promotion came later


def test_time_travel_by_iso_time(memlog_home: Path, tmp_path: Path) -> None:
    seed(memlog_home)
    result = invoke("replay", "--until", "2000-01-01T00:00:00Z", "--to", str(tmp_path / "t"))
    assert result.exit_code == 0 and "events applied: 0" in result.output


@pytest.mark.parametrize(
    "args, message",
    [
        (["replay", "--until", "3"], "--until needs --to"),
        (["replay", "--until", "yesterday", "--to", "x"], "neither a sequence number"),
        (["show", "zz"], "not an entry id"),
        (["show", "abcdef"], "no entry with id"),
        (["retire", "abcdef", "--reason", "x"], "no entry with id"),
    ],
)
def test_bad_input_is_one_clear_line(memlog_home: Path, args: list[str], message: str) -> None:
    seed(memlog_home)
    result = invoke(*args)
    assert result.exit_code != 0
    assert message in result.output
    assert "Traceback" not in result.output


def test_verify_names_drift_and_passes_when_clean(memlog_home: Path) -> None:
    seed(memlog_home)
    assert invoke("verify").exit_code == 0
    mirror = memlog_home / "projects" / "alpha" / "patterns.md"
    mirror.write_text(mirror.read_text() + "\nhand edit\n")
    db = sqlite3.connect(Home(memlog_home).db)
    db.execute("UPDATE entries SET observation_count = 99 WHERE name = 'Entry 2'")
    db.commit()
    db.close()
    result = invoke("verify")
    assert result.exit_code == 1
    assert "projects/alpha/patterns.md: differs" in result.output
    assert "differs from the log" in result.output
    # the drift found is noted: the next command rebuilds the views from the log (the hand
    # edit kept as a backup beside them)
    data = json.loads(invoke("verify", "--json").output)
    assert data["clean"] is True and not data["views"]["drift"]
    assert list(mirror.parent.glob("patterns.md.edited-*.bak"))


def test_show_and_retire(memlog_home: Path) -> None:
    ids = seed(memlog_home)
    EventLog(memlog_home).append([Recalled(ids=(ids[1],), session_id="s1")])
    shown = invoke("show", ids[1][:6])
    assert shown.exit_code == 0, shown.output
    assert "name: Entry 1" in shown.output and "entry.recalled" in shown.output
    data = json.loads(invoke("show", ids[1], "--json").output)
    assert data["entry"]["recall_count"] == 1 and len(data["events"]) == 2
    result = invoke("retire", ids[1], "--reason", "superseded by practice")
    assert result.exit_code == 0, result.output
    assert "Entry 1" not in (memlog_home / "projects" / "alpha" / "patterns.md").read_text()
    assert "already retired" in invoke("retire", ids[1], "--reason", "again").output
    stats = json.loads(invoke("stats", "--json").output)
    assert stats["entries"]["live"] == 5
    assert stats["entries"]["by_category"] == {"patterns": 5}
    assert stats["entries"]["by_project"] == {"alpha": 5}
    assert stats["by_type"]["entry.retired"] == 1


def test_hand_edited_markdown_is_backed_up_before_rewrite(memlog_home: Path) -> None:
    seed(memlog_home)
    catch_up(memlog_home)
    global_file = memlog_home / "patterns.md"
    edited = global_file.read_text() + "\n### Pattern: Mine\nWritten by hand.\n"
    global_file.write_text(edited)
    EventLog(memlog_home).append([Observed(name="More", description="Description 0",
                                           category="patterns")])  # fmt: skip
    notes = catch_up(memlog_home).notes
    assert any("patterns.md was edited by hand" in n for n in notes)
    backups = list(memlog_home.glob("patterns.md.edited-*.bak"))
    assert len(backups) == 1 and backups[0].read_text() == edited
    assert "Written by hand" not in global_file.read_text()


def test_unknown_global_store_is_kept_not_overwritten(memlog_home: Path) -> None:
    memlog_home.mkdir(parents=True)
    (memlog_home / "patterns.md").write_text("# Global Patterns\n\n### Pattern: Old\nOld text.\n")
    seed(memlog_home)
    notes = catch_up(memlog_home).notes
    assert any("was not written by memlog" in n for n in notes)
    assert len(list(memlog_home.glob("patterns.md.edited-*.bak"))) == 1


def test_migrations_build_the_schema_from_blank(tmp_path: Path) -> None:
    db = store.connect(tmp_path / "memory.db")
    names = [r[0] for r in db.execute("SELECT name FROM _migrations ORDER BY ord")]
    assert names == [name for name, _ in schema.MIGRATIONS]
    columns = {r[1] for r in db.execute("PRAGMA table_info(entries)")}
    spec = {
        "id", "name", "description", "reasoning", "category", "keywords", "references",
        "observation_count", "confidence", "recall_count", "last_recalled_at", "created_at",
        "updated_at", "source", "source_project",
    }  # fmt: skip
    assert spec | {"projects", "features", "sources", "provenance", "slot"} <= columns
    assert "embedding" not in columns  # the vectors: in their packed file, once
    triggers = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='trigger'")}
    assert triggers == set()  # no FTS5 to feed: the text is indexed once, in index/*.lex
    indexes = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    assert {"entries_live", "vectors_entry"} <= indexes and "entries_rank" not in indexes
    assert store.get_meta(db, "schema_version") == str(schema.SCHEMA_VERSION)
    assert schema.migrate(db) == []  # applying again is a no-op
    db.close()


# -- crash safety --------------------------------------------------------------------

_REPLAY = """
import sys
from pathlib import Path
from memlog.projections.runner import rebuild
rebuild(Path(sys.argv[1]))
"""


def _big_log(home: Path, n: int = 20000) -> None:
    log = EventLog(home)
    for start in range(0, n, 2000):
        log.append([
            Observed(name=f"E{i}", description=f"Entry number {i} " + "words " * 30,
                     category="heuristics", project=f"p{i % 7}")
            for i in range(start, start + 2000)
        ])  # fmt: skip


@pytest.mark.slow
def test_replay_killed_midway_leaves_views_readable(memlog_home: Path) -> None:
    _big_log(memlog_home, 4000)
    catch_up(memlog_home)
    _big_log(memlog_home, 20000)
    env = {**os.environ, "MEMLOG_HOME": str(memlog_home)}
    for delay in (0.3, 0.8, 1.5):
        proc = subprocess.Popen([sys.executable, "-c", _REPLAY, str(memlog_home)], env=env)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        db = sqlite3.connect(Home(memlog_home).db)
        count = db.execute("SELECT count(*) FROM entries").fetchone()[0]
        seq = db.execute("SELECT value FROM _metadata WHERE key = 'log_seq'").fetchone()[0]
        db.close()
        assert (count, seq) in {(4000, "4000"), (20000, "24000")}
    assert catch_up(memlog_home).seq == 24000
    assert not list(memlog_home.glob(".memory.db.rebuild-*"))


@pytest.mark.slow
def test_concurrent_reader_always_sees_a_complete_view(memlog_home: Path) -> None:
    _big_log(memlog_home, 4000)
    catch_up(memlog_home)
    _big_log(memlog_home, 6000)
    seen: set[tuple[int, str]] = set()
    errors: list[BaseException] = []
    done = threading.Event()

    def read() -> None:
        db = sqlite3.connect(Home(memlog_home).db, isolation_level=None, timeout=10)
        while not done.is_set():
            try:
                db.execute("BEGIN")
                count = db.execute("SELECT count(*) FROM entries").fetchone()[0]
                seq = db.execute("SELECT value FROM _metadata WHERE key='log_seq'").fetchone()[0]
                rnk = "SELECT count FROM packed_sets WHERE kind = 'rnk'"
                records = db.execute(rnk).fetchone()[0]
                db.execute("COMMIT")
                assert records == count
                seen.add((count, seq))
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)
                return
        db.close()

    reader = threading.Thread(target=read)
    reader.start()
    rebuild(Home(memlog_home))
    time.sleep(0.1)
    done.set()
    reader.join()
    assert not errors
    assert seen <= {(4000, "4000"), (6000, "10000")} and (6000, "10000") in seen


def _schema(db: sqlite3.Connection) -> list[tuple[str, str]]:
    rows = db.execute(
        "SELECT name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name"
    )
    return [(name, sql or "") for name, sql in rows]


def test_an_old_database_migrates_to_the_current_schema(tmp_path: Path) -> None:
    old = sqlite3.connect(tmp_path / "old.db", isolation_level=None)
    schema.applied(old)  # the bookkeeping tables, as the first version made them
    schema.m001_initial(old)
    old.execute("INSERT INTO _migrations(name, ord) VALUES ('m001_initial', 1)")
    old.execute(
        "INSERT INTO entries(id, name, description, category, created_at, updated_at, source) "
        "VALUES ('0123456789abcdef', 'n', 'd', 'patterns', 't', 't', 'manual')"
    )
    old.close()
    migrated = store.connect(tmp_path / "old.db")
    blank = store.connect(tmp_path / "blank.db")
    assert _schema(migrated) == _schema(blank)
    assert [r[0] for r in migrated.execute("SELECT name FROM _migrations ORDER BY ord")] == [
        name for name, _ in schema.MIGRATIONS
    ]
    assert migrated.execute("SELECT count(*) FROM entries").fetchone() == (1,)
    plan = migrated.execute(  # the hook's candidates query, as ``Snapshot.candidates`` asks it
        f"EXPLAIN QUERY PLAN SELECT id, category, observation_count, {plain.LEVEL}, "
        f"{reading.DAYS}, recall_count FROM entries "
        "WHERE status = 'live' AND category IN (?, ?) ORDER BY id",
        ("2026-01-01T00:00:00", "patterns", "heuristics"),
    ).fetchall()
    assert "USING INDEX entries_live" in " ".join(str(r) for r in plan)
    plan = migrated.execute(  # the hook's branch memory, as ``queries.branch_entries`` asks it
        f"EXPLAIN QUERY PLAN {queries.BRANCH_ENTRIES}", ("project/branch",)
    ).fetchall()
    assert "USING INDEX entries_branched" in " ".join(str(r) for r in plan)
    migrated.close()
    blank.close()


def test_hook_leaves_a_large_catch_up_to_the_background(memlog_home: Path) -> None:
    from memlog.config import Config
    from memlog.retrieval.inject import build
    from memlog.retrieval.request import Request
    from memlog.workspace import Workspace

    _big_log(memlog_home, 2000)
    catch_up(memlog_home)
    _big_log(memlog_home, 6000)
    ws = Workspace(Home(memlog_home), None, Config(memory_embedding_provider="hashing"))
    request = Request(
        ws, deadline=time.monotonic() + 30, max_catch_up_bytes=1000, query="entry number"
    )
    result = build(request)
    assert any("catching up in the background" in n for n in result.notes)
    assert result.total == 2000  # read as it was
    for _ in range(100):
        if catch_up(memlog_home).applied == 0 and build(request).total == 6000:
            break
        time.sleep(0.1)
    assert build(request).total == 6000


def test_projects_with_similar_names_keep_their_own_files(memlog_home: Path) -> None:
    log = EventLog(memlog_home)
    log.append([Observed(name="A", description="Alpha text", category="patterns", project="a b")])
    log.append([Observed(name="B", description="Beta text", category="patterns", project="a-b")])
    catch_up(memlog_home)
    log.append([Observed(name="A2", description="Alpha two", category="patterns", project="a b")])
    catch_up(memlog_home)
    texts = sorted(p.read_text() for p in (memlog_home / "projects").glob("*/patterns.md"))
    assert len(texts) == 2
    assert "### Pattern: B\n" in texts[0] + texts[1]
    assert sum(t.count("### Pattern:") for t in texts) == 3
