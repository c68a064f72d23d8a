"""The package's layering, held by tests so it cannot rot.

Data flows log → fold → views → capture / retrieval → interfaces, and the
imports follow it: each layer imports only itself and the layers before it
(function-level imports included).  Nor does any module import, through any
chain, one that imports it back: an import circle ties modules that should
stand one below the other.  The commands that only read stay light: their
import sets leave numpy, httpx, yaml and the MCP SDK out.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from memlog.tests.support import REPO

#: the layers, in the order data flows; a module sits in the first whose prefix it has
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    (
        "foundations",
        (
            "memlog.errors", "memlog.config", "memlog.home", "memlog.project", "memlog.files",
            "memlog.locking",
            "memlog.git", "memlog.vocabulary", "memlog.spawn", "memlog.digests",
            "memlog.claude_files", "memlog.untrusted", "memlog.citations",
        ),
    ),
    ("eventlog", ("memlog.eventlog",)),
    ("projections", ("memlog.projections",)),
    ("providers", ("memlog.embeddings", "memlog.keywords", "memlog.llm")),
    ("sync", ("memlog.sync",)),
    ("workspace", ("memlog.workspace",)),
    ("capture", ("memlog.capture",)),
    ("retrieval", ("memlog.retrieval",)),
    ("api", ("memlog.api",)),
    (
        "interfaces",
        (
            "memlog.commands", "memlog.hooks", "memlog.mcp_server", "memlog.claude_code",
            "memlog.ui", "memlog.__main__",
        ),
    ),
]  # fmt: skip
RANK = {name: n for n, (name, _) in enumerate(LAYERS)}
#: siblings that must not know each other
APART = {("capture", "retrieval"), ("retrieval", "capture")}
#: interface packages that must not depend on the command line
NOT_ON_THE_CLI = ("memlog.hooks", "memlog.mcp_server", "memlog.claude_code", "memlog.ui")
SKIPPED_DIRS = {
    "tests", "benchmarks", "examples", "build", ".git", "__pycache__", ".venv", "test-output",
}  # fmt: skip


def layer_of(module: str) -> str | None:
    if module == "memlog":
        return "foundations"
    for name, prefixes in LAYERS:
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return name
    return None


def package_modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(REPO.rglob("*.py")):
        rel = path.relative_to(REPO)
        if SKIPPED_DIRS & set(rel.parts[:-1]):
            continue
        parts = ["memlog", *rel.with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        yield ".".join(parts), path


def imported(path: Path) -> Iterator[tuple[int, str]]:
    """Every memlog module ``path`` imports, anywhere in it, with the line."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("memlog"):
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("memlog"):
            module = node.module or ""
            for alias in node.names:  # ``from memlog.x import y``: y may be a module
                child = f"{module}.{alias.name}"
                yield node.lineno, child if _is_module(child) else module


def _is_module(name: str) -> bool:
    rel = Path(*name.split(".")[1:])
    return (REPO / rel.with_suffix(".py")).exists() or (REPO / rel / "__init__.py").exists()


def test_every_module_has_a_layer() -> None:
    unplaced = [name for name, _ in package_modules() if layer_of(name) is None]
    assert not unplaced, f"modules outside every layer: {unplaced}"


def test_imports_flow_with_the_data() -> None:
    wrong = []
    for name, path in package_modules():
        mine = layer_of(name)
        assert mine is not None
        for line, target in imported(path):
            theirs = layer_of(target)
            if theirs is None:
                wrong.append(f"{name}:{line} imports {target}, which has no layer")
            elif RANK[theirs] > RANK[mine] or (mine, theirs) in APART:
                wrong.append(f"{name}:{line} ({mine}) imports {target} ({theirs})")
            elif name.startswith(NOT_ON_THE_CLI) and target.startswith("memlog.commands"):
                wrong.append(f"{name}:{line} imports the command line ({target})")
    assert not wrong, "\n".join(wrong)


def test_the_layer_check_catches_a_wrong_import(tmp_path: Path) -> None:
    """The check above can fail: an upward import in a module is found."""
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from memlog.api import recall\n")
    found = [(line, target) for line, target in imported(bad)]
    assert found == [(2, "memlog.api.recall")]
    assert RANK[layer_of("memlog.api.recall") or ""] > RANK["projections"]


# -- no import circle ------------------------------------------------------------------------------

Graph = dict[str, dict[str, int]]


def import_graph(modules: Iterable[tuple[str, Path]]) -> Graph:
    """Each module's imports among ``modules``, each with its first line.

    Every import counts: at the top, inside a function, under ``if TYPE_CHECKING:`` (a
    name a module needs only for its types still says which way the two depend).  An
    import of ``memlog.p.m`` also runs the package ``memlog.p`` first, so it is an edge
    to that package too, unless the importer sits inside it (the package is loaded
    before any module in it, whatever that package's ``__init__`` imports).
    """
    paths = dict(modules)
    graph: Graph = {}
    for name, path in paths.items():
        edges = graph.setdefault(name, {})
        for line, target in imported(path):
            for reached in (target, *_packages_run(target, name)):
                if reached in paths and reached != name:
                    edges.setdefault(reached, line)
    return graph


def _packages_run(target: str, importer: str) -> list[str]:
    """The packages enclosing ``target`` that importing it runs, the importer's own aside."""
    parts = target.split(".")
    enclosing = [".".join(parts[:n]) for n in range(1, len(parts))]
    return [p for p in enclosing if not importer.startswith(p + ".")]


def reached_from(graph: Graph, start: str) -> set[str]:
    """Every module an import of ``start`` loads, through any chain of imports."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        for found in graph.get(todo.pop(), {}):
            if found not in seen:
                seen.add(found)
                todo.append(found)
    return seen


def circles(graph: Graph) -> list[list[str]]:
    """The import circles of ``graph``: each set of modules that all reach one another
    (a strongly connected component of more than one module), sorted."""
    reach = {name: reached_from(graph, name) for name in graph}
    found = {
        frozenset(other for other in reach[name] if name in reach[other])
        for name in graph
        if name in reach[name]
    }
    return sorted(sorted(circle) for circle in found)


def circle_said(graph: Graph, circle: list[str]) -> str:
    """A circle as a failure names it: each of its modules and the imports that close it."""
    edges = [
        f"  {name}:{line} imports {target}"
        for name in circle
        for target, line in sorted(graph[name].items())
        if target in circle
    ]
    return "\n".join([" <-> ".join(circle), *edges])


def test_no_import_circle() -> None:
    graph = import_graph(package_modules())
    found = circles(graph)
    assert not found, "import circles:\n" + "\n".join(circle_said(graph, c) for c in found)


def test_the_circle_check_finds_a_planted_circle(tmp_path: Path) -> None:
    """Two modules that import each other (in a function, for types only) are a circle;
    one that only imports them is not in it."""
    planted = {
        "memlog.planted_a": "def f():\n    import memlog.planted_b\n",
        "memlog.planted_b": "if TYPE_CHECKING:\n    import memlog.planted_a\n",
        "memlog.planted_c": "import memlog.planted_a\n",
    }
    graph = import_graph(_written(tmp_path, planted))
    assert circles(graph) == [["memlog.planted_a", "memlog.planted_b"]]
    assert "memlog.planted_a:2 imports memlog.planted_b" in circle_said(graph, circles(graph)[0])


def test_a_package_is_run_by_an_import_of_its_modules(tmp_path: Path) -> None:
    """Importing ``memlog.p.m`` runs ``memlog.p`` first: a circle when that package imports
    the importer back; none for a module inside the package, which is loaded already."""
    planted = {
        "memlog.p": "import memlog.p.m\nimport memlog.q\n",
        "memlog.p.m": "import memlog.p.n\n",
        "memlog.p.n": "",
        "memlog.q": "def f():\n    import memlog.p.n\n",
    }
    assert circles(import_graph(_written(tmp_path, planted))) == [["memlog.p", "memlog.q"]]


def _written(folder: Path, sources: dict[str, str]) -> list[tuple[str, Path]]:
    paths = [(name, folder / f"{name}.py") for name in sources]
    for name, path in paths:
        path.write_text(sources[name])
    return paths


def test_no_module_is_over_400_lines() -> None:
    long = {
        name: n
        for name, path in package_modules()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > 400
    }
    assert not long, long


# -- what the light commands load ----------------------------------------------------------------

HEAVY = ("numpy", "httpx", "yaml", "mcp", "pydantic", "tokenizers")
PROBE = """
import json, sys
from click.testing import CliRunner
from memlog.commands.cli import cli
result = CliRunner().invoke(cli, sys.argv[1:])
print(json.dumps({"exit": result.exit_code, "output": result.output,
                  "modules": sorted(sys.modules)}))
"""


def loaded_by(home: Path, cwd: Path, *args: str) -> dict[str, object]:
    env = {**os.environ, "MEMLOG_HOME": str(home)}
    env.pop("MEMLOG_EMBEDDING_PROVIDER", None)  # the defaults, as a user has them
    env.pop("MEMLOG_EXTRACTION_PROVIDER", None)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, env=env, cwd=cwd,
        timeout=60, check=True,
    )  # fmt: skip
    found: dict[str, object] = json.loads(done.stdout)
    return found


@pytest.fixture
def written_home(tmp_path: Path) -> Path:
    from memlog.eventlog.events import Observed
    from memlog.eventlog.log import EventLog
    from memlog.projections.runner import catch_up
    from memlog.vocabulary import DEFAULT_SPACE

    home = tmp_path / "home"
    EventLog(home).append(
        [Observed(name="A lesson", description="Pin versions of tools.", category="patterns")]
    )
    catch_up(home, DEFAULT_SPACE)
    return home


@pytest.mark.parametrize("command", [["log"], ["show", "0"], ["stats"]])
def test_reading_commands_stay_light(
    written_home: Path, tmp_path: Path, command: list[str]
) -> None:
    entry = next(iter(os.listdir(written_home / "projects")))  # the view exists
    assert entry
    if command[0] == "show":
        from memlog.eventlog.events import content_hash

        command = ["show", content_hash("Pin versions of tools.")[:8]]
    found = loaded_by(written_home, tmp_path, *command)
    assert found["exit"] == 0, found["output"]
    modules: list[str] = found["modules"]  # type: ignore[assignment]
    heavy = sorted(m for m in modules if m.split(".")[0] in HEAVY)
    assert not heavy, f"memlog {' '.join(command)} loaded {heavy}"


def test_the_hook_loads_no_cli_no_http_and_without_vectors_no_numpy(
    written_home: Path, tmp_path: Path
) -> None:
    code = (
        "import json, sys\n"
        "import memlog.hooks.session_start as h\n"
        "import time\n"
        "text = h.run({'cwd': sys.argv[1]}, h.resolve_home(), time.monotonic())\n"
        "print(json.dumps([text, sorted(sys.modules)]))\n"
    )
    env = {**os.environ, "MEMLOG_HOME": str(written_home)}
    env.pop("MEMLOG_EMBEDDING_PROVIDER", None)  # no variable to parse: no yaml
    env.pop("MEMLOG_EXTRACTION_PROVIDER", None)
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, env=env,
        timeout=60, check=True,
    )  # fmt: skip
    text, modules = json.loads(done.stdout.splitlines()[-1])
    assert "Pin versions of tools." in text
    # no vector to compare and current views: the plain ranking, so no numpy either
    unwanted = sorted(
        m
        for m in modules
        if m.split(".")[0] in ("click", "httpx", "yaml", "mcp", "pydantic", "numpy")
    )
    assert not unwanted
    assert not [m for m in modules if m.startswith(("memlog.commands", "memlog.capture"))]
