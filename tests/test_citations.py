"""What a lesson cites of its project's code, and whether the working tree still has it:
files by git ls-files, symbols by git grep -w, answers cached per commit."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from memlog import citations
from memlog.citations import Cited, Tree, cited
from memlog.tests.support import FIXTURES


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                   check=True, capture_output=True)  # fmt: skip


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    (root / "src" / "billing").mkdir(parents=True)
    (root / "src" / "billing" / "invoice.py").write_text("def render_total(x):\n    return x\n")
    (root / "src" / "csv_reader.py").write_text("class CsvReader:\n    pass\n")
    (root / "README.md").write_text("# shop\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "one")
    return root


@pytest.mark.parametrize(
    ("text", "details", "references", "files", "symbols"),
    [
        ("Keep `src/billing/invoice.py` free of I/O.", [], [], ["src/billing/invoice.py"], []),
        ("The fix lives in hooks/session_start.py, see `_render_block()`.", [], [],
         ["hooks/session_start.py"], ["_render_block"]),
        ("Call `Lexicon.score()` and `memlog search`; read `README.md`.", [], [],
         ["README.md"], ["score"]),
        ("Nothing cited here, and/or there: see https://x.io/a/b.py or /etc/hosts.", [], [], [],
         []),
        ("Prose.", ["Observed in: generators/_md_insert.py _render_block", "Cost: 3 days"],
         ["docs/spec.md", "Feature #12"], ["generators/_md_insert.py", "docs/spec.md"],
         ["_render_block"]),
        ("A folder: `src/billing/` and a line `src/x.py:12`.", [], [], ["src/billing/", "src/x.py"],
         []),
        ("`CsvReader` is kept, `True` and `x` are not symbols.", [], [], [], ["CsvReader"]),
    ],
)  # fmt: skip
def test_what_a_lesson_cites(
    text: str, details: list[str], references: list[str], files: list[str], symbols: list[str]
) -> None:
    assert cited(text, "", details, references) == Cited(tuple(files), tuple(symbols))


def test_a_real_bank_cites_its_own_files() -> None:
    """The 265 entries of a real knowledge bank: its ``Observed in`` paths are found."""
    from memlog.projections.markdown_view.kb_parser import parse_file

    bank = FIXTURES / "knowledge-bank-08a38d02"
    found = [
        cited(e.description, "", [f"{k}: {v}" for k, v in e.metadata])
        for path in sorted(bank.glob("*.md")) for e in parse_file(path).entries
    ]  # fmt: skip
    files = [f for c in found for f in c.files]
    assert len(files) >= 20 and all(not f.startswith(("/", "http")) for f in files)


def test_the_tree_resolves_paths_names_folders_and_symbols(repo: Path, tmp_path: Path) -> None:
    tree = Tree(repo, cache=tmp_path / "cache")
    lessons = [
        Cited(("src/billing/invoice.py",), ()),
        Cited(("billing/invoice.py", "invoice.py", "src/billing/"), ("render_total",)),
        Cited(("src/gone.py",), ()),
        Cited(("src/gone.py",), ("CsvReader",)),  # the code still exists: not stale
        Cited((), ("gone_function",)),  # cites no file: never stale
    ]
    checked = tree.check(lessons)
    assert [c.stale for c in checked] == [False, False, True, False, False]
    assert checked[2].mark() == "refers to src/gone.py, gone" and checked[3].partly
    assert checked[4].gone_symbols == ("gone_function",) and checked[4].partly


def test_answers_are_cached_per_commit(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    lesson = Cited(("src/csv_reader.py",), ("CsvReader",))
    assert not Tree(repo, cache=cache).check([lesson])[0].stale

    def no_git(argv: list[str], deadline: float) -> None:
        raise AssertionError(f"git ran: {argv}")

    monkeypatch.setattr(citations, "quick_output", no_git)
    assert not Tree(repo, cache=cache).check([lesson])[0].stale  # the same commit: no git
    monkeypatch.undo()
    git(repo, "rm", "-q", "src/csv_reader.py")
    git(repo, "commit", "-qm", "two")
    assert Tree(repo, cache=cache).check([lesson])[0].stale  # a new commit asks git again


def test_a_tree_that_cannot_answer_in_time_marks_nothing(repo: Path, tmp_path: Path) -> None:
    tree = Tree(repo, cache=tmp_path / "cache")
    (checked,) = tree.check([Cited(("src/gone.py",), ())], deadline=0.0)
    assert not checked.stale and not checked.gone_files
    assert not Tree(tmp_path, cache=tmp_path / "cache").usable  # no repository
