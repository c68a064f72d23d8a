"""``memlog inject --project-root P --limit N --global-store G`` with semantic memory off
prints what iflow's memory.py v2.11 printed, byte for byte: on the first run, which adopts
a global store memlog has never seen, and on every run after (``fixtures/memory_py``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from memlog.api.adoption import STORE_FILES
from memlog.commands.cli import cli
from memlog.eventlog.events import Observed
from memlog.eventlog.log import EventLog
from memlog.projections.markdown_view.kb_parser import parse_file
from memlog.retrieval.legacy import parse_legacy
from memlog.tests.support import FIXTURES
from memlog.vocabulary import LESSONS_NOTE

RECORDED = Path(__file__).parent / "fixtures" / "memory_py"
STORE = RECORDED / "global-store"
CASES = [(store, limit) for store in ("local", "global") for limit in (20, 9, 5)]
#: what Claude Code shows of a hook's context inline (a longer one becomes a 2 KB preview)
HOOK_CAP = 10_000


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A project with the knowledge bank memory.py read, and semantic memory off."""
    root = tmp_path / "project"
    shutil.copytree(FIXTURES / "knowledge-bank-6bb5ea25", root / "docs" / "knowledge-bank")
    (root / ".claude").mkdir()
    (root / ".claude" / "iflow-dev.local.md").write_text(
        "---\nmemory_semantic_enabled: false\n---\n"
    )
    return root


def global_store(tmp_path: Path, filled: bool) -> Path:
    store = tmp_path / "global-store"
    store.mkdir()
    for name in STORE_FILES if filled else ():
        shutil.copyfile(STORE / name, store / name)
    return store


def drop_in(root: Path, limit: int, store: Path) -> Result:
    args = ["--project-root", str(root), "--limit", str(limit), "--global-store", str(store)]
    done = CliRunner().invoke(cli, ["inject", *args])
    assert done.exit_code == 0, done.output
    return done


@pytest.mark.ac("023:AC-1.3", "023:AC-1.4", "023:AC-1.5")
@pytest.mark.parametrize(("case", "limit"), CASES, ids=[f"{c}-{n}" for c, n in CASES])
def test_prints_what_memory_py_printed_first_run_and_after(
    root: Path, tmp_path: Path, case: str, limit: int
) -> None:
    store = global_store(tmp_path, case == "global")
    expected = (RECORDED / f"{case}-{limit}.txt").read_bytes()
    first = drop_in(root, limit, store)
    assert ("adopted the iflow global store" in first.stderr) == (case == "global")
    assert first.stdout_bytes == expected
    again = drop_in(root, limit, store)
    assert "adopted" not in again.stderr
    assert again.stdout_bytes == expected


def test_adoption_writes_the_store_back_as_memory_py_reads_it(root: Path, tmp_path: Path) -> None:
    store = global_store(tmp_path, True)
    drop_in(root, 20, store)
    adopted = [r.event for r in EventLog(store).read() if isinstance(r.event, Observed)]
    assert len(adopted) == 7 and all(e.writer and e.writer.command == "adopt" for e in adopted)
    for name in STORE_FILES:
        category = name.removesuffix(".md")
        original = parse_legacy((STORE / name).read_text(), category)  # type: ignore[arg-type]
        rewritten = parse_legacy((store / name).read_text(), category)  # type: ignore[arg-type]
        assert [(e.header, e.description, e.metadata) for e in rewritten] == [
            (e.header, e.description, e.metadata) for e in original
        ]
        dates = [e.last_observed for e in parse_file(store / name).entries]
        assert dates == [e.last_observed for e in parse_file(STORE / name).entries]
        assert all(d and d.startswith("2026-02-") for d in dates)
        assert "Keywords:" not in (store / name).read_text()
    # the files that changed (blank lines, a comment) were kept as they were
    kept = {p.name.split(".md.")[0] + ".md": p for p in store.glob("*.md.edited-*.bak")}
    assert sorted(kept) == ["heuristics.md", "patterns.md"]
    for name, backup in kept.items():
        assert backup.read_bytes() == (STORE / name).read_bytes()
    assert (store / "anti-patterns.md").read_bytes() == (STORE / "anti-patterns.md").read_bytes()


def test_the_drop_in_is_never_cut_to_a_context_budget(root: Path, tmp_path: Path) -> None:
    """memory.py printed every entry it chose however long the block: what reached the
    session was iflow's hook's business.  A budget on memlog's own injection must leave the
    drop-in's output alone."""
    expected = (RECORDED / "local-20.txt").read_bytes()
    assert len(expected.decode()) > HOOK_CAP
    printed = drop_in(root, 20, global_store(tmp_path, False)).stdout_bytes
    assert printed == expected


def test_memlog_inject_says_how_it_chose(root: Path, tmp_path: Path) -> None:
    """Only the drop-in is memory.py's output alone: ``memlog inject`` (what the hook would
    inject) keeps the line that says how the entries were chosen, and the one under the
    title saying its lessons are notes, not instructions."""
    store = global_store(tmp_path, True)
    header = "## Engineering Memory (from knowledge bank)\n"
    expected = (RECORDED / "global-9.txt").read_text().replace(header, header + LESSONS_NOTE + "\n")
    done = CliRunner().invoke(cli, ["inject", str(root), "--limit", "9"], env={
        "MEMLOG_HOME": str(store)})  # fmt: skip
    assert done.exit_code == 0, done.output
    assert (
        done.stdout == expected + "*Memory: 9 entries (3 local, 6 global) | semantic: disabled*\n"
    )
