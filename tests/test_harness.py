"""The test peers themselves: the loopback Messages API and the real Claude Code CLI."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import httpx
import pytest

from memlog.tests import claude_code, real_home
from memlog.tests.claude_code import ClaudeCode, claude_binary
from memlog.tests.messages_api import MessagesAPI

SCHEMA = {
    "type": "object",
    "properties": {"facts": {"type": "array", "items": {"type": "string"}}},
    "required": ["facts"],
}


def test_messages_api_answers_json_and_errors() -> None:
    with MessagesAPI(structured={"facts": ["a"]}) as api:
        body = {
            "model": "claude-haiku-4-5",
            "max_tokens": 100,
            "messages": [{"role": "user", "content": "hi"}],
            "output_config": {"format": {"type": "json_schema", "schema": SCHEMA}},
        }
        answer = httpx.post(api.url + "/v1/messages", json=body).json()
        assert answer["type"] == "message" and answer["stop_reason"] == "end_turn"
        assert json.loads(answer["content"][0]["text"]) == {"facts": ["a"]}
        api.status, api.retry_after, api.error_times = 429, "7", 1
        refused = httpx.post(api.url + "/v1/messages", json=body)
        assert (refused.status_code, refused.headers["retry-after"]) == (429, "7")
        assert refused.json()["error"]["type"] == "rate_limit_error"
        assert httpx.post(api.url + "/v1/messages", json=body).status_code == 200
        assert len(api.messages) == 3


def test_messages_api_streams_server_sent_events() -> None:
    with MessagesAPI(text="streamed") as api:
        body = {"model": "m", "max_tokens": 5, "stream": True, "messages": []}
        with httpx.stream("POST", api.url + "/v1/messages", json=body) as response:
            assert response.headers["content-type"] == "text/event-stream"
            events = [
                json.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: ")
            ]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert {"type": "text_delta", "text": "streamed"} in [e.get("delta") for e in events]


@pytest.mark.slow
def test_claude_print_with_a_json_schema_against_the_loopback_api(tmp_path: Path) -> None:
    binary = claude_binary()
    with MessagesAPI(structured={"facts": ["pin tool versions"]}) as api:
        claude = ClaudeCode(binary, tmp_path / "home", api.url)
        (tmp_path / "home").mkdir()
        ran = claude.run(
            ["-p", "extract", "--output-format", "json", "--json-schema", json.dumps(SCHEMA),
             "--model", "haiku", "--tools", "", "--strict-mcp-config", "--setting-sources", "",
             "--no-session-persistence"],
            cwd=tmp_path,
        )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert ran.result["structured_output"] == {"facts": ["pin tool versions"]}
    assert ran.result["is_error"] is False
    sent = api.messages[-1]
    assert "StructuredOutput" in {t["name"] for t in sent["tools"]}
    assert sent["model"].startswith("claude-haiku")


# -- the real home stays out of reach (conftest.py, real_home.py) -------------------------------


def test_the_run_has_a_home_of_its_own() -> None:
    assert Path.home() != real_home.REAL_HOME and os.path.expanduser("~") == str(Path.home())
    assert not claude_code.cache_dir().is_relative_to(Path.home())  # the CLI's cache is kept


def test_a_write_into_the_real_claude_folder_is_refused_before_it_happens() -> None:
    assert real_home.watching()
    probe = real_home.REAL_HOME / ".claude" / "memlog-guard-probe"
    existed = probe.parent.exists()
    before = len(real_home.touched)
    try:
        with pytest.raises(real_home.RealHomeTouched, match="memlog-guard-probe"):
            probe.mkdir(parents=True)
        with pytest.raises(real_home.RealHomeTouched):
            sqlite3.connect(real_home.REAL_HOME / ".claude" / "iflow" / "memory" / "memory.db")
        with pytest.raises(real_home.RealHomeTouched):
            (real_home.REAL_HOME / ".claude.json").open("a")
        with open(os.devnull, "w"):  # a write outside the guarded paths passes
            pass
    finally:
        assert not probe.exists() and probe.parent.exists() == existed
        assert len(real_home.touched) == before + 3
        del real_home.touched[before:]  # expected here: the test passes


def test_what_is_guarded() -> None:
    claude = real_home.REAL_HOME / ".claude"
    assert real_home.guarded(claude) and real_home.guarded(str(claude / "settings.json"))
    assert real_home.guarded(os.fsencode(claude / "iflow" / "memory" / "events"))
    assert not real_home.guarded(real_home.REAL_HOME / ".claude-other")
    assert not real_home.guarded(real_home.TEST_CACHE / "claude-code") and not real_home.guarded(3)
