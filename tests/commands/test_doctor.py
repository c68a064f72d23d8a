"""``memlog doctor`` writes nothing: the home (and memlog's cache) are byte for byte, time
for time, what they were, whatever state the home is in."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memlog.eventlog.events import Observed
from memlog.eventlog.log import EventLog
from memlog.tests.support import REPO

Snapshot = dict[str, tuple[int, int, str, int]]


def snapshot(folder: Path) -> Snapshot:
    """Every path under ``folder``: mode, size, content digest and modification time."""
    found: Snapshot = {}
    for path in [folder, *sorted(folder.rglob("*"))] if folder.exists() else []:
        info = path.lstat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""
        found[str(path.relative_to(folder))] = (info.st_mode, info.st_size, digest,
                                                info.st_mtime_ns)  # fmt: skip
    return found


def memlog(home: Path, cache: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLOG_")}
    env.update(MEMLOG_HOME=str(home), MEMLOG_CACHE_DIR=str(cache), MEMLOG_RESIDENT_MINUTES="0",
               HOME=str(cwd))  # the defaults a user has: the local model among them  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "memlog", *args], env=env, cwd=cwd, capture_output=True,
        text=True, timeout=300, check=False,
    )  # fmt: skip


def assert_untouched(home: Path, cache: Path, cwd: Path) -> str:
    before = snapshot(home), snapshot(cache)
    done = memlog(home, cache, cwd, "doctor")
    assert done.returncode in (0, 1), done.stderr
    assert (snapshot(home), snapshot(cache)) == before
    return done.stdout


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache"


def test_a_home_in_use_is_left_byte_for_byte(tmp_path: Path, cache: Path) -> None:
    home = tmp_path / "memory"
    done = memlog(home, cache, tmp_path, "import", str(REPO / "examples" / "demo-project"))
    assert done.returncode == 0, done.stderr
    said = assert_untouched(home, cache, tmp_path)
    assert "ok       views        current with the log" in said
    assert "sha256 verified, 384 dimensions" in said  # the model was checked, and run


def test_views_behind_the_log_are_reported_not_caught_up(tmp_path: Path, cache: Path) -> None:
    home = tmp_path / "memory"
    assert (
        memlog(home, cache, tmp_path, "import", str(REPO / "examples" / "demo-project")).returncode
        == 0
    )
    lesson = Observed(name="Late", description="Appended after the views.", category="patterns")
    EventLog(home).append([lesson])
    said = assert_untouched(home, cache, tmp_path)
    assert "warn     views        behind the log" in said


def test_a_missing_home_is_not_created(tmp_path: Path, cache: Path) -> None:
    said = assert_untouched(tmp_path / "memory", cache, tmp_path)
    assert not (tmp_path / "memory").exists() and not cache.exists()
    assert "(not created yet: no memories yet" in said


def test_an_iflow_store_is_reported_not_adopted(tmp_path: Path, cache: Path) -> None:
    home = tmp_path / "memory"
    home.mkdir()
    kb = REPO / "examples" / "demo-project" / "docs" / "knowledge-bank" / "patterns.md"
    (home / "patterns.md").write_bytes(kb.read_bytes())
    said = assert_untouched(home, cache, tmp_path)
    assert "iflow store files (patterns.md) not adopted yet" in said


def test_the_hint_names_the_plugin_as_claude_code_knows_it(tmp_path: Path, cache: Path) -> None:
    said = memlog(tmp_path / "memory", cache, tmp_path, "doctor").stdout
    assert "install the plugin (/plugin install memlog@memlog) or run memlog setup" in said


def test_the_disk_line_sorts_the_home_s_files_by_what_the_home_says_they_are(
    tmp_path: Path,
) -> None:
    from memlog.api.health import disk_use
    from memlog.home import Home

    home = Home(tmp_path / "home")
    sizes = {
        home.device("d1") / "00000000000000000001.jsonl": 100,
        home.db: 40,
        home.db.with_name("memory.db-wal"): 2,
        home.legacy_vectors / "x.f32": 8,
        home.markdown("projects/p/facts.md"): 5,
        home.markdown("facts.md"): 3,
        home.index / "a.vec": 7,
        home.hook_errors: 1,
    }
    for path, size in sizes.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x" * size)
    assert disk_use(home) == {"log": 100, "memory.db": 42, "vectors": 8, "markdown": 8, "other": 8}
