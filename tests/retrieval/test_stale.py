"""Lessons whose cited files are gone: marked in the block, listed by ``memlog stale``, and no
others (a lesson of another project, one citing nothing, one whose code moved)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from memlog.api.recall import inject
from memlog.commands.cli import cli
from memlog.eventlog.events import Observed, content_hash
from memlog.eventlog.log import EventLog
from memlog.projections.fold import State, fold
from memlog.retrieval import render
from memlog.retrieval.stale import with_mark
from memlog.workspace import Workspace

GONE = "Never read `src/legacy_io.py` config at import time; load it lazily."
MOVED = "Totals come from `render_total` in src/billing/invoice.py: keep it pure."
KEPT = "The CSV reader lives in `src/csv_reader.py`; extend it, never copy it."
NONE = "Write the failing test first."
ELSEWHERE = "In the other shop, `src/legacy_io.py` is the entry point."


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                   check=True, capture_output=True)  # fmt: skip


@pytest.fixture
def shop(tmp_path: Path, memlog_home: Path) -> Path:
    root = tmp_path / "shop"
    for path, text in (
        ("src/legacy_io.py", "X = 1\n"),
        ("src/csv_reader.py", "R = 1\n"),
        ("src/billing/invoice.py", "def render_total(x):\n    return x\n"),
    ):
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "one")
    EventLog(memlog_home).append([
        Observed(name="Lazy config", description=GONE, category="anti-patterns", project="shop"),
        Observed(name="Pure totals", description=MOVED, category="patterns", project="shop"),
        Observed(name="One CSV reader", description=KEPT, category="patterns", project="shop"),
        Observed(name="Test first", description=NONE, category="heuristics", project="shop"),
        Observed(name="Other shop", description=ELSEWHERE, category="heuristics",
                 project="other-shop"),
    ])  # fmt: skip
    git(root, "rm", "-q", "src/legacy_io.py")
    git(root, "mv", "src/billing/invoice.py", "src/billing/totals.py")  # the function moved
    git(root, "commit", "-qm", "two")
    return root


def test_the_block_marks_the_lessons_whose_files_are_gone_and_no_others(
    shop: Path, memlog_home: Path
) -> None:
    result = inject(Workspace.open(shop, home=memlog_home), limit=-1)
    marked = {c.id: c.stale for c in result.chosen if c.stale}
    assert marked == {content_hash(GONE): "refers to src/legacy_io.py, gone"}
    assert "- Stale: refers to src/legacy_io.py, gone" in result.text
    assert result.text.count("Stale:") == 1  # the other shop's lesson is not judged here
    assert "stale_ms" in result.timings


def test_a_condensed_lesson_keeps_its_mark() -> None:
    event = Observed(name="Lazy config", description=GONE, category="anti-patterns",
                     details=("Instead: load it when first asked",), ts="t")  # fmt: skip
    entry = fold([event], State()).entries[event.entry_id]
    condensed = render.condensed_block(with_mark(entry, "refers to src/legacy_io.py, gone"))
    assert condensed.splitlines()[2:] == [
        "- Stale: refers to src/legacy_io.py, gone",
        "- Instead: load it when first asked",
    ]


def test_memlog_stale_lists_them_with_what_is_gone(shop: Path, memlog_home: Path) -> None:
    runner = CliRunner()
    done = runner.invoke(cli, ["stale", "--project", str(shop)])
    assert done.exit_code == 0, done.output
    assert done.output.splitlines() == [
        f"{content_hash(GONE)}  stale   Lazy config",
        "    gone: src/legacy_io.py",
    ]
    partly = json.loads(runner.invoke(cli, ["stale", "--project", str(shop), "--all",
                                            "--json"]).output)  # fmt: skip
    assert [(r["name"], r["stale"], r["gone"]) for r in partly] == [
        ("Lazy config", True, ["src/legacy_io.py"]),
        ("Pure totals", False, ["src/billing/invoice.py"]),  # render_total is still found
    ]


def test_memlog_stale_outside_a_project_says_so(
    tmp_path: Path, memlog_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    EventLog(memlog_home).append([Observed(name="x", description=NONE, category="patterns")])
    lone = tmp_path / "lone"
    lone.mkdir()
    monkeypatch.chdir(lone)
    done = CliRunner().invoke(cli, ["stale"])
    assert done.exit_code == 2 and "not in a project" in done.output
