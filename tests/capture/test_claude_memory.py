"""Claude Code's auto memory recorded beside memlog's: one entry per memory file, kept in
step by path and content (an edit supersedes, a removal retires), never written to."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from memlog import claude_files
from memlog.api import recall
from memlog.capture import claude_memory, native_seen
from memlog.commands.cli import cli
from memlog.eventlog.devices import device_id
from memlog.eventlog.events import Observed, Retired, Superseded
from memlog.eventlog.log import EventLog
from memlog.home import Home
from memlog.hooks.recorder import settled
from memlog.projections.sqlite_view import queries
from memlog.workspace import Workspace

FEEDBACK = """---
name: no-db-mocks
description: Integration tests must hit a real database, not mocks
metadata:
  type: feedback
---
Integration tests hit a real SQLite file, never a mocked connection.

**Why:** a mocked test passed while the migration failed.
**How to apply:** open a temporary database file under tests/integration.
"""
USER = """---
name: user-role
description: The user is a data engineer who reads Go more easily than Python
type: user
---
Explain Python idioms by their Go equivalents.
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    (root / ".git").mkdir(parents=True)
    return root


@pytest.fixture
def folder(project: Path) -> Path:
    """The project's auto memory folder, as Claude Code places it (CLAUDE_CONFIG_DIR)."""
    found = claude_files.memory_folder(str(project))
    found.mkdir(parents=True)
    (found / "MEMORY.md").write_text("- [No DB mocks](no-mocks.md) — real databases\n")
    (found / "no-mocks.md").write_text(FEEDBACK)
    (found / "user.md").write_text(USER)
    return found


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in folder.iterdir()}


def record(project: Path, home: Path) -> claude_memory.NativePlan:
    ws = Workspace.open(project, home=home)
    return claude_memory.record(ws, claude_memory.every_folder(str(project)))[0]


def live(home: Path) -> dict[str, str]:
    return {e.name: e.category for e in queries.of_source(Home(home), "claude-code") if e.live}


def test_each_memory_file_becomes_an_entry(project: Path, folder: Path, memlog_home: Path) -> None:
    before = snapshot(folder)
    found = record(project, memlog_home)
    assert (found.files, found.added, found.unchanged) == (2, 2, 0)
    assert live(memlog_home) == {"no-db-mocks": "heuristics", "user-role": "facts"}
    (entry,) = [
        e for e in queries.of_source(Home(memlog_home), "claude-code") if e.name == "no-db-mocks"
    ]
    assert entry.description == "Integration tests must hit a real database, not mocks"
    assert entry.reasoning.startswith("Integration tests hit") and "How to apply" in entry.reasoning
    assert (
        entry.details == ["Type: feedback", "File: no-mocks.md"] and entry.source_project == "shop"
    )
    assert entry.origins == [
        claude_files.origin(device_id(Home(memlog_home)), folder / "no-mocks.md")
    ]
    assert record(project, memlog_home).events == []  # read again: nothing new
    assert snapshot(folder) == before  # never written


def test_an_edit_supersedes_and_a_removal_retires(
    project: Path, folder: Path, memlog_home: Path
) -> None:
    record(project, memlog_home)
    (folder / "no-mocks.md").write_text(FEEDBACK.replace("tests/integration", "tests/it"))
    (folder / "user.md").unlink()
    found = record(project, memlog_home)
    assert (found.added, found.edited, found.removed) == (0, 1, 1)
    events = [r.event for r in EventLog(memlog_home).read()]
    (superseded,) = [e for e in events if isinstance(e, Superseded)]
    (retired,) = [e for e in events if isinstance(e, Retired)]
    assert superseded.reason == "edited in Claude Code's auto memory (no-mocks.md)"
    assert retired.reason == "removed from Claude Code's auto memory (user.md)"
    assert live(memlog_home) == {"no-db-mocks": "heuristics"}
    (folder / "user.md").write_text(USER)  # back again: the entry comes back
    assert record(project, memlog_home).added == 1 and "user-role" in live(memlog_home)


def test_a_renamed_file_keeps_its_entry(project: Path, folder: Path, memlog_home: Path) -> None:
    record(project, memlog_home)
    (folder / "user.md").rename(folder / "who.md")
    found = record(project, memlog_home)
    assert (found.removed, found.edited) == (0, 0) and "user-role" in live(memlog_home)


def test_another_machines_memories_are_left_alone(
    project: Path, folder: Path, memlog_home: Path
) -> None:
    theirs = Observed(
        name="theirs", description="Another machine's memory", category="heuristics",
        source="claude-code", origin=claude_files.origin("otherdevice", folder / "theirs.md"),
    )  # fmt: skip
    EventLog(memlog_home).append([theirs])
    record(project, memlog_home)
    assert "theirs" in live(memlog_home)


def test_the_start_reads_the_folder_only_when_it_changed(
    project: Path, folder: Path, memlog_home: Path
) -> None:
    ws = Workspace.open(project, home=memlog_home)
    assert native_seen.changed(Home(memlog_home), folder) is not None
    done = claude_memory.at_start(ws, str(project))
    assert done is not None and done[0].added == 2
    assert native_seen.changed(Home(memlog_home), folder) is None
    assert claude_memory.at_start(ws, str(project)) is None
    time.sleep(0.01)
    (folder / "user.md").write_text(USER + "\nAlso Rust.\n")
    assert native_seen.changed(Home(memlog_home), folder) is not None


def test_a_session_start_records_them_after_its_output(
    project: Path, folder: Path, memlog_home: Path
) -> None:
    """An empty home: the start injects nothing, and its recorder imports the memories."""
    given = {"session_id": "s1", "cwd": str(project), "source": "startup"}
    done = subprocess.run([sys.executable, "-m", "memlog", "hook", "session-start"],
                          input=json.dumps(given).encode(), capture_output=True, timeout=60,
                          env=dict(os.environ), check=True)  # fmt: skip
    assert json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"] == ""
    assert settled(Home(memlog_home))
    assert live(memlog_home) == {"no-db-mocks": "heuristics", "user-role": "facts"}
    # and what MEMORY.md already puts in this project's sessions is not injected again
    assert "real database" not in recall.inject(Workspace.open(project, home=memlog_home)).text


def test_memlog_import_claude_memory(
    project: Path, folder: Path, memlog_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = claude_files.config_dir() / "projects" / "-srv-other" / "memory"
    other.mkdir(parents=True)
    (other / "x.md").write_text("---\nname: other\ndescription: From another project\n---\nBody\n")
    monkeypatch.chdir(project)
    done = CliRunner().invoke(cli, ["import", "--claude-memory", "--json"])
    assert done.exit_code == 0, done.output
    figures = json.loads(done.output)
    assert figures["files"] == 3 and figures["added"] == 3 and len(figures["folders"]) == 2
    again = CliRunner().invoke(cli, ["import", "--claude-memory"])
    assert again.output == (
        "3 auto memory files in 2 folders: 0 new, 0 edited, 0 removed, 3 unchanged; "
        "appended 0 events\n"
    )
    assert CliRunner().invoke(cli, ["import", "--claude-memory", "x"]).exit_code == 2
    assert CliRunner().invoke(cli, ["import"]).exit_code == 2
    listing = CliRunner().invoke(cli, ["list", "--source", "claude-code"])
    assert "no-db-mocks" in listing.output and "other" in listing.output
    doctor = CliRunner().invoke(cli, ["doctor"])
    assert f"auto memory  on (on by default); {folder}: 2 memory files, 2 recorded" in doctor.output


def test_a_file_too_large_or_too_deep_is_skipped_named_and_the_others_stored(
    project: Path, folder: Path, memlog_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record(project, memlog_home)  # the two files as they were: entries of their own
    big = "---\nname: big\ndescription: A large memory\n---\n" + "word " * 14_000
    (folder / "big.md").write_text(big)
    deep = "[" * 5000 + "]" * 5000
    (folder / "deep.md").write_text(f"---\nname: deep\ndescription: {deep}\n---\nBody\n")
    # under the file's cap, but its event would pass what an event may hold (escapes)
    (folder / "quotes.md").write_text("---\nname: quotes\ndescription: q\n---\n" + '"' * 40_000)
    (folder / "fine.md").write_text("---\nname: fine\ndescription: A fine new memory\n---\nB\n")
    (folder / "user.md").write_text(USER + "\n" + "x " * 40_000)  # an old one grown too large
    monkeypatch.chdir(project)
    done = CliRunner().invoke(cli, ["import", "--claude-memory", "--json"])
    assert done.exit_code == 0, done.output
    said = [line for line in done.stderr.splitlines() if "skipped" in line]
    assert [Path(line.split(":")[1].strip()).name for line in said] == [
        "big.md",
        "deep.md",
        "user.md",
        "quotes.md",
    ], said
    assert "more than the 64 KiB read" in said[0] and "nested more than 32 deep" in said[1]
    assert "more than the 64 KiB an event may hold" in said[3]
    figures = json.loads(done.stdout)
    assert figures["added"] == 1 and figures["removed"] == 0
    # the fine file stored, the one grown too large left as it was (not retired)
    assert live(memlog_home) == {
        "no-db-mocks": "heuristics", "user-role": "facts", "fine": "facts"
    }  # fmt: skip


def test_one_folder_is_said_as_one(
    project: Path, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project)
    (folder / "user.md").unlink()  # one memory file left (and MEMORY.md, its index)
    done = CliRunner().invoke(cli, ["import", "--claude-memory"])
    assert done.output.startswith("1 auto memory file in 1 folder: 1 new, "), done.output
    assert done.output.endswith("; appended 1 event\n"), done.output
