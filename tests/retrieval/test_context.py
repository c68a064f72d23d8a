"""Context signals: the active feature, its first paragraph, changed files, the query."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from memlog.retrieval.context import (
    Feature,
    Signals,
    active_feature,
    changed_files,
    collect,
    compose_query,
    first_paragraph,
)

# -- context signals ----------------------------------------------------------------------------


def feature(root: Path, folder: str, status: str, mtime: float, **files: str) -> Path:
    path = root / "docs" / "features" / folder
    path.mkdir(parents=True)
    meta = {"slug": folder.split("-", 1)[1], "status": status, "lastCompletedPhase": "specify"}
    (path / ".meta.json").write_text(json.dumps(meta))
    for name, text in files.items():
        (path / f"{name}.md").write_text(text)
    os.utime(path / ".meta.json", (mtime, mtime))
    return path


def test_active_feature_is_the_newest_active_one(tmp_path: Path) -> None:
    assert active_feature(tmp_path) is None
    feature(tmp_path, "001-old", "active", 1_000_000, spec="Old work.")
    feature(tmp_path, "002-newer", "active", 3_000_000, spec="Newer work.")
    feature(tmp_path, "003-done", "completed", 9_000_000, spec="Finished work.")
    (tmp_path / "docs" / "features" / "004-broken").mkdir()
    (tmp_path / "docs" / "features" / "004-broken" / ".meta.json").write_text("{not json")
    assert active_feature(tmp_path) == Feature("newer", "specify", "Newer work.", "", "")


def test_spec_first_paragraph_is_capped_at_100_words(tmp_path: Path) -> None:
    words = [f"w{i}" for i in range(150)]
    body = " ".join(words[:12]) + "\n" + "  ".join(words[12:])
    spec = f"# Spec: Parser\n\n{body}\n\nSecond paragraph.\n\n## Scope\nx\n"
    feature(tmp_path, "001-parser", "active", 1, spec=spec, prd="The PRD paragraph.")
    found = active_feature(tmp_path)
    assert found is not None
    assert found.description == " ".join(words[:100])
    assert first_paragraph("## Only a heading\ntext") == ""
    assert first_paragraph("Intro line one\nline two\n\nnext") == "Intro line one line two"


def test_prd_is_the_fallback_description(tmp_path: Path) -> None:
    feature(tmp_path, "001-a", "active", 1, prd="# PRD\n\nWhy we build it.\n\n## Goals\n")
    assert active_feature(tmp_path) == Feature("a", "specify", "Why we build it.")
    prd = "From the PRD, which says what the feature is for."
    feature(tmp_path, "002-b", "active", 2, spec="## Only headings\n", prd=prd)
    assert active_feature(tmp_path) == Feature("b", "specify", prd, "", prd)


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-C", str(root), *args],
        check=True,
        capture_output=True,
    )


def commit(root: Path, *names: str) -> None:
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(name)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", f"add {' '.join(names)}")


def test_changed_files_from_git(tmp_path: Path) -> None:
    assert changed_files(tmp_path) == ()  # no repository
    git(tmp_path, "init", "-q")
    assert changed_files(tmp_path) == ()  # no commits
    commit(tmp_path, "first.py")
    assert changed_files(tmp_path) == ()  # HEAD~1 unreachable: no signal
    commit(tmp_path, "src/second.py")
    assert changed_files(tmp_path) == ("src/second.py",)  # HEAD~1..HEAD
    commit(tmp_path, "third.py")
    commit(tmp_path, "fourth.py", "docs/x.md")
    assert sorted(changed_files(tmp_path)) == [
        "docs/x.md",
        "fourth.py",
        "src/second.py",
        "third.py",
    ]  # HEAD~3..HEAD: the first commit is out
    commit(tmp_path, *(f"many/{i:02d}.txt" for i in range(30)))
    assert len(changed_files(tmp_path)) == 20


def test_query_composition(tmp_path: Path) -> None:
    assert collect(None).query is None
    assert collect(tmp_path).query is None  # no feature, no git: no signal at all
    assert compose_query(Signals(None, ("a.py", "b.py"))) == "Files: a.py b.py"
    signals = Signals(Feature("parser", "design", "Build it."), ("a.py",))
    assert compose_query(signals) == "parser: Build it.. Phase: design. Files: a.py"
    assert compose_query(Signals(Feature("parser", "", ""), ())) == "parser"
    feature(tmp_path, "001-parser", "active", 1, spec="Parse files.")
    git(tmp_path, "init", "-q")
    commit(tmp_path, "one.py")
    commit(tmp_path, "two.py")
    assert collect(tmp_path).query == "parser: Parse files.. Phase: specify. Files: two.py"
