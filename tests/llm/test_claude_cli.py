"""The ``claude-cli`` provider against a fake ``claude`` first on PATH, in every mode."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from memlog.errors import ProviderError, ProviderUnavailable, RateLimited
from memlog.llm.claude_cli import ClaudeCli
from memlog.tests.claude_code import claude_binary
from memlog.tests.fake_claude import install
from memlog.tests.messages_api import MessagesAPI

SCHEMA = {"type": "object", "properties": {"extractions": {"type": "array"}},
          "required": ["extractions"], "additionalProperties": False}  # fmt: skip
ANSWER = {"extractions": [{"section": "facts", "content": "x", "confidence": 0.5}]}


@pytest.fixture
def fake(tmp_path: Path) -> dict[str, str]:
    """An environment whose PATH starts with the fake ``claude``."""
    install(tmp_path / "bin")
    return {
        "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(tmp_path),
        "FAKE_CLAUDE_LOG": str(tmp_path / "calls.jsonl"),
        "FAKE_CLAUDE_STATE": str(tmp_path / "count"),
        "FAKE_CLAUDE_ANSWERS": json.dumps([ANSWER]),
    }


def calls(env: dict[str, str]) -> list[dict[str, Any]]:
    path = Path(env["FAKE_CLAUDE_LOG"])
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def ask(env: dict[str, str], mode: str, timeout: float = 30) -> Any:
    return ClaudeCli({**env, "FAKE_CLAUDE_MODE": mode}).ask(
        "You extract.", "the transcript <p>", SCHEMA, timeout
    )


def test_success_reads_structured_output_usage_and_cost(fake: dict[str, str]) -> None:
    answer = ask(fake, "success")
    assert answer.data == ANSWER and answer.problem == ""
    usage = answer.usage
    assert (usage.provider, usage.model, usage.calls) == (
        "claude-cli",
        "claude-haiku-4-5-20251001",
        1,
    )
    assert (usage.tokens_in, usage.tokens_out, usage.cost_micros) == (1200, 150, 1950)


def test_the_call_has_the_flags_the_guard_and_the_prompt_on_stdin(fake: dict[str, str]) -> None:
    ask(fake, "success")
    (call,) = calls(fake)
    argv = call["argv"]
    assert argv[:3] == ["-p", "--output-format", "json"]
    assert json.loads(argv[argv.index("--json-schema") + 1]) == SCHEMA
    for flag, value in [("--model", "haiku"), ("--max-turns", "1"), ("--tools", ""),
                        ("--setting-sources", ""), ("--settings", '{"disableAllHooks":true}'),
                        ("--system-prompt", "You extract.")]:  # fmt: skip
        assert argv[argv.index(flag) + 1] == value
    assert "--strict-mcp-config" in argv and "--no-session-persistence" in argv
    assert call["stdin"] == "the transcript <p>"
    assert call["env"]["MEMLOG_EXTRACTING"] == "1" and call["env"]["MAX_THINKING_TOKENS"] == "0"
    assert call["env"]["CLAUDE_CODE_MAX_RETRIES"] == "2"
    assert call["env"]["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"  # no title request
    assert Path(call["cwd"]).name.startswith("memlog-extract-")  # no CLAUDE.md around
    assert not Path(call["cwd"]).exists()


@pytest.mark.parametrize(
    ("mode", "problem"),
    [("invalid", "Reached maximum number of turns"),
     ("no-structured", "the result has no structured_output")],
)  # fmt: skip
def test_an_invalid_answer_has_no_data_but_counts_its_cost(
    fake: dict[str, str], mode: str, problem: str
) -> None:
    answer = ask(fake, mode)
    assert answer.data is None and problem in answer.problem
    assert answer.usage.calls == 1 and answer.usage.cost_micros > 0


def test_invalid_then_valid(fake: dict[str, str]) -> None:
    assert ask(fake, "invalid-then-valid").data is None
    assert ask(fake, "invalid-then-valid").data == ANSWER


@pytest.mark.parametrize(
    ("mode", "error", "message"),
    [("rate-limit", RateLimited, r"rate limited \(429\)"),
     ("overloaded", RateLimited, r"rate limited \(529\)"),
     ("error", ProviderError, "API Error: 400"),
     ("not-logged-in", ProviderUnavailable, "not signed in"),
     ("garbage", ProviderError, "exited with status 1: this is not json")],
)  # fmt: skip
def test_errors(fake: dict[str, str], mode: str, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        ask(fake, mode)


@pytest.mark.slow
def test_a_hanging_cli_is_killed_at_the_deadline(fake: dict[str, str]) -> None:
    started = time.monotonic()
    with pytest.raises(ProviderError, match="no answer within 2 s"):
        ask(fake, "hang", timeout=2)
    assert time.monotonic() - started < 6
    (call,) = calls(fake)  # it started, then its whole process group was killed
    with pytest.raises(ProcessLookupError):
        os.kill(call["pid"], 0)


def test_no_cli_on_path_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ProviderUnavailable, match=r"Claude CLI not found \(no `claude` on PATH\)"):
        ClaudeCli({"PATH": str(tmp_path)})


@pytest.mark.slow
def test_the_real_cli_makes_one_request_and_counts_what_it_sent(tmp_path: Path) -> None:
    """Claude Code 2.1 asks the model for a session title first unless told not to: against
    a loopback Messages API, an extraction is one request, and its usage is that request's.
    The environment is a user's: nothing here turns nonessential traffic off."""
    binary = claude_binary()
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE"))}
    with MessagesAPI(structured=ANSWER) as api:
        api.usage = {"input_tokens": 2500, "output_tokens": 300}
        env = {**kept, "HOME": str(tmp_path), "ANTHROPIC_BASE_URL": api.url,
               "ANTHROPIC_API_KEY": "sk-ant-test-key", "DISABLE_AUTOUPDATER": "1",
               "PATH": f"{binary.parent}{os.pathsep}{os.environ['PATH']}"}  # fmt: skip
        answer = ClaudeCli(env).ask("You extract.", "the transcript " * 20, SCHEMA, 120)
        sent = list(api.messages)
    assert answer.data == ANSWER
    assert len(sent) == 1 and any(t["name"] == "StructuredOutput" for t in sent[0]["tools"])
    assert answer.usage.calls == len(sent)
    assert (answer.usage.tokens_in, answer.usage.tokens_out) == (2500, 300)
    assert answer.usage.cost_micros == 2500 * 1 + 300 * 5  # Haiku 4.5, as the CLI prices it
