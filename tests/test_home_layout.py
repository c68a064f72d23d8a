"""One object knows a home's layout: ``memlog.home.Home``.

The modules below the interfaces (the log, the views, sync, capture and
retrieval) take a ``Home`` and ask it where things are; none joins a name onto
a home's path itself, nor keeps a home-level name of its own.  A module may
still name what it keeps inside a folder the ``Home`` gave it: a device's
segments and their high-water mark, the index's packed files, the sync
repository's own git files.
"""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from memlog.home import Home
from memlog.tests.support import REPO

#: where a home's path is never taken apart or added to outside ``Home``
GUARDED = ("eventlog", "projections", "sync", "capture", "retrieval")
#: what a home's path goes by: the home, its root, its log folder
HOMEISH = re.compile(r"(^|\.)(home(\.root|\.events)?|events_dir|home_dir)$")
#: calls whose string argument names a file or folder
NAMING_CALLS = {"Path", "with_name", "joinpath", "glob", "rglob", "with_suffix"}
#: the homes a guarded module may make: a new home aside (never one rebuilt from a path
#: it was given), and the edges where a caller's path becomes a home once
MADE = {
    "eventlog/log.py": "EventLog: the log of the home it is given, made a Home once",
    "projections/runner.py": "catch_up: the views' entry point, made a Home once",
    "projections/audit.py": "the rebuilds aside, each a new home in a temporary folder",
}


_TAG = "\N{BULLET}"


def layout_names() -> set[str]:
    """Every name a home holds at its top or in ``events/``, as ``Home`` says."""
    home = Home(Path("/h"))
    paths = [p for n, p in vars(home).items() if n != "root"]
    for name, _ in inspect.getmembers(Home):
        if name in ("device", "segment", "moving", "sync_repo_aside", "db_aside", "markdown"):
            paths.append(getattr(home, name)(_TAG))
    names = set()
    for path in paths:
        parts = path.relative_to("/h").parts
        names.add(parts[0])
        if parts[0] == "events" and len(parts) > 1:
            names.add(parts[1])
    return {n.removesuffix(_TAG) for n in names} - {""}


def guarded_sources() -> Iterator[tuple[str, str]]:
    for package in GUARDED:
        for path in sorted((REPO / package).rglob("*.py")):
            yield str(path.relative_to(REPO)), path.read_text(encoding="utf-8")


def arithmetic(source: str, names: set[str]) -> Iterator[tuple[int, str]]:
    """Each place ``source`` builds a path of a home itself, with why."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            if HOMEISH.search(ast.unparse(node.left)):
                yield node.lineno, f"joins onto a home's path: {ast.unparse(node)}"
            for side in (node.left, node.right):
                if _names_layout(side, names):
                    yield node.lineno, f"joins a name of the home: {ast.unparse(node)}"
        elif isinstance(node, ast.Call) and _call_name(node) in NAMING_CALLS:
            if any(_names_layout(arg, names) for arg in node.args):
                yield node.lineno, f"names a file of the home: {ast.unparse(node)}"
        elif isinstance(node, ast.Assign | ast.AnnAssign) and _names_layout(node.value, names):
            yield node.lineno, f"keeps a name of the home: {ast.unparse(node)}"


def _call_name(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _names_layout(node: ast.expr | None, names: set[str]) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value in names or any(
            node.value.startswith(n) for n in names if n.endswith("-")
        )
    if isinstance(node, ast.JoinedStr) and node.values:
        first = node.values[0]
        return isinstance(first, ast.Constant) and _names_layout(first, names)
    return False


def homes_made(source: str) -> list[int]:
    """The lines of ``source`` that make a ``Home`` from a path."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            text = ast.unparse(node.func)
            if text in ("Home", "Home.of"):
                found.append(node.lineno)
    return found


def test_home_names_what_a_home_holds() -> None:
    names = layout_names()
    assert {"events", "memory.db", "index", "projects", "sync.git", ".lock", ".spool"} <= names
    assert {"quarantine.jsonl", ".device", ".clock", ".redaction.journal"} <= names


def test_no_guarded_module_builds_a_home_path_itself() -> None:
    names = layout_names()
    found = [
        f"{rel}:{line}: {why}"
        for rel, source in guarded_sources()
        for line, why in arithmetic(source, names)
    ]
    assert not found, "\n".join(found)


def test_guarded_modules_make_a_home_only_where_one_begins() -> None:
    made = {rel: homes_made(source) for rel, source in guarded_sources()}
    unexpected = {rel: lines for rel, lines in made.items() if lines and rel not in MADE}
    assert not unexpected, unexpected


@pytest.mark.parametrize(
    "planted",
    [
        'def f(home):\n    return home / "events"\n',
        "def f(log, name):\n    return log.events_dir / name\n",
        "def f(home):\n    return home.root / 'index'\n",
        'LOCK_NAME = ".lock"\n',
        'def f(folder):\n    return folder / "memory.db"\n',
        'def f(folder, pid):\n    return folder / f".memory.db.rebuild-{pid}"\n',
        'def f(path):\n    return path.with_name("quarantine.jsonl")\n',
    ],
)
def test_the_check_finds_a_planted_path(planted: str) -> None:
    assert list(arithmetic(planted, layout_names())), planted


def test_the_check_passes_a_folder_s_own_names() -> None:
    kept = 'def f(home, name):\n    return home.device(name) / "00000001.jsonl"\n'
    assert not list(arithmetic(kept, layout_names()))
    assert homes_made("def f(p):\n    return Home.of(p)\n") == [2]
