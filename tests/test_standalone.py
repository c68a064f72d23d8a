"""The repository stands alone: its tests and benchmarks read nothing beside it.

A user's clone has no folder beside it: every fixture lives in ``tests/fixtures/`` with a
README saying where it comes from.  Statically, no test or benchmark names a path
beside the repository or climbs out of it; while the suite runs, ``standalone``'s audit
hook fails a test that reads there (``conftest.py``).  ``.ci/run`` runs the README's
test command in a fresh clone, which proves the rest.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from memlog.tests import standalone
from memlog.tests.support import FIXTURES, REPO

#: where tests and benchmarks live, and the folders in them that are not code of ours
SCANNED = ("tests", "benchmarks")
#: the folder a fixture lives in: named by a path that climbs out of the repository
#: (``../…``) or starts from the root, it is read beside the repository (other absolute
#: paths, a payload's ``cwd`` say, are never read: the audit hook sees reads)
FIXTURE_FOLDER = "fixtures"


def names_outside(text: str) -> bool:
    """Whether ``text`` is a path to fixtures outside the repository."""
    return FIXTURE_FOLDER in text and (text.startswith("..") or text.startswith("/"))


def sources() -> Iterator[Path]:
    for top in SCANNED:
        for path in sorted((REPO / top).rglob("*.py")):
            parts = set(path.relative_to(REPO).parts)
            if not {".venv", "__pycache__", "fixtures"} & parts and path != Path(__file__):
                yield path


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the string constants that are docstrings (prose, not paths read)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def _levels(node: ast.expr) -> int | None:
    """How many folders up from the file ``node`` goes (``Path(__file__).parents[1]``: 2),
    None when it does not start from ``__file__``."""
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Attribute):  # .resolve(), .absolute()
            return _levels(node.func.value)
        mentions = any(isinstance(a, ast.Name) and a.id == "__file__" for a in node.args)
        return 0 if mentions else None
    if isinstance(node, ast.Attribute) and node.attr == "parent":
        below = _levels(node.value)
        return None if below is None else below + 1
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute):
        if node.value.attr == "parents" and isinstance(node.slice, ast.Constant):
            below = _levels(node.value.value)
            return None if below is None else below + int(node.slice.value) + 1
    return None


def escapes(path: Path, source: str) -> list[str]:
    """Where ``source`` (the text of the file at ``path``) reaches beside the repository."""
    tree = ast.parse(source)
    depth = len(path.relative_to(REPO).parts)  # the file, then each folder up to REPO
    prose = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        where = f"{path.relative_to(REPO)}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose:
            if names_outside(node.value):
                found.append(f"{where} names {node.value!r}")
        elif isinstance(node, ast.Attribute) and node.attr == "parent":
            if isinstance(node.value, ast.Name) and node.value.id == "REPO":
                found.append(f"{where} goes above the repository (REPO.parent)")
        if isinstance(node, ast.Attribute | ast.Subscript):
            up = _levels(node)
            if up is not None and up > depth:
                found.append(f"{where} climbs {up} folders up from a file {depth} deep")
    return found


def test_no_test_or_benchmark_reaches_beside_the_repository() -> None:
    found = [line for path in sources() for line in escapes(path, path.read_text("utf-8"))]
    assert not found, "\n".join(found)


@pytest.mark.parametrize(
    "code",
    [
        'FIXTURES = REPO.parent / "beside" / "fixtures"',
        'BANK = Path(__file__).resolve().parents[2] / "bank"',
        "BANK = Path(__file__).parent.parent.parent / 'bank'",
        'BANK = Path("/work/beside/fixtures/bank")',
        'BANK = Path("../beside/fixtures") / "bank"',
    ],
)
def test_the_check_finds_a_path_beside_the_repository(code: str) -> None:
    """The static check can fail: each of these, in a test module, is found."""
    assert escapes(REPO / "tests" / "test_x.py", code)


def test_the_check_passes_paths_inside_the_repository() -> None:
    ok = (
        'HERE = Path(__file__).resolve().parents[1] / "fixtures"\n'
        'STORE = Path(__file__).parent / "retrieval"\n'
        'def f():\n    """Read what ../beside/fixtures held, once."""\n'
        'HOSTILE = "../../etc/passwd"\n'
    )
    assert escapes(REPO / "tests" / "test_x.py", ok) == []


def test_every_fixture_folder_says_where_it_comes_from() -> None:
    folders = [p for p in sorted(FIXTURES.iterdir()) if p.is_dir()]
    assert {p.name for p in folders} >= {
        "claude-code-transcripts", "embeddings", "iflow-features-08a38d02",
        "knowledge-bank-08a38d02", "knowledge-bank-6bb5ea25", "knowledge-bank-ab2c282a",
    }  # fmt: skip
    index = (FIXTURES / "README.md").read_text(encoding="utf-8")
    for folder in folders:
        readme = (folder / "README.md").read_text(encoding="utf-8")
        assert f"`{folder.name}/`" in index, folder.name
        assert "commit" in readme or "computed" in readme, folder.name


def test_a_read_beside_the_repository_is_noted(tmp_path: Path) -> None:
    """The run's audit hook notes a read beside the repository, and only there."""
    repo, beside = tmp_path / "clone", tmp_path / "beside" / "fixtures"
    (repo / "tests").mkdir(parents=True)
    beside.mkdir(parents=True)
    (beside / "bank.md").write_text("x")
    (repo / "tests" / "own.md").write_text("x")
    (tmp_path / ".cache").mkdir()
    before = len(standalone.outside)
    standalone.watch(repo)
    try:
        (repo / "tests" / "own.md").read_text()
        list((tmp_path / ".cache").iterdir())
        (beside / "bank.md").read_text()
        sorted(beside.glob("*.md"))
    finally:
        standalone.watch()  # back to this repository, still on for the run
    noted = standalone.outside[before:]
    del standalone.outside[before:]  # planted here: not this test's failure
    assert [line.split(" ", 1)[0] for line in noted] == ["open", "os.scandir"], noted
    assert all(os.fspath(beside) in line for line in noted)
