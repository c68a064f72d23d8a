"""The README's Quick start: two commands, the second is what CI runs, the first works on a
fresh machine whose system Python is externally managed (PEP 668)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from memlog.tests.support import REPO

NOT_SOURCES = shutil.ignore_patterns(
    ".git", "__pycache__", "*.egg-info", "build", "dist", ".*_cache", ".hypothesis", ".venv",
    "test-output",
)  # fmt: skip


def quick_start() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```sh\n(.*?)```", section, re.S)]


def test_the_quick_start_is_two_one_line_commands_and_ci_runs_the_second() -> None:
    first, second = quick_start()
    assert "\n" not in first and "\n" not in second
    assert "venv" in first and "memlog inject" in first  # works where pip may not install
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert ci[-1] == second


def system_python() -> str:
    python = shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin")
    if python is None:
        pytest.skip("no system python3")
    probe = "import sys, pip; assert sys.version_info >= (3, 11)"
    if subprocess.run([python, "-c", probe], capture_output=True, check=False).returncode:
        pytest.skip(f"{python} is not Python 3.11+ with pip")
    return python


@pytest.mark.slow
def test_the_first_command_works_on_a_fresh_machine(tmp_path: Path) -> None:
    """Verbatim, with the system's python3 and nothing of this test run's environment."""
    python = system_python()
    clone = tmp_path / "clone"
    shutil.copytree(REPO, clone, ignore=NOT_SOURCES)
    first, _ = quick_start()
    env = {
        "PATH": f"{Path(python).parent}:/usr/bin:/bin",
        "HOME": str(tmp_path / "home"),
        "LANG": "C.UTF-8",
        **{k: v for k, v in os.environ.items() if k.startswith(("PIP_", "SSL_", "REQUESTS_"))},
    }
    done = subprocess.run(
        ["sh", "-c", first], cwd=clone, env=env, capture_output=True, text=True, timeout=900,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "9 entries in 3 files: appended" in done.stdout
    assert "## Engineering Memory (from knowledge bank)" in done.stdout
    assert "semantic: active" in done.stdout  # the bundled model ranked: no key, no network
