"""The plugin story: the manifests, the wrapper, plugin and `memlog setup` knowing about each
other, and the real Claude Code CLI validating and installing the repository."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from memlog import __version__
from memlog.claude_code.plugin import covering, installed
from memlog.claude_code.wiring import wiring
from memlog.commands.cli import cli
from memlog.eventlog.events import Observed, Recalled
from memlog.eventlog.log import EventLog
from memlog.tests.claude_code import ClaudeCode, claude_binary
from memlog.tests.messages_api import MessagesAPI
from memlog.tests.support import REPO

PLUGIN = REPO / "plugin"
WRAPPER = PLUGIN / "hooks" / "run-memlog"
HINT = "from a clone of memlog run `pipx install .` (or `uv tool install .`"
PLUGIN_ID = "memlog@memlog"
#: everything the marketplace's plugin source holds: what Claude Code copies into its cache
PLUGIN_FILES = {
    ".claude-plugin/plugin.json", ".claude-plugin/icon.png", ".mcp.json", "hooks/hooks.json",
    "hooks/run-memlog", "skills/retrospecting/SKILL.md",
}  # fmt: skip


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def fake_install(home: Path, scope: str = "user", project: Path | None = None) -> None:
    """What `claude plugin install memlog@memlog` records (as Claude Code 2.1 writes it)."""
    plugins = home / ".claude" / "plugins"
    plugins.mkdir(parents=True, exist_ok=True)
    install = {"scope": scope, "installPath": str(plugins / "cache" / "memlog"), "version": "0.2.0"}
    if project is not None:
        install["projectPath"] = str(project)
    data = {"version": 2, "plugins": {PLUGIN_ID: [install]}}
    (plugins / "installed_plugins.json").write_text(json.dumps(data))
    settings = (project / ".claude" if project else home / ".claude") / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    current = json.loads(settings.read_text()) if settings.exists() else {}
    settings.write_text(json.dumps({**current, "enabledPlugins": {PLUGIN_ID: True}}))


@pytest.fixture
def user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "user"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    return home


# -- the manifests -------------------------------------------------------------------------------


def test_one_version_everywhere() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    plugin = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())
    market = json.loads((REPO / ".claude-plugin" / "marketplace.json").read_text())
    assert project["version"] == plugin["version"] == __version__
    assert market["metadata"]["version"] == __version__
    assert [p["version"] for p in market["plugins"]] == [__version__]
    assert project["name"] == "claude-memlog" and project["scripts"] == {
        "memlog": "memlog.__main__:main"
    }


def test_the_manifests_carry_what_claude_code_asks_for() -> None:
    plugin = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())
    assert isinstance(plugin["author"], dict) and plugin["author"]["name"]
    assert isinstance(plugin["repository"], str) and plugin["homepage"].startswith("https://")
    assert "hooks" not in plugin  # hooks/hooks.json loads by convention
    market = json.loads((REPO / ".claude-plugin" / "marketplace.json").read_text())
    assert isinstance(market["owner"], dict) and market["metadata"]["description"]
    (entry,) = market["plugins"]
    assert entry["name"] == plugin["name"] == "memlog" and entry["source"] == "./plugin"
    skill = (PLUGIN / "skills" / "retrospecting" / "SKILL.md").read_text()
    assert skill.startswith("---\nname: retrospecting\ndescription: ")


def test_the_plugin_source_holds_only_the_plugin() -> None:
    held = {str(p.relative_to(PLUGIN)) for p in PLUGIN.rglob("*") if p.is_file()}
    assert held == PLUGIN_FILES
    assert sum(p.stat().st_size for p in PLUGIN.rglob("*") if p.is_file()) < 64 << 10


def test_the_icon_is_what_the_plugin_directory_asks_for() -> None:
    """A square PNG of 512 to 2048 pixels a side, under 2 MB, where Claude Code's validator
    looks (``.claude-plugin/icon.png``): without it ``plugin validate --strict`` warns
    ``ICON_MISSING``."""
    data = (PLUGIN / ".claude-plugin" / "icon.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert width == height and 512 <= width <= 2048 and len(data) < 2 << 20


# -- the wrapper ---------------------------------------------------------------------------------


def wrapper(
    args: list[str], tmp_path: Path, path: str, stdin: str = "", **more: str
) -> subprocess.CompletedProcess[str]:
    root = tmp_path / "nobody" / ".claude" / "plugins" / "cache" / "memlog" / "memlog" / "0.2.0"
    root.mkdir(parents=True, exist_ok=True)  # where Claude Code puts the plugin: no memlog
    env = {"PATH": path, "HOME": str(tmp_path / "nobody"), "CLAUDE_PLUGIN_ROOT": str(root), **more}
    return subprocess.run(
        ["sh", str(WRAPPER), *args], input=stdin, capture_output=True, text=True, env=env,
        timeout=60, check=False,
    )  # fmt: skip


def test_without_memlog_the_hook_answers_and_says_how_to_install(tmp_path: Path) -> None:
    done = wrapper(["hook", "session-start"], tmp_path, "/usr/bin:/bin", stdin='{"cwd": "/"}')
    assert done.returncode == 0
    assert json.loads(done.stdout) == {
        "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": ""}
    }
    assert HINT in done.stderr


def test_without_memlog_the_server_fails_clearly(tmp_path: Path) -> None:
    done = wrapper(["serve-mcp"], tmp_path, "/usr/bin:/bin")
    assert done.returncode == 1 and done.stdout == "" and HINT in done.stderr


def test_the_wrapper_finds_memlog_on_path(tmp_path: Path, memlog_home: Path) -> None:
    bin_dir = str(Path(sys.executable).parent)
    done = wrapper(["--version"], tmp_path, f"{bin_dir}:/usr/bin:/bin")
    assert done.returncode == 0 and done.stdout.strip() == f"memlog, version {__version__}"


def fake_memlog(folder: Path, says: str) -> Path:
    """An executable ``memlog`` that prints what it is and its arguments."""
    folder.mkdir(parents=True, exist_ok=True)
    binary = folder / "memlog"
    binary.write_text(f'#!/bin/sh\necho "{says} $*"\n')
    binary.chmod(0o755)
    return binary


def known_marketplaces(tmp_path: Path, clone: Path) -> None:
    """What `claude plugin marketplace add <clone>` records (as Claude Code 2.1 writes it)."""
    plugins = tmp_path / "nobody" / ".claude" / "plugins"
    plugins.mkdir(parents=True, exist_ok=True)
    other = {"source": {"source": "directory", "path": "/elsewhere"}, "installLocation": "/else"}
    ours = {"source": {"source": "directory", "path": str(clone)}, "installLocation": str(clone),
            "lastUpdated": "2026-11-25T12:39:02.094Z"}  # fmt: skip
    data = {"another": other, "memlog": ours}
    (plugins / "known_marketplaces.json").write_text(json.dumps(data, indent=2))


def test_the_wrapper_finds_the_venv_of_the_clone_it_was_installed_from(tmp_path: Path) -> None:
    clone = tmp_path / "my clone"
    fake_memlog(clone / ".venv" / "bin", "clone")
    fake_memlog(tmp_path / "else" / ".venv" / "bin", "another marketplace")
    on_path = fake_memlog(tmp_path / "bin", "on PATH").parent
    known_marketplaces(tmp_path, clone)
    done = wrapper(["hook", "session-end"], tmp_path, f"{on_path}:/usr/bin:/bin")
    assert done.returncode == 0 and done.stdout == "clone hook session-end\n", done.stderr
    chosen = fake_memlog(tmp_path / "chosen", "MEMLOG_BIN")
    done = wrapper(["serve-mcp"], tmp_path, f"{on_path}:/usr/bin:/bin", MEMLOG_BIN=str(chosen))
    assert done.stdout == "MEMLOG_BIN serve-mcp\n"
    (clone / ".venv").rename(clone / "old-venv")  # no venv there: memlog on PATH
    done = wrapper(["serve-mcp"], tmp_path, f"{on_path}:/usr/bin:/bin")
    assert done.stdout == "on PATH serve-mcp\n"
    fake_memlog(tmp_path / "nobody" / ".local" / "bin", "pipx")  # then where pipx and uv put it
    done = wrapper(["serve-mcp"], tmp_path, "/usr/bin:/bin")
    assert done.stdout == "pipx serve-mcp\n"


# -- plugin and setup know about each other -----------------------------------------------------


def test_setup_adds_nothing_when_the_plugin_is_installed(user_home: Path) -> None:
    fake_install(user_home)
    settings_before = (user_home / ".claude" / "settings.json").read_bytes()
    result = invoke("setup")
    assert result.exit_code == 0, result.output
    assert f"plugin {PLUGIN_ID} (user scope) already runs the hooks" in result.stdout
    assert (user_home / ".claude" / "settings.json").read_bytes() == settings_before
    assert not (user_home / ".claude.json").exists()


def test_setup_removes_its_own_entries_once_the_plugin_is_installed(user_home: Path) -> None:
    assert invoke("setup").exit_code == 0
    assert wiring(user_home, None).hooks == [f"user settings {user_home}/.claude/settings.json"]
    fake_install(user_home)
    doubled = wiring(user_home, None)
    assert len(doubled.hooks) == len(doubled.servers) == 2 and doubled.duplicates
    result = invoke("setup")
    assert result.exit_code == 0, result.output
    assert "own entries were removed" in result.stdout
    single = wiring(user_home, None)
    assert single.hooks == single.servers == [f"plugin {PLUGIN_ID} (user scope)"]
    settings = json.loads((user_home / ".claude" / "settings.json").read_text())
    assert settings["enabledPlugins"] == {PLUGIN_ID: True} and "hooks" not in settings


def test_a_disabled_or_other_project_plugin_does_not_count(user_home: Path, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    fake_install(user_home, scope="project", project=project)
    (install,) = installed(user_home)
    assert install.enabled and install.scope == "project"
    assert covering([install], None) == [] and covering([install], project) == [install]
    assert covering([install._replace(enabled=False)], project) == []


def test_doctor_reports_a_hook_registered_twice(user_home: Path, tmp_path: Path) -> None:
    assert invoke("setup").exit_code == 0
    fake_install(user_home)
    result = invoke("doctor")
    assert result.exit_code == 1
    lines = {ln[9:21].strip(): ln for ln in result.stdout.splitlines()}  # status, name, detail
    assert lines["hook"].startswith("PROBLEM") and "registered 2 times" in lines["hook"]
    assert invoke("setup").exit_code == 0
    again = invoke("doctor")
    assert again.exit_code == 0, again.output
    assert f"ok       hook         plugin {PLUGIN_ID} (user scope)" in again.stdout


# -- the real Claude Code CLI ---------------------------------------------------------------------


def offline_claude(tmp_path: Path, api_url: str = "http://127.0.0.1:9") -> ClaudeCode:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    bin_dir = str(Path(sys.executable).parent)  # memlog of this test run, first on PATH
    extra = {"PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
    return ClaudeCode(claude_binary(), home, api_url, extra)


def plugin_copy(tmp_path: Path) -> Path:
    """A copy of the plugin's folder, to break."""
    copy = tmp_path / "plugin"
    shutil.copytree(PLUGIN, copy)
    return copy


@pytest.mark.slow
def test_claude_plugin_validate_strict(tmp_path: Path) -> None:
    claude = offline_claude(tmp_path)
    market = claude.run(["plugin", "validate", "--strict", str(REPO)], cwd=tmp_path)
    assert market.returncode == 0, market.stdout + market.stderr
    assert "Validating marketplace manifest" in market.stdout
    assert "✔ Validation passed\n" in market.stdout and "warning" not in market.stdout.lower()
    copy = plugin_copy(tmp_path)
    plugin = claude.run(["plugin", "validate", "--strict", str(copy)], cwd=tmp_path)
    assert plugin.returncode == 0, plugin.stdout + plugin.stderr
    assert "✔ Validation passed\n" in plugin.stdout and "warning" not in plugin.stdout.lower()
    # the same check fails on the skill without its front matter: it reads our files
    skill = copy / "skills" / "retrospecting" / "SKILL.md"
    skill.write_text(skill.read_text().split("---\n", 2)[2])
    broken = claude.run(["plugin", "validate", "--strict", str(copy)], cwd=tmp_path)
    assert broken.returncode == 1 and "No frontmatter block found" in broken.stdout


@pytest.mark.slow
def test_claude_plugin_install_from_the_repository_as_a_marketplace(tmp_path: Path) -> None:
    claude = offline_claude(tmp_path)
    done = claude.install_plugin(REPO, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    cache = claude.home / ".claude" / "plugins" / "cache"
    copied = [p for p in cache.rglob("*") if p.is_file()]
    assert sum(p.stat().st_size for p in copied) < 1 << 20  # the plugin, nothing of the clone
    (root,) = {p.parent for p in copied if p.name == "plugin.json"}
    assert {str(p.relative_to(root.parent)) for p in copied} == PLUGIN_FILES
    details = claude.run(["plugin", "details", PLUGIN_ID], cwd=tmp_path).stdout
    assert "Skills (1)  retrospecting" in details
    assert "Hooks (4)  SessionStart, UserPromptSubmit, SessionEnd, PreCompact" in details, details
    assert "MCP servers (1)" in details
    servers = claude.run(["mcp", "list"], cwd=tmp_path, timeout=120).stdout
    (line,) = [ln for ln in servers.splitlines() if ln.startswith("plugin:memlog:memlog:")]
    assert "run-memlog serve-mcp" in line and "✔ Connected" in line
    (install,) = installed(claude.home, claude.env())
    assert install.id == PLUGIN_ID and install.enabled and install.scope == "user"


@pytest.mark.slow
def test_plugin_and_setup_together_inject_once(tmp_path: Path) -> None:
    """The hook of `memlog setup` and the plugin's both run: one block, one recall; then
    doctor sees the duplicate and `memlog setup` resolves it."""
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    with MessagesAPI(text="hello") as api:
        claude = offline_claude(tmp_path, api.url)
        memory = claude.home / ".claude" / "iflow" / "memory"  # the default home under HOME
        lesson = Observed(name="Pin", description="Pin tool versions in CI", category="patterns")
        EventLog(memory).append([lesson])
        env = {k: v for k, v in claude.env().items() if not k.startswith("MEMLOG_")}
        memlog = [sys.executable, "-m", "memlog"]
        run = subprocess.run([*memlog, "setup"], env=env, cwd=project, capture_output=True,
                             text=True, timeout=120, check=True)  # fmt: skip
        assert "SessionStart hook:" in run.stdout
        assert claude.run(["plugin", "marketplace", "add", str(REPO)], cwd=project).returncode == 0
        assert claude.run(["plugin", "install", PLUGIN_ID], cwd=project).returncode == 0
        ran = claude.run(["-p", "hi", "--output-format", "json"], cwd=project)
        assert ran.returncode == 0, ran.stdout + ran.stderr
        sent = json.dumps(api.messages[0]["messages"])
    assert sent.count("## Engineering Memory (from knowledge bank)") == 1
    assert "Pin tool versions in CI" in sent
    assert len([r for r in EventLog(memory).read() if isinstance(r.event, Recalled)]) == 1
    (transcript,) = claude.transcripts(project)
    hooks_run = [
        line for line in transcript.read_text().splitlines()
        if '"hook_success"' in line and "SessionStart" in line
    ]  # fmt: skip
    assert len(hooks_run) == 2  # both registrations ran; only one injected
    doctor = subprocess.run([*memlog, "doctor"], env=env, cwd=project, capture_output=True,
                            text=True, timeout=120, check=False)  # fmt: skip
    assert doctor.returncode == 1 and "registered 2 times" in doctor.stdout
    fixed = subprocess.run([*memlog, "setup"], env=env, cwd=project, capture_output=True,
                           text=True, timeout=120, check=True)  # fmt: skip
    assert "own entries were removed" in fixed.stdout
    doctor = subprocess.run([*memlog, "doctor"], env=env, cwd=project, capture_output=True,
                            text=True, timeout=120, check=False)  # fmt: skip
    assert doctor.returncode == 0, doctor.stdout
