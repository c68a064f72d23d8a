"""What extraction sends where, said once: by the plugin's first session (to the user, never
to the model), by ``memlog setup`` and by ``memlog doctor``; nothing is sent to say it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memlog.commands.cli import cli
from memlog.tests.fake_claude import install
from memlog.tests.hooks.test_session_start import hook_env, payload, project, run_hook

BUDGET = "at most $0.50 a day (memory_extraction_daily_budget_usd)"
SENT = "its prompts and replies (at most 80,000 characters, without <private> text"


def test_the_plugins_first_session_says_it_once(tmp_path: Path) -> None:
    home, data = tmp_path / "memory", tmp_path / "plugin-data"
    root = project(tmp_path)
    fake = tmp_path / "bin"
    install(fake)  # a `claude` on PATH: auto extraction uses it
    env = hook_env(home, CLAUDE_PLUGIN_DATA=str(data), PATH=f"{fake}:/usr/bin:/bin")
    first = run_hook(home, payload(root), root, env)
    assert first.message.startswith("memlog extraction (claude-cli): when a session ends, ")
    assert SENT in first.message and BUDGET in first.message
    assert "your own `claude` CLI" in first.message
    assert first.context == ""  # the model is told nothing of it
    assert [p.name for p in data.iterdir()] == ["extraction-told"]
    assert not home.exists()  # the memlog home is not written for it
    again = run_hook(home, payload(root), root, env)
    assert again.message == ""


def test_without_the_plugin_the_hook_says_nothing(tmp_path: Path) -> None:
    root = project(tmp_path)
    run = run_hook(tmp_path / "memory", payload(root), root)
    assert run.message == ""


@pytest.mark.parametrize(
    ("env", "expected", "status"),
    [
        ({"MEMLOG_EXTRACTION_PROVIDER": "off"}, "off: no session is sent anywhere", "ok"),
        ({"MEMLOG_EXTRACTION_PROVIDER": "anthropic"},
         "anthropic: nothing is sent: no provider can be used (no ANTHROPIC_API_KEY)", "warn"),
        ({"MEMLOG_EXTRACTION_PROVIDER": "anthropic", "ANTHROPIC_API_KEY": "k",
          "ANTHROPIC_BASE_URL": "https://gateway.example/"},
         "go to the Messages API at https://gateway.example (Claude Haiku), " + BUDGET, "ok"),
        ({"MEMLOG_EXTRACTION_PROVIDER": "auto", "PATH": "/nowhere",
          "MEMLOG_OLLAMA_BASE_URL": "http://10.0.0.5:11434"},
         "ollama: when a session ends, " + SENT, "ok"),
        ({"MEMLOG_EXTRACTION_PROVIDER": "ollama", "MEMLOG_EXTRACTION_DAILY_BUDGET_USD": "2"},
         "the Ollama server at http://localhost:11434, if one answers, at no cost", "ok"),
    ],
)  # fmt: skip
def test_doctor_says_which_provider_what_it_sends_and_the_budget(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], expected: str, status: str
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = CliRunner().invoke(cli, ["doctor", "--json"])
    (check,) = [c for c in json.loads(result.stdout)["checks"] if c["name"] == "extraction"]
    assert expected in check["detail"] and check["status"] == status


def test_setup_says_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("MEMLOG_EXTRACTION_PROVIDER", "anthropic")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    result = CliRunner().invoke(cli, ["setup"])
    assert result.exit_code == 0, result.output
    said = result.stdout.splitlines()[-1]
    assert said.startswith("memlog extraction (anthropic): when a session ends, ")
    assert "the Messages API at https://api.anthropic.com" in said and BUDGET in said
