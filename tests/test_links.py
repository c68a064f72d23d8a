"""Nothing in the home is followed out of it.

A link planted where memlog writes (a segment, ``memory.db`` and the files
SQLite keeps beside it, the quarantine file, the hook's error log, markdown
files and their temporary files, ``.last-injection.json``, locks, state
files, the folders between) is refused in one line naming it; its target is
never written, created, truncated or renamed into place.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from memlog import files, locking
from memlog.commands.cli import cli
from memlog.errors import HomeError
from memlog.eventlog.events import Observed
from memlog.eventlog.log import EventLog
from memlog.home import Home
from memlog.projections.markdown_view.writer import MarkdownState, write_files

REFUSED = "is a symbolic link; memlog follows no link inside its home"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def ok(*args: str) -> Result:
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture
def home(memlog_home: Path) -> Path:
    """A home with entries, promoted ones among them, and every view written."""
    for i, category in enumerate(("anti-patterns", "patterns", "heuristics")):
        name = f"Lesson {i}"
        ok("observe", "--name", name, "--description", f"Lesson {i}: retry.", "--category",
           category)  # fmt: skip
        (entry,) = [r.event for r in EventLog(memlog_home).read() if isinstance(r.event, Observed)
                    and r.event.name == name]  # fmt: skip
        ok("promote", entry.entry_id)
    return memlog_home


def plant(home: Path, rel: str, outside: Path) -> bytes:
    """Move what is at ``rel`` (if anything) to ``outside`` and leave a link to it in its
    place; the bytes the target holds (a folder: a marker file's)."""
    path = home / rel
    if path.is_dir():
        shutil.move(str(path), str(outside))
        (outside / "marker").write_bytes(b"outside")
    elif path.exists():
        shutil.move(str(path), str(outside))
    else:
        outside.write_bytes(b"outside\n")
    path.symlink_to(outside)
    return (outside / "marker" if outside.is_dir() else outside).read_bytes()


def untouched(outside: Path, before: bytes) -> None:
    if outside.is_dir():
        assert sorted(p.name for p in outside.iterdir()) == sorted(
            {"marker", *(p.name for p in outside.iterdir() if p.name != "marker")}
        )
        assert (outside / "marker").read_bytes() == before
    else:
        assert outside.read_bytes() == before


def refused_line(result: Result, path: Path) -> None:
    assert result.exit_code != 0, result.output
    assert "Traceback" not in result.output
    assert f"{path} {REFUSED}" in result.stderr, result.stderr
    assert len(result.stderr.splitlines()) == 1, result.stderr


WRITERS = {
    # a planted link: the command that would write through it
    "events/00000000000000000001.jsonl": ("observe", "--name", "N", "--description", "New.",
                                          "--category", "facts"),
    "events/.lock": ("observe", "--name", "N", "--description", "New.", "--category", "facts"),
    "events/.seq": ("observe", "--name", "N", "--description", "New.", "--category", "facts"),
    "events": ("observe", "--name", "N", "--description", "New.", "--category", "facts"),
    "memory.db": ("replay",),
    "memory.db-wal": ("replay",),
    "memory.db-shm": ("replay",),
    ".markdown-state.json": ("replay",),
    ".markdown.lock": ("replay",),
    "anti-patterns.md": ("replay",),
    "projects": ("replay",),
    "index": ("replay",),
}  # fmt: skip


@pytest.mark.parametrize("rel", sorted(WRITERS))
def test_a_link_where_memlog_writes_is_refused(home: Path, tmp_path: Path, rel: str) -> None:
    outside = tmp_path / "outside"
    before = plant(home, rel, outside)
    result = invoke(*WRITERS[rel])
    refused_line(result, home / rel)
    untouched(outside, before)


READERS = [("verify",), ("list",), ("log",), ("show", "0"), ("stats",)]


@pytest.mark.parametrize("command", READERS, ids=[c[0] for c in READERS])
@pytest.mark.parametrize("rel", ["events", "events/00000000000000000001.jsonl"])
def test_reading_commands_refuse_a_link_in_the_log_as_writers_do(
    home: Path, tmp_path: Path, rel: str, command: tuple[str, ...]
) -> None:
    """A segment (or the log's folder) planted as a link is refused by the commands that
    only read it too: they never read another file's lines as this home's."""
    outside = tmp_path / "outside"
    before = plant(home, rel, outside)
    (home / "memory.db").unlink()  # a catch-up (or a read of the log) must come
    result = invoke(*command)
    refused_line(result, home / rel)
    untouched(outside, before)


def test_a_search_ranks_from_the_markdown_files_and_says_why_when_the_log_is_a_link(
    home: Path, tmp_path: Path
) -> None:
    plant(home, "events/00000000000000000001.jsonl", tmp_path / "outside")
    (home / "memory.db").unlink()
    result = ok("search", "retry")
    assert REFUSED in result.stderr and "used markdown" in result.stderr


@pytest.mark.parametrize("rel", ["events", "events/00000000000000000001.jsonl"])
def test_a_link_in_the_log_is_not_answered_with_advice_that_loses_it(
    home: Path, tmp_path: Path, rel: str
) -> None:
    """A log moved elsewhere and linked back (a synced folder, a second disk) is refused
    like any link, but the line never tells the user to remove it so that memlog makes
    it again: that would leave an empty log (a view's may be: ``test_faults``)."""
    plant(home, rel, tmp_path / "outside")
    line = invoke(*WRITERS[rel]).stderr
    assert "memlog makes the file again" not in line
    assert "move that file back in its place" in line and "cannot make the log again" in line


def test_a_link_where_earlier_versions_kept_vectors_is_left_alone(
    home: Path, tmp_path: Path
) -> None:
    """A replay removes the folder of vector files earlier versions kept, never a link."""
    outside = tmp_path / "outside"
    (home / "vectors").mkdir()
    before = plant(home, "vectors", outside)  # a link to a folder
    ok("replay")
    untouched(outside, before)
    assert (home / "vectors").is_symlink()


def test_a_linked_database_of_another_application_is_never_overwritten(
    home: Path, tmp_path: Path
) -> None:
    import sqlite3

    other = tmp_path / "other-app.db"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE precious (x)")
    db.execute("INSERT INTO precious VALUES ('keep me')")
    db.commit()
    db.close()
    (home / "memory.db").unlink()
    (home / "memory.db").symlink_to(other)
    before = other.read_bytes()
    for command in (("replay",), ("catch-up",), ("list",), ("verify",)):
        refused_line(invoke(*command), home / "memory.db")
    assert other.read_bytes() == before
    assert not Path(f"{other}-wal").exists() and not Path(f"{other}-shm").exists()


def test_the_hook_error_log_is_never_written_through_a_link(
    memlog_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from memlog.hooks.common import log_error

    memlog_home.mkdir()
    for target in (tmp_path / "exists.log", tmp_path / "not-yet.log"):
        if target.name == "exists.log":
            target.write_text("theirs\n")
        (memlog_home / "hook-errors.log").unlink(missing_ok=True)
        (memlog_home / "hook-errors.log").symlink_to(target)
        log_error(Home(memlog_home), "SessionStart: something failed")
        assert f"{memlog_home / 'hook-errors.log'} {REFUSED}" in capsys.readouterr().err
    assert (tmp_path / "exists.log").read_text() == "theirs\n"
    assert not (tmp_path / "not-yet.log").exists()


def test_the_crash_log_is_never_written_through_a_link(memlog_home: Path, tmp_path: Path) -> None:
    from memlog.errors import record_crash

    memlog_home.mkdir()
    (memlog_home / "errors.log").symlink_to(tmp_path / "elsewhere.log")
    line = record_crash(RuntimeError("boom"), memlog_home / "errors.log")
    assert line == "internal error: RuntimeError: boom"
    assert not (tmp_path / "elsewhere.log").exists()


def test_last_injection_is_never_written_through_a_link(home: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.json"
    outside.write_text("theirs")
    (home / ".last-injection.json").unlink(missing_ok=True)
    (home / ".last-injection.json").symlink_to(outside)
    project = tmp_path / "project"
    project.mkdir()
    result = invoke("inject", "--project-root", str(project), "--limit", "5", "--global-store",
                    str(home))  # fmt: skip
    assert result.exit_code == 0, result.output
    assert f".last-injection.json not written: {home / '.last-injection.json'} {REFUSED}" in (
        result.stderr
    )
    assert outside.read_text() == "theirs"


@pytest.mark.parametrize("lock", ["extraction.lock", ".sync.lock", ".adopt.lock"])
def test_locks_are_never_taken_through_a_link(memlog_home: Path, tmp_path: Path, lock: str) -> None:
    memlog_home.mkdir()
    (memlog_home / lock).symlink_to(tmp_path / "target")
    with pytest.raises(HomeError, match=REFUSED):
        with locking.locked(memlog_home / lock):
            pass
    assert not (tmp_path / "target").exists()


def test_state_stamps_and_markers_are_never_followed(memlog_home: Path, tmp_path: Path) -> None:
    from memlog.hooks import claims, recorder, sessions

    memlog_home.mkdir()
    target = tmp_path / "stamp"
    target.write_text("theirs")
    os.utime(target, (1, 1))
    (memlog_home / ".sweep-started").symlink_to(target)
    with pytest.raises(HomeError, match=REFUSED):
        sessions.start_sweep(Home(memlog_home), 1000.0)
    assert target.stat().st_mtime == 1 and target.read_text() == "theirs"

    folder = tmp_path / "folder"
    folder.mkdir()
    (memlog_home / ".hook-claims").symlink_to(folder)
    assert claims.claim(Home(memlog_home), {"session_id": "s1", "source": "startup"}) is True
    (memlog_home / ".recording").symlink_to(folder)
    with pytest.raises(HomeError, match=REFUSED):
        recorder.mark(Home(memlog_home))
    assert list(folder.iterdir()) == []


def test_planted_temporary_files_are_never_written_through(
    memlog_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The old temporary names (``.<name>.<pid>.tmp``) were guessable: a link planted there
    was written through, then renamed into place.  Now the name is random and the file is
    made new, without following a link even when its name is guessed."""
    memlog_home.mkdir()
    target = tmp_path / "target"
    target.write_text("theirs")
    for pid in (os.getpid(), *range(os.getpid() + 1, os.getpid() + 5)):
        (memlog_home / f".heuristics.md.{pid}.tmp").symlink_to(target)
    write_files(Home(memlog_home), {"heuristics.md": "# Heuristics\n"}, MarkdownState())
    assert (memlog_home / "heuristics.md").read_text() == "# Heuristics\n"
    assert not (memlog_home / "heuristics.md").is_symlink() and target.read_text() == "theirs"

    guessed = memlog_home / ".patterns.md.guessed.tmp"
    guessed.symlink_to(target)
    monkeypatch.setattr(files, "temp_name", lambda path: guessed)
    with pytest.raises(HomeError, match=REFUSED):
        write_files(Home(memlog_home), {"patterns.md": "# Patterns\n"}, MarkdownState())
    assert target.read_text() == "theirs" and not (memlog_home / "patterns.md").exists()
    assert ".markdown-state.json"


def test_a_markdown_backup_is_never_written_through_a_link(memlog_home: Path) -> None:
    memlog_home.mkdir()
    (memlog_home / "patterns.md").write_text("edited by hand\n")
    notes = write_files(Home(memlog_home), {"patterns.md": "# Patterns\n"}, MarkdownState())
    (backup,) = memlog_home.glob("patterns.md.edited-*.bak")
    assert backup.read_text() == "edited by hand\n" and "kept a copy" in notes[0]


def test_a_link_anywhere_on_the_way_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "home"
    (root / "projects").mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / "projects" / "p").symlink_to(elsewhere)
    with pytest.raises(HomeError, match=f"{root / 'projects' / 'p'} {REFUSED}"):
        files.atomic_write(root / "projects" / "p" / "branches" / "b.md", b"x", root)
    assert list(elsewhere.iterdir()) == []
    linked_home = tmp_path / "linked-home"
    linked_home.symlink_to(root)  # the home itself may be a link: the user chose it
    files.atomic_write(linked_home / "a.md", b"x", linked_home)
    assert (root / "a.md").read_bytes() == b"x"
