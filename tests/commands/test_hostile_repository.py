"""A repository written to hurt whatever reads it: the hook, ``memlog inject``,
``memlog doctor`` and the page each read its files within bounds and answer as usual.

Each runs in a process of its own allowed 4 GiB of address space (the YAML bomb
expands to tens of gigabytes when anything walks it), so a regression fails here
rather than taking the machine's memory.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from memlog.tests.hooks.test_session_start import entry_headers, error_log, payload, seed
from memlog.tests.test_untrusted import bomb_project

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS as Linux keeps it")

HEADER = "## Engineering Memory (from knowledge bank)"
ADDRESS_SPACE = 4 << 30


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def environment(home: Path, user_home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLOG_")}
    env.update(
        MEMLOG_HOME=str(home), MEMLOG_RESIDENT_MINUTES="0", MEMLOG_EMBEDDING_PROVIDER="hashing",
        MEMLOG_EXTRACTION_PROVIDER="off", HOME=str(user_home),
        MEMLOG_CACHE_DIR=os.environ.get("MEMLOG_CACHE_DIR", str(user_home / "cache")),
    )  # fmt: skip
    return env


def run(
    args: list[str], cwd: Path, env: dict[str, str], stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        args, cwd=cwd, env=env, input=stdin, capture_output=True, timeout=120,
        preexec_fn=_limited, check=False,
    )  # fmt: skip


def memlog(*args: str) -> list[str]:
    return [sys.executable, "-m", "memlog", *args]


def test_the_hook_answers_with_its_usual_block(memlog_home: Path, tmp_path: Path) -> None:
    seed(memlog_home, per_category=2)
    root = bomb_project(tmp_path)
    done = run(memlog("hook", "session-start"), root, environment(memlog_home, tmp_path),
               payload(root))  # fmt: skip
    assert done.returncode == 0, done.stderr
    (line,) = done.stdout.decode().splitlines()
    context = json.loads(line)["hookSpecificOutput"]["additionalContext"]
    # within its budget: past it the hook prints an empty context
    assert context.startswith(HEADER) and len(entry_headers(context)) == 6
    logged = error_log(memlog_home)
    assert "front matter refused: YAML aliases are not read; using defaults" in logged
    assert "deadline reached" not in logged


def test_inject_and_doctor_answer(memlog_home: Path, tmp_path: Path) -> None:
    seed(memlog_home, per_category=2)
    root = bomb_project(tmp_path)
    env = environment(memlog_home, tmp_path)
    injected = run(memlog("inject", "--project-root", str(root)), root, env)
    assert injected.returncode == 0, injected.stderr
    assert injected.stdout.decode().startswith(HEADER)
    warned = injected.stderr.decode()
    assert "aliases are not read" in warned and len(warned) < 1000
    doctor = run(memlog("doctor"), root, env)
    assert doctor.returncode in (0, 1), doctor.stderr
    said = doctor.stdout.decode() + doctor.stderr.decode()
    assert "aliases are not read" in said and len(said) < 20_000


def test_the_page_shows_what_the_next_session_would_get(memlog_home: Path, tmp_path: Path) -> None:
    seed(memlog_home, per_category=2)
    root = bomb_project(tmp_path)
    script = (
        "import sys; from pathlib import Path; from starlette.testclient import TestClient;"
        "from memlog.ui.app import create_app; from memlog.workspace import Workspace;"
        "app = create_app(Workspace.open(Path(sys.argv[1])), 't0ken', 48124, Path(sys.argv[2]));"
        "c = TestClient(app, base_url='http://127.0.0.1:48124'); c.cookies.set('memlog_ui_48124',"
        " 't0ken'); r = c.get('/next', params={'dir': sys.argv[1]}); print(r.status_code);"
        "print('Engineering Memory (from knowledge bank)' in r.text)"
    )
    done = run([sys.executable, "-c", script, str(root), str(tmp_path / "snapshots")], root,
               environment(memlog_home, tmp_path))  # fmt: skip
    assert done.stdout.decode().split() == ["200", "True"], done.stderr.decode()[-2000:]


def test_git_files_that_are_fifos_or_huge_leave_the_hook_its_usual_block(
    memlog_home: Path, tmp_path: Path
) -> None:
    """A folder's ``.git`` is anyone's too: a HEAD that is a FIFO (a read that never ends)
    and a ``packed-refs`` of 100 MB are not read, by the branch or the stale marks."""
    from memlog.citations import head_of
    from memlog.git import current_branch

    seed(memlog_home, per_category=2)
    root = tmp_path / "fifo"
    (root / ".git").mkdir(parents=True)
    os.mkfifo(root / ".git" / "HEAD")
    assert head_of(root) is None and current_branch(root) == ""
    other = tmp_path / "huge"
    (other / ".git").mkdir(parents=True)
    (other / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (other / ".git" / "index").write_bytes(b"")
    with (other / ".git" / "packed-refs").open("wb") as big:
        big.truncate(100 << 20)  # sparse: no disk used
    assert head_of(other) is None and current_branch(other) == "main"
    for folder in (root, other):
        done = run(memlog("hook", "session-start"), folder, environment(memlog_home, tmp_path),
                   payload(folder))  # fmt: skip
        assert done.returncode == 0, done.stderr
        context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
        assert context.startswith(HEADER) and len(entry_headers(context)) == 6
