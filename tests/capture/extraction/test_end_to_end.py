"""End to end with the real Claude Code CLI (npm ``@anthropic-ai/claude-code``), offline.

``claude -p`` runs in a git project on ``feature/x`` with memlog's hooks
registered by ``memlog setup`` in a temporary HOME and the API at a
loopback Messages API.  The SessionEnd hook records the session; the
detached extractor (provider ``anthropic``, at the same loopback) turns it
into entries; the next session's injected context holds the branch memory
block.  That next session is then extracted through the real CLI
(``claude-cli``), whose own session must never reach memlog's hooks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from memlog.eventlog.events import SessionPending, SessionProgress
from memlog.eventlog.log import EventLog
from memlog.tests.capture.extraction.helpers import extraction, git_project, item
from memlog.tests.claude_code import ClaudeCode, claude_binary
from memlog.tests.messages_api import MessagesAPI

RULE = "Open every CSV file users upload with encoding utf-8-sig so a byte order mark goes."
ANSWER = (
    "Files saved by Excel start with a UTF-8 byte order mark; read with utf-8 it sticks to "
    "the first header, so that column is never found. Reading with utf-8-sig fixes it."
)
SECRET = "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe"


def progress(home: Path, count: int, seconds: float = 90) -> list[SessionProgress]:
    give_up = time.monotonic() + seconds
    while time.monotonic() < give_up:
        if (home / "events").is_dir():
            found = [r.event for r in EventLog(home).read() if isinstance(r.event, SessionProgress)]
            if len(found) >= count:
                return found
        time.sleep(0.3)
    raise AssertionError(f"fewer than {count} sessions extracted within {seconds} s")


def setup_hooks(cc: ClaudeCode, memlog_home: Path) -> None:
    env = {**cc.env(), "MEMLOG_HOME": str(memlog_home)}
    done = subprocess.run(
        [sys.executable, "-m", "memlog", "setup"], env=env, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    hooks = json.loads(cc.settings().read_text())["hooks"]
    assert {"SessionStart", "SessionEnd", "PreCompact"} <= set(hooks)


def extraction_requests(api: MessagesAPI) -> list[dict[str, Any]]:
    return [m for m in api.messages if "output_config" in m and "format" in m["output_config"]]


@pytest.mark.slow
@pytest.mark.ac("004:end-to-end")
def test_a_claude_session_becomes_branch_memory_for_the_next_one(
    tmp_path: Path, memlog_home: Path
) -> None:
    binary = claude_binary()
    project = git_project(tmp_path, "shop", "feature/x")
    with MessagesAPI(text=ANSWER, structured=extraction(item(RULE))) as api:
        cc = ClaudeCode(
            binary, tmp_path / "cc-home", api.url,
            extra_env={
                "MEMLOG_HOME": str(memlog_home), "MEMLOG_EXTRACTION_PROVIDER": "anthropic",
                "MEMLOG_EMBEDDING_PROVIDER": "hashing", "MEMLOG_KEYWORD_PROVIDER": "local",
            },
        )  # fmt: skip
        (tmp_path / "cc-home").mkdir()
        setup_hooks(cc, memlog_home)
        prompt = (
            f"Why does the importer drop the first column? <private>Acme Corp</private> {SECRET}"
        )
        first = cc.run(["-p", prompt, "--output-format", "json"], cwd=project)
        assert first.returncode == 0, first.stderr
        first_id = first.result["session_id"]
        (done,) = progress(memlog_home, 1)
        assert done.status == "extracted" and done.session_id == first_id

        (request,) = extraction_requests(api)
        body = json.dumps(request)
        assert request["model"] == "claude-haiku-4-5"
        assert request["output_config"]["format"]["schema"]["required"] == ["extractions"]
        assert "Why does the importer drop the first column?" in body
        assert "Acme" not in body and SECRET not in body  # private and secret stay home

        ended = [
            r.event for r in EventLog(memlog_home).read() if isinstance(r.event, SessionPending)
        ]
        (pending,) = [e for e in ended if e.trigger == "SessionEnd"]
        assert (pending.session_id, pending.branch, pending.project) == (
            first_id,
            "feature/x",
            "shop",
        )

        # the next session: the branch memory is in what SessionStart injected
        second = cc.run(
            ["-p", "Add a test for the importer.", "--output-format", "json"], cwd=project,
            env={"MEMLOG_EXTRACTION_PROVIDER": "claude-cli",
                 "PATH": f"{binary.parent}{os.pathsep}{os.environ['PATH']}"},
        )  # fmt: skip
        assert second.returncode == 0, second.stderr
        context = [m for r in api.messages for m in r.get("messages", [])
                   if m.get("role") == "system" and "SessionStart" in json.dumps(m)]  # fmt: skip
        injected = json.dumps(context[-1])
        assert "## Branch Memory (auto-extracted)" in injected and RULE in injected

        # the second session is extracted through the real CLI, whose own session
        # never reaches memlog's hooks
        both = progress(memlog_home, 2)
        assert both[-1].session_id == second.result["session_id"]
        assert both[-1].usage.provider == "claude-cli"
        time.sleep(2)
        seen = {r.event.session_id for r in EventLog(memlog_home).read()
                if isinstance(r.event, SessionPending)}  # fmt: skip
        assert seen == {first_id, second.result["session_id"]}
        tools = [m for m in api.messages if any(t.get("name") == "StructuredOutput"
                                               for t in m.get("tools", []))]  # fmt: skip
        assert tools and all(m["model"].startswith("claude-haiku") for m in tools)
