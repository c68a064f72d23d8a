"""The README's Quick start: two commands, the second is what CI runs, the first works on a
fresh machine whose system Python is externally managed (PEP 668); and each of its install
lines works from a clone as it is written (pipx and uv installed from PyPI for the test)."""

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


# -- the install lines -------------------------------------------------------------------------

INSTALL_TOOLS = ("pipx", "uv")


def install_lines() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## Install\n", 1)[1].split("\n### ", 1)[0]
    return [block.strip() for block in re.findall(r"```sh\n(.*?)```", section, re.S)]


def test_the_install_lines_work_from_a_clone_and_the_pypi_name_is_only_a_future() -> None:
    assert install_lines() == ["pipx install .", "uv tool install ."]
    text = (REPO / "README.md").read_text(encoding="utf-8")
    runnable = "\n".join(re.findall(r"```sh\n(.*?)```", text, re.S))
    assert "claude-memlog" not in runnable  # not on PyPI yet: no line may say to install it
    prose = " ".join(text.split())
    assert "Once the distribution is published its name will be `claude-memlog`" in prose
    wrapper = (REPO / "plugin" / "hooks" / "run-memlog").read_text(encoding="utf-8")
    assert "pipx install ." in wrapper and "claude-memlog" not in wrapper


@pytest.fixture(scope="module")
def install_tools() -> Path:
    """pipx and uv, installed from PyPI with the system's pip into a cached venv (skipped
    when that cannot be done here)."""
    python = system_python()
    base = Path(os.environ.get("MEMLOG_TEST_CACHE") or Path.home() / ".cache" / "memlog-tests")
    venv = base / "install-tools"
    if not all((venv / "bin" / tool).exists() for tool in INSTALL_TOOLS):
        made = subprocess.run([python, "-m", "venv", "--clear", str(venv)], capture_output=True,
                              check=False)  # fmt: skip
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", *INSTALL_TOOLS]
        done = subprocess.run(pip, capture_output=True, text=True, timeout=600, check=False)
        if made.returncode or done.returncode:
            pytest.skip(f"cannot install pipx and uv from PyPI here: {done.stderr[-300:]}")
    return venv / "bin"


@pytest.mark.slow
@pytest.mark.parametrize("line", install_lines())
def test_each_install_line_works(line: str, install_tools: Path, tmp_path: Path) -> None:
    """Verbatim, in a fresh clone with a fresh home: the command lands in ~/.local/bin,
    runs, serves MCP, and the plugin's wrapper finds it there without PATH's help."""
    python = system_python()
    clone, home = tmp_path / "clone", tmp_path / "home"
    shutil.copytree(REPO, clone, ignore=NOT_SOURCES)
    home.mkdir()
    base = Path(os.environ.get("MEMLOG_TEST_CACHE") or Path.home() / ".cache" / "memlog-tests")
    env = {
        "PATH": f"{install_tools}:{Path(python).parent}:/usr/bin:/bin", "HOME": str(home),
        "LANG": "C.UTF-8", "XDG_CACHE_HOME": str(base / "install-cache"),  # pip's and uv's
        **{k: v for k, v in os.environ.items() if k.startswith(("PIP_", "SSL_", "REQUESTS_"))},
    }  # fmt: skip
    done = subprocess.run(["sh", "-c", line], cwd=clone, env=env, capture_output=True, text=True,
                          timeout=900, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    memlog = home / ".local" / "bin" / "memlog"
    version = subprocess.run([str(memlog), "--version"], capture_output=True, text=True,
                             env={**env, "PATH": "/usr/bin:/bin"}, check=False)  # fmt: skip
    assert version.stdout.startswith("memlog, version ")
    initialize = '{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}\n'
    served = subprocess.run(
        [str(memlog), "serve-mcp"], input=initialize, capture_output=True, text=True, timeout=60,
        cwd=tmp_path, env={**env, "MEMLOG_HOME": str(tmp_path / "memory")}, check=False,
    )  # fmt: skip
    assert '"serverInfo":{"name":"memlog"' in served.stdout, served.stderr
    plugin = home / ".claude" / "plugins" / "cache" / "memlog" / "memlog" / "0.2.0"
    shutil.copytree(REPO / "plugin", plugin)
    found = subprocess.run(
        ["sh", str(plugin / "hooks" / "run-memlog"), "--version"], capture_output=True, text=True,
        env={"HOME": str(home), "PATH": "/usr/bin:/bin", "CLAUDE_PLUGIN_ROOT": str(plugin)},
        check=False,
    )  # fmt: skip
    assert found.stdout == version.stdout, found.stderr


# -- the README and its pages ------------------------------------------------------------------

#: the README a newcomer reads in five minutes; everything else is a page of docs/
MAX_README_LINES = 250
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
#: a figure with a unit, as the benchmark tables give them
FIGURE = re.compile(r"\d\s?(?:ms|MB|×)(?!\w)")


def pages() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces dashes."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return {slug(m) for m in re.findall(r"(?m)^#+ (.+)$", text)}


def broken(path: Path) -> list[str]:
    """The relative links of the markdown file at ``path`` that lead nowhere: a file that
    is not there, or an anchor no heading of it gives."""
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    found = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto: …
        file, _, anchor = target.partition("#")
        where = (path.parent / file).resolve() if file else path
        if not where.exists():
            found.append(f"{path.name}: {target} (no such file)")
        elif anchor and where.suffix == ".md" and anchor not in anchors(where):
            found.append(f"{path.name}: {target} (no such heading)")
    return found


def test_the_readme_is_read_in_five_minutes() -> None:
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, len(lines)
    text = "\n".join(lines)
    for said in ("## Quick start", "## Install", "In Claude Code", "What leaves your machine",
                 "## Commands at a glance", "## Processes", "## Documentation",
                 "ToolSearch", "Node 22"):  # fmt: skip
        assert said in text, said


def test_every_relative_link_resolves() -> None:
    found = [line for page in pages() for line in broken(page)]
    assert not found, "\n".join(found)


def test_the_link_check_finds_a_broken_link(tmp_path: Path) -> None:
    """The check can fail: a missing file and a missing heading are found, a good anchor,
    a good file and an address are not."""
    planted = tmp_path / "x.md"
    page = REPO / "docs" / "page.md"
    planted.write_text(
        f"# X\n\n[a]({page}#no-such-heading) [b](missing.md) [c](#x) [d]({page}) [e](https://e)\n"
    )
    found = broken(planted)
    assert len(found) == 2, found
    assert (
        "no-such-heading (no such heading)" in found[0] and "missing.md (no such file)" in found[1]
    )


def test_every_page_is_reached_from_the_readme() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    linked = {target.partition("#")[0] for target in LINK.findall(readme)}
    assert {f"docs/{p.name}" for p in (REPO / "docs").glob("*.md")} <= linked


def test_every_figure_keeps_the_command_that_makes_it() -> None:
    """A section of a page with a table of measured figures names the benchmark that
    measured them."""
    missing = []
    for page in pages():
        for section in re.split(r"(?m)^#+ ", page.read_text(encoding="utf-8")):
            rows = [ln for ln in section.splitlines() if ln.startswith("|")]
            if any(FIGURE.search(row) for row in rows) and "bench" not in section:
                missing.append(f"{page.relative_to(REPO)}: {section.splitlines()[0]}")
    assert not missing, missing
