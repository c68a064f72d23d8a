"""The workspace: the home and one project's configuration, resolved once."""

from __future__ import annotations

from pathlib import Path

from memlog.config import Config
from memlog.home import Home
from memlog.vocabulary import DEFAULT_SPACES
from memlog.workspace import Workspace


def project(tmp_path: Path, front_matter: str = "") -> Path:
    root = tmp_path / "alpha"
    (root / ".claude").mkdir(parents=True)
    (root / "src" / "deep").mkdir(parents=True)
    if front_matter:
        (root / ".claude" / "iflow-dev.local.md").write_text(f"---\n{front_matter}\n---\n")
    return root


def test_open_finds_the_project_above_the_directory(tmp_path: Path) -> None:
    root = project(tmp_path, "memory_injection_limit: 7\nmemory_embedding_provider: openai")
    ws = Workspace.open(root / "src" / "deep", home=tmp_path / "home", env={})
    assert (ws.root, ws.project, ws.home) == (root, "alpha", Home(tmp_path / "home"))
    assert ws.config.memory_injection_limit == 7
    assert ws.space == DEFAULT_SPACES["openai"]
    assert ws.warnings == ()


def test_exact_takes_the_directory_as_the_root(tmp_path: Path) -> None:
    root = project(tmp_path)
    ws = Workspace.open(root / "src", exact=True, home=tmp_path, env={})
    assert (ws.root, ws.project) == (root / "src", "src")


def test_no_project_reads_the_environment_only(tmp_path: Path) -> None:
    ws = Workspace.at(None, env={"MEMLOG_HOME": str(tmp_path), "MEMLOG_INJECTION_LIMIT": "3"})
    assert (ws.root, ws.project, ws.home) == (None, "", Home(tmp_path))
    assert ws.config == Config(memory_injection_limit=3)


def test_bad_settings_become_warnings_and_defaults(tmp_path: Path) -> None:
    root = project(tmp_path, "memory_injection_limit: lots")
    ws = Workspace.open(root, home=tmp_path, env={})
    assert ws.config.memory_injection_limit == 20
    assert ws.warnings == ("memory_injection_limit: 'lots' is not a whole number ≥ -1; using 20",)


def test_a_project_name_can_be_given(tmp_path: Path) -> None:
    root = project(tmp_path)
    ws = Workspace(Home(tmp_path), root, Config(), project_name="elsewhere")
    assert ws.project == "elsewhere"
    assert Workspace(Home(tmp_path), None, Config()).project == ""
