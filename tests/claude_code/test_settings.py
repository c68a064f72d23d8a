"""``memlog setup``: Claude Code settings edited in place, reversibly; the plugin files."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from hypothesis import given, settings
from hypothesis import strategies as st

from memlog import __version__
from memlog.claude_code.entries import (
    HOOK_MATCHER,
    HOOKS,
    SetupError,
    find_executable,
    install_hooks,
    install_server,
    remove_hooks,
    remove_server,
    strip_ours,
)
from memlog.claude_code.settings import apply, plan_install, user_targets
from memlog.commands.cli import COMMANDS, cli
from memlog.tests.support import REPO  # noqa: E402

SETTINGS = """{
    "model": "opus",
    "permissions": {"allow": ["Bash(git status)"]},
    "hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "audit.sh"}]}
        ],
        "SessionStart": [
            {
                "matcher": "startup",
                "hooks": [{"type": "command", "command": "~/bin/greet \\u00e9"}]
            }
        ]
    },
    "env": {"LANG": "fr_FR.UTF-8", "NOTE": "déjà"}
}
"""
USER_CONFIG = (
    '{"numStartups": 41, "theme": "dark", "mcpServers": {"github": {"type": "stdio", '
    '"command": "npx", "args": ["-y", "gh-mcp"], "env": {"TOKEN": "x"}}}, "projects": '
    '{"/work/a": {"allowedTools": []}}}'
)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME with existing settings: other hooks, another MCP server, other keys."""
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text(SETTINGS)
    (home / ".claude.json").write_text(USER_CONFIG)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    return home


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, ["setup", *args])


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def settings_of(home: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((home / ".claude" / "settings.json").read_text())
    return data


def test_install_adds_the_hook_and_the_server_and_keeps_everything_else(home: Path) -> None:
    done = invoke()
    assert done.exit_code == 0, done.output
    exe = find_executable()
    assert os.path.isabs(exe)
    data = settings_of(home)
    groups = data["hooks"]["SessionStart"]  # type: ignore[index]
    assert groups[0]["hooks"][0]["command"] == "~/bin/greet \u00e9"
    assert groups[1] == {
        "matcher": HOOK_MATCHER,
        "hooks": [{"type": "command", "command": f"{exe} hook session-start", "timeout": 10}],
    }
    assert strip_ours(data) == json.loads(SETTINGS)
    config = json.loads((home / ".claude.json").read_text())
    assert config["mcpServers"]["memlog"] == {
        "type": "stdio", "command": exe, "args": ["serve-mcp"], "env": {},
    }  # fmt: skip
    assert strip_ours(config) == json.loads(USER_CONFIG)
    text = (home / ".claude" / "settings.json").read_text()
    assert '"hooks": [{"type": "command", "command": "~/bin/greet \\u00e9"}]' in text  # verbatim
    assert len(list(home.rglob("*.memlog-install-*.bak"))) == 2


def test_install_twice_equals_install_once(home: Path) -> None:
    assert invoke().exit_code == 0
    once = snapshot(home)
    again = invoke()
    assert again.exit_code == 0, again.output
    assert snapshot(home) == once  # no change, and no further backup
    assert "unchanged" in again.output


def test_uninstall_restores_the_original_bytes(home: Path) -> None:
    before = snapshot(home)
    assert invoke().exit_code == 0
    done = invoke("--uninstall")
    assert done.exit_code == 0, done.output
    after = {k: v for k, v in snapshot(home).items() if ".memlog-" not in k}
    assert after == before
    assert "restored from" in done.output
    assert invoke("--uninstall").output.count("nothing of memlog's in it") == 2


def test_uninstall_after_other_changes_removes_only_memlogs_entries(home: Path) -> None:
    assert invoke().exit_code == 0
    settings_path, config_path = home / ".claude" / "settings.json", home / ".claude.json"
    settings_path.write_text(
        settings_path.read_text().replace('"model"', '"theme": "x",\n    "model"')
    )
    config_path.write_text(
        config_path.read_text().replace('"numStartups": 41', '"numStartups": 42')
    )
    done = invoke("--uninstall")
    assert done.exit_code == 0, done.output
    assert settings_path.read_text() == SETTINGS.replace('"model"', '"theme": "x",\n    "model"')
    assert config_path.read_text() == USER_CONFIG.replace("41", "42")


def test_files_setup_created_are_deleted_on_uninstall(home: Path) -> None:
    (home / ".claude" / "settings.json").unlink()
    (home / ".claude.json").unlink()
    assert invoke().exit_code == 0
    assert (home / ".claude" / "settings.json").read_text().startswith('{\n  "hooks": {\n')
    assert oct((home / ".claude.json").stat().st_mode & 0o777) == "0o600"
    assert invoke("--uninstall").exit_code == 0
    assert not (home / ".claude" / "settings.json").exists()
    assert not (home / ".claude.json").exists()


def test_dry_run_changes_nothing_and_shows_a_diff(home: Path) -> None:
    before = snapshot(home)
    done = invoke("--dry-run")
    assert done.exit_code == 0, done.output
    assert snapshot(home) == before
    settings_path = home / ".claude" / "settings.json"
    assert f"--- {settings_path}\n+++ {settings_path}\n@@ " in done.output
    assert re.search(r'^\+ +"command": ".*memlog hook session-start",$', done.output, re.M)
    assert f"+++ {home / '.claude.json'}" in done.output
    assert invoke().exit_code == 0
    installed = snapshot(home)
    undo = invoke("--uninstall", "--dry-run")
    assert undo.exit_code == 0 and undo.output.count("\n-") >= 2
    assert snapshot(home) == installed


@pytest.mark.parametrize("broken", ['{"model": "opus",,}', "[1, 2]", "\udcff"])
def test_malformed_settings_are_a_clear_error_and_nothing_is_written(
    home: Path, broken: str
) -> None:
    path = home / ".claude" / "settings.json"
    path.write_bytes(broken.encode("utf-8", "surrogateescape"))
    before = snapshot(home)
    done = invoke()
    assert done.exit_code == 1
    assert str(path) in done.output and "nothing was changed" in done.output
    assert "Traceback" not in done.output
    assert snapshot(home) == before


def test_a_foreign_memlog_server_is_not_overwritten(home: Path) -> None:
    config = json.loads(USER_CONFIG)
    config["mcpServers"]["memlog"] = {"command": "node", "args": ["other.js"]}
    (home / ".claude.json").write_text(json.dumps(config))
    before = snapshot(home)
    done = invoke()
    assert done.exit_code == 1
    assert "already has an MCP server named 'memlog'" in done.output
    assert snapshot(home) == before


def test_an_old_memlog_hook_is_replaced_not_duplicated(home: Path) -> None:
    path = home / ".claude" / "settings.json"
    old = {"type": "command", "command": "/old/venv/bin/memlog hook session-start"}
    data = json.loads(SETTINGS)
    data["hooks"]["SessionStart"][0]["hooks"].append(old)
    path.write_text(json.dumps(data, indent=2))
    assert invoke().exit_code == 0
    groups = settings_of(home)["hooks"]["SessionStart"]  # type: ignore[index]
    commands = [h["command"] for g in groups for h in g["hooks"]]
    assert commands == ["~/bin/greet \u00e9", f"{find_executable()} hook session-start"]


def test_project_scope_writes_portable_project_files(tmp_path: Path, home: Path) -> None:
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    user_files = snapshot(home)
    done = invoke("--project", "--project-root", str(project))
    assert done.exit_code == 0, done.output
    assert snapshot(home) == user_files
    hooks = json.loads((project / ".claude" / "settings.json").read_text())["hooks"]
    assert hooks["SessionStart"][0]["hooks"][0]["command"] == "memlog hook session-start"
    servers = json.loads((project / ".mcp.json").read_text())["mcpServers"]
    assert servers["memlog"]["command"] == "memlog"
    assert invoke("--project", "--project-root", str(project), "--uninstall").exit_code == 0
    assert not (project / ".mcp.json").exists()


def test_claude_config_dir_is_honoured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cfg"))
    paths = [t.path for t in user_targets(tmp_path / "home")]
    assert paths == [tmp_path / "cfg" / "settings.json", tmp_path / "cfg" / ".claude.json"]


def test_a_file_changed_during_setup_is_not_overwritten(home: Path) -> None:
    targets = user_targets(home)
    changes = plan_install(targets, "/x/memlog")
    (home / ".claude.json").write_text(USER_CONFIG.replace("41", "43"))
    with pytest.raises(SetupError, match="changed while memlog setup ran"):
        apply(changes, "install")
    assert (home / ".claude.json").read_text() == USER_CONFIG.replace("41", "43")
    assert not list(home.rglob("*.bak"))


def test_a_symlinked_settings_file_keeps_its_link(tmp_path: Path, home: Path) -> None:
    real = tmp_path / "dotfiles" / "settings.json"
    real.parent.mkdir()
    (home / ".claude" / "settings.json").rename(real)
    (home / ".claude" / "settings.json").symlink_to(real)
    assert invoke().exit_code == 0
    assert (home / ".claude" / "settings.json").is_symlink()
    assert "memlog hook session-start" in real.read_text()


# -- the in-place editor, on generated documents ---------------------------------------------

_SCALARS = st.none() | st.booleans() | st.integers() | st.text(max_size=8)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
_OTHER_GROUP = st.fixed_dictionaries(
    {
        "matcher": st.sampled_from(["startup", "", "Bash"]),
        "hooks": st.just([{"type": "command", "command": "x"}]),
    }
)
_DOCS = st.fixed_dictionaries(
    {},
    optional={
        "hooks": st.fixed_dictionaries(
            {},
            optional={
                "SessionStart": st.lists(_OTHER_GROUP, min_size=1, max_size=2),
                "Stop": _VALUES,
            },
        ),
        "mcpServers": st.dictionaries(st.sampled_from(["a", "b"]), _VALUES, min_size=1),
        "model": _VALUES,
        "ü": _VALUES,
    },
)
_LAYOUTS = [{"indent": 2}, {"indent": 4}, {"indent": "\t"}, {}, {"separators": (",", ":")}]


@settings(max_examples=150, deadline=None)
@given(_DOCS, st.sampled_from(_LAYOUTS), st.booleans(), st.booleans())
def test_install_then_remove_gives_back_the_same_bytes(
    doc: dict[str, object], layout: dict[str, object], ascii_only: bool, newline: bool
) -> None:
    text = json.dumps(doc, ensure_ascii=ascii_only, **layout) + ("\n" if newline else "")  # type: ignore[arg-type]
    where = Path("settings.json")
    for install, remove in ((install_hooks, remove_hooks), (install_server, remove_server)):
        added = install(text, where, "/opt/memlog bin/memlog")
        assert strip_ours(json.loads(added)) == strip_ours(doc)
        assert install(added, where, "/opt/memlog bin/memlog") == added
        removed = remove(added, where)
        assert "/opt/memlog bin/memlog" not in removed
        if install is install_hooks and doc.get("hooks") == {}:
            assert json.loads(removed) == strip_ours(doc)  # the emptied container goes too
        else:
            assert removed == text


# -- the plugin ------------------------------------------------------------------------------

PLUGIN = REPO / "plugin"


def test_the_plugin_manifest() -> None:
    manifest = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())
    assert re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", manifest["name"])
    assert manifest["version"] == __version__
    assert "hooks" not in manifest  # hooks/hooks.json loads by convention; naming it loads it twice
    default = PLUGIN / ".mcp.json"  # also loaded by convention
    sources = [manifest.get("mcpServers"), default.exists() and json.loads(default.read_text())]
    (servers,) = [s["mcpServers"] if "mcpServers" in s else s for s in sources if s]
    # the server starts through the hooks' wrapper: one way to find memlog, one fallback
    assert servers["memlog"]["command"] == "${CLAUDE_PLUGIN_ROOT}/hooks/run-memlog"
    assert servers["memlog"]["args"][0] in COMMANDS


def test_the_plugin_hooks_file() -> None:
    config = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())
    (group,) = config["hooks"]["SessionStart"]
    assert group["matcher"] == HOOK_MATCHER
    (hook,) = group["hooks"]
    assert hook["type"] == "command" and 0 < hook["timeout"] <= 60
    assert hook["command"].startswith('"${CLAUDE_PLUGIN_ROOT}/hooks/run-memlog"')
    assert hook["command"].endswith(" hook session-start")
    assert os.access(PLUGIN / "hooks" / "run-memlog", os.X_OK)


def test_the_plugin_and_setup_register_the_same_hooks(home: Path) -> None:
    """Every hook memlog setup registers, the plugin registers too: the prompt's among them."""
    plugin = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"]
    assert list(plugin) == [spec.event for spec in HOOKS]
    for spec in HOOKS:
        (group,) = plugin[spec.event]
        assert group.get("matcher") == spec.matcher
        (hook,) = group["hooks"]
        assert hook["command"].endswith(" " + " ".join(spec.args))
        assert hook["timeout"] == spec.timeout
    assert invoke().exit_code == 0
    data = settings_of(home)
    (prompt,) = data["hooks"]["UserPromptSubmit"]  # type: ignore[index]
    assert prompt == {"hooks": [{"type": "command", "timeout": 5,
                                 "command": f"{find_executable()} hook user-prompt"}]}  # fmt: skip
