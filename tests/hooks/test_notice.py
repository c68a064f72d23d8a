"""What extraction sends where, said once: by the plugin's first session (to the user, never
to the model), by ``memlog setup`` and by ``memlog doctor``; nothing is sent to say it."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

from memlog.commands.cli import cli
from memlog.tests.fake_claude import install
from memlog.tests.hooks.test_session_start import hook_env, payload, project, run_hook
from memlog.tests.messages_api import MessagesAPI

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


@pytest.mark.parametrize(
    "unwatched",
    [{"CLAUDE_CODE_ENTRYPOINT": "sdk-cli"}, {"CLAUDE_CODE_ENTRYPOINT": "sdk-ts"},
     {"CLAUDE_CODE_ENTRYPOINT": "cli", "CLAUDE_CODE_SESSION_ATTENDED": "0"}],
)  # fmt: skip
def test_a_session_nobody_watches_keeps_the_notice_for_one_somebody_does(
    tmp_path: Path, unwatched: dict[str, str]
) -> None:
    """``claude -p`` and the SDK show no hook message: the notice is not spent there."""
    home, data = tmp_path / "memory", tmp_path / "plugin-data"
    root = project(tmp_path)
    env = hook_env(home, CLAUDE_PLUGIN_DATA=str(data), MEMLOG_EXTRACTION_PROVIDER="off")
    for _ in range(2):
        assert run_hook(home, payload(root), root, {**env, **unwatched}).message == ""
    assert not data.exists()
    watched = {**env, "CLAUDE_CODE_ENTRYPOINT": "cli", "CLAUDE_CODE_SESSION_ATTENDED": "1"}
    first = run_hook(home, payload(root), root, watched)
    assert first.message == "memlog extraction (off): no session is sent anywhere " + (
        "(memory_extraction_provider)"
    )
    assert run_hook(home, payload(root), root, watched).message == ""


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
          "MEMLOG_OLLAMA_BASE_URL": "{listening}"},
         "ollama: when a session ends, " + SENT, "ok"),
        ({"MEMLOG_EXTRACTION_PROVIDER": "ollama", "MEMLOG_EXTRACTION_DAILY_BUDGET_USD": "2",
          "MEMLOG_OLLAMA_BASE_URL": "{listening}"},
         "go to the Ollama server at {listening}, at no cost", "ok"),
        ({"MEMLOG_EXTRACTION_PROVIDER": "auto", "PATH": "/nowhere",
          "MEMLOG_OLLAMA_BASE_URL": "{closed}"},
         "auto: nothing is sent: no provider can be used (no `claude` on PATH; no "
         "ANTHROPIC_API_KEY; no Ollama server answers at {closed})", "warn"),
    ],
)  # fmt: skip
def test_doctor_says_which_provider_what_it_sends_and_the_budget(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], expected: str, status: str
) -> None:
    """An Ollama server is counted on only when something listens at its address (doctor
    connects to the port and sends nothing)."""
    with MessagesAPI() as ollama, socket.socket() as spare:
        spare.bind(("127.0.0.1", 0))  # a port nothing listens on
        urls = {"listening": ollama.url, "closed": f"http://127.0.0.1:{spare.getsockname()[1]}"}
        for name, value in env.items():
            monkeypatch.setenv(name, value.format(**urls))
        result = CliRunner().invoke(cli, ["doctor", "--json"])
        sent = list(ollama.messages)
    (check,) = [c for c in json.loads(result.stdout)["checks"] if c["name"] == "extraction"]
    assert expected.format(**urls) in check["detail"] and check["status"] == status, check
    assert sent == []


def test_setup_says_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("MEMLOG_EXTRACTION_PROVIDER", "anthropic")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    result = CliRunner().invoke(cli, ["setup"])
    assert result.exit_code == 0, result.output
    said = result.stdout.splitlines()[-1]
    assert said.startswith("memlog extraction (anthropic): when a session ends, ")
    assert "the Messages API at https://api.anthropic.com" in said and BUDGET in said
