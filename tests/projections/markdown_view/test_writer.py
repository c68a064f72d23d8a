"""The markdown writer keeps hand edits, and knows its own half-finished writes."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from memlog.commands.cli import cli
from memlog.home import Home
from memlog.projections.markdown_view.writer import (
    FORMAT,
    MarkdownState,
    digest,
    load_state,
    save_state,
    write_files,
)

OLD, NEW, NEWER = "old text\n", "new text\n", "newer text\n"


def written(folder: Path, **files: str) -> MarkdownState:
    """The files as memlog last wrote them, recorded in the state."""
    state = MarkdownState()
    for rel, text in files.items():
        (folder / rel).write_text(text)
        state.files[rel] = digest(text.encode())
    save_state(Home(folder), state)
    return state


def backups(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("*.bak"))


def test_a_hand_edit_is_kept_as_a_backup(tmp_path: Path) -> None:
    state = written(tmp_path, **{"a.md": OLD})
    (tmp_path / "a.md").write_text("edited by a person\n")
    notes = write_files(Home(tmp_path), {"a.md": NEW}, state)
    assert notes and "edited by hand" in notes[0] and len(backups(tmp_path)) == 1
    assert (tmp_path / "a.md").read_text() == NEW and state.pending == {}


def test_a_write_cut_short_is_not_taken_for_a_hand_edit(tmp_path: Path) -> None:
    """A writer killed after it wrote ``a.md`` but before it recorded it: the next one
    finds NEW where the state says OLD, and knows NEW from the state's pending record."""
    state = written(tmp_path, **{"a.md": OLD, "b.md": OLD})
    state.pending = {"a.md": digest(NEW.encode()), "b.md": digest(NEW.encode())}
    save_state(Home(tmp_path), state)
    (tmp_path / "a.md").write_text(NEW)  # b.md was not reached
    again = load_state(Home(tmp_path))
    assert write_files(Home(tmp_path), {"a.md": NEWER, "b.md": NEWER}, again) == []
    assert backups(tmp_path) == []
    assert [(tmp_path / n).read_text() for n in ("a.md", "b.md")] == [NEWER, NEWER]
    assert again.pending == {} and again.files["a.md"] == digest(NEWER.encode())


def test_pending_is_on_disk_until_the_position_is_recorded(tmp_path: Path) -> None:
    """``write_files`` saves what it is about to write; ``write_markdown`` clears it with
    the position, so between the two a crash leaves the record the next writer reads."""
    state = written(tmp_path, **{"a.md": OLD, "b.md": OLD})
    write_files(Home(tmp_path), {"a.md": NEW, "b.md": OLD}, state)  # b.md unchanged: not pending
    assert load_state(Home(tmp_path)).pending == {"a.md": digest(NEW.encode())}
    assert state.pending == {}


def test_files_an_older_memlog_wrote_are_all_written_again(memlog_home: Path) -> None:
    """The same entries render differently once the format changes: the next catch-up
    writes every file again (they are memlog's own: no backup), and verify finds no drift."""
    store = Path(__file__).parents[2] / "retrieval/fixtures/memory_py/global-store"
    original = (store / "heuristics.md").read_text()
    assert CliRunner().invoke(cli, ["import", str(store / "heuristics.md")]).exit_code == 0
    older = original.replace("2026-02-14", "2026-11-24").replace("2026-02-20", "2026-11-24")
    state = load_state(Home(memlog_home))
    (memlog_home / "heuristics.md").write_text(older + "- Keywords: profile, slow\n")
    state.files["heuristics.md"] = digest((memlog_home / "heuristics.md").read_bytes())
    state.format = 0  # as memlog wrote it before the format was recorded
    save_state(Home(memlog_home), state)
    done = CliRunner().invoke(cli, ["verify", "--json"])
    assert done.exit_code == 0, done.output
    assert "2026-02-14" in (memlog_home / "heuristics.md").read_text()
    assert "Keywords" not in (memlog_home / "heuristics.md").read_text()
    assert backups(memlog_home) == [] and load_state(Home(memlog_home)).format == FORMAT
