"""The server as real clients use it: MCP Inspector's command line, and Claude Code, whose
first turn must already offer memlog's tools (it starts without a server that has not
answered ``initialize`` in time)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memlog.eventlog.events import Influenced, Labelled, Observed
from memlog.eventlog.log import START, EventLog
from memlog.tests.claude_code import (
    ClaudeCode,
    cache_dir,
    claude_binary,
    npm_binary,
    project_folder,
)
from memlog.tests.mcp_server.helpers import full_env
from memlog.tests.messages_api import MessagesAPI
from memlog.tests.support import REPO

INSPECTOR = "@modelcontextprotocol/inspector"
RUNS = 10
TOOLS = {"store_memory", "search_memory", "list_memories", "record_influence"}


def inspector(project: Path, home: Path, *args: str) -> dict[str, object]:
    binary = npm_binary(INSPECTOR, "mcp-inspector", cache_dir("mcp-inspector"))
    memlog = Path(sys.executable).parent / "memlog"
    done = subprocess.run(
        [str(binary), "--cli", str(memlog), "serve-mcp", *args], cwd=project, env=full_env(home),
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    found: dict[str, object] = json.loads(done.stdout)
    return found


@pytest.mark.slow
def test_mcp_inspector_lists_and_calls_the_tools(project: Path, memlog_home: Path) -> None:
    listed = inspector(project, memlog_home, "--method", "tools/list")
    tools = {t["name"]: t for t in listed["tools"]}  # type: ignore[attr-defined]
    assert set(tools) == TOOLS
    assert tools["store_memory"]["outputSchema"]["type"] == "object"
    arguments = ["--tool-arg", "name=Inspected", "--tool-arg", "category=patterns",
                 "--tool-arg", "description=Inspector calls reach the log.",
                 "--tool-arg", "reasoning=Checked with the official inspector."]  # fmt: skip
    stored = inspector(project, memlog_home, "--method", "tools/call", "--tool-name",
                       "store_memory", *arguments)  # fmt: skip
    assert stored["isError"] is False
    assert stored["structuredContent"]["created"] is True  # type: ignore[index]
    found = inspector(project, memlog_home, "--method", "tools/call", "--tool-name",
                      "search_memory", "--tool-arg", "query=inspector calls")  # fmt: skip
    assert found["structuredContent"]["results"][0]["name"] == "Inspected"  # type: ignore[index]
    observed = [r.event for r in EventLog(memlog_home).read(START) if isinstance(r.event, Observed)]
    assert [e.name for e in observed] == ["Inspected"]


@pytest.mark.slow
def test_claude_code_offers_the_tools_on_the_first_turn(tmp_path: Path) -> None:
    """Ten ``claude -p`` runs of Claude Code 2.1.197 with the plugin installed: every first
    request to the model carries memlog's three tools (2.1.332 defers them behind its tool
    search instead: ``tests/claude_code/test_latest.py``)."""
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    bin_dir = str(Path(sys.executable).parent)  # the memlog of this run, found on PATH
    with MessagesAPI(text="ok") as api:
        home = tmp_path / "home"
        home.mkdir()
        env = {
            "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "MEMLOG_HOME": str(tmp_path / "memory"),
            "MEMLOG_EMBEDDING_PROVIDER": "hashing",
        }
        claude = ClaudeCode(claude_binary(), home, api.url, env)
        installed = claude.install_plugin(REPO, project)
        assert installed.returncode == 0, installed.stdout + installed.stderr
        offered, sessions = [], []
        for run in range(RUNS):
            before = len(api.messages)
            ran = claude.run(["-p", f"hello {run}", "--output-format", "json"], cwd=project)
            assert ran.returncode == 0, ran.stdout + ran.stderr
            sessions.append(ran.result["session_id"])
            first = api.messages[before]
            names = {t.get("name", "") for t in first.get("tools") or []}
            offered.append({n.rsplit("__", 1)[-1] for n in names if n.startswith("mcp__")})
    assert offered == [TOOLS] * RUNS, offered
    # `claude -p` shows no hook message: the plugin keeps its notice for a watched session
    told = [
        '"hook_system_message","content":"memlog extraction (' in t.read_text()
        for t in (home / ".claude" / "projects" / project_folder(project) / f"{s}.jsonl"
                  for s in sessions)
    ]  # fmt: skip
    assert told == [False] * RUNS
    assert not list((home / ".claude" / "plugins" / "data").rglob("extraction-told"))


@pytest.mark.slow
def test_a_first_turn_tool_call_stores_a_memory_and_nothing_is_sent_to_label_it(
    tmp_path: Path,
) -> None:
    """Claude Code, on its first turn, calls store_memory through the plugin: the memory is
    in the log, labelled on this machine, and, with an API key set and every setting at its
    default, no labelling request reached the API (only Claude Code's own two turns)."""
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    memory = tmp_path / "memory"
    lesson = {"name": "Pin CI tools", "category": "patterns",
              "description": "Pin the versions of CI tools so that builds stay reproducible.",
              "reasoning": "An unpinned linter upgrade broke every build one morning."}  # fmt: skip
    tool = "mcp__plugin_memlog_memlog__store_memory"
    with MessagesAPI(text="Stored.") as api:
        api.script = [[{"type": "tool_use", "name": tool, "input": lesson}]]
        home = tmp_path / "home"
        home.mkdir()
        env = {
            "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "MEMLOG_HOME": str(memory),
        }  # the defaults otherwise, the local model among them
        claude = ClaudeCode(claude_binary(), home, api.url, env)
        installed = claude.install_plugin(REPO, project)
        assert installed.returncode == 0, installed.stdout + installed.stderr
        ran = claude.run(["-p", "Remember to pin CI tools.", "--allowedTools", tool,
                          "--output-format", "json"], cwd=project)  # fmt: skip
        assert ran.returncode == 0, ran.stdout + ran.stderr
        sent = list(api.messages)
    assert len(sent) == 2  # the turn that called the tool, and the one that read its result
    result = json.dumps(sent[1]["messages"][-1])
    assert '\\"created\\":true' in result and 'is_error": true' not in result
    assert not [m for m in sent if "Choose keyword labels" in json.dumps(m)]
    events = [r.event for r in EventLog(memory).read()]
    (stored,) = [e for e in events if isinstance(e, Observed)]
    assert stored.name == "Pin CI tools" and stored.writer is not None
    assert stored.writer.command == "serve-mcp"
    assert {e.provider for e in events if isinstance(e, Labelled)} == {"local"}


@pytest.mark.slow
def test_claude_code_says_what_it_did_with_a_memory(tmp_path: Path) -> None:
    """Claude Code, given a memory at its start, calls record_influence through the plugin:
    the judgment is recorded for the session Claude Code ran, as the agent's own."""
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    memory = tmp_path / "memory"
    env = {
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "MEMLOG_HOME": str(memory),
        "MEMLOG_EMBEDDING_PROVIDER": "hashing",
        "MEMLOG_EXTRACTION_PROVIDER": "off",
    }
    description = "Pin the versions of CI tools so that builds stay reproducible."
    done = subprocess.run(
        [sys.executable, "-m", "memlog", "observe", "--name", "Pin CI tools", "--description",
         description, "--category", "patterns"],
        env={**os.environ, **env}, cwd=project, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    tool = "mcp__plugin_memlog_memlog__record_influence"
    said = {"entry": "Pin CI tools", "verdict": "applied",
            "evidence": "pinned ruff to 0.6.9 in the CI workflow"}  # fmt: skip
    with MessagesAPI(text="Noted.") as api:
        api.script = [[{"type": "tool_use", "name": tool, "input": said}]]
        home = tmp_path / "home"
        home.mkdir()
        claude = ClaudeCode(claude_binary(), home, api.url, env)
        installed = claude.install_plugin(REPO, project)
        assert installed.returncode == 0, installed.stdout + installed.stderr
        ran = claude.run(["-p", "Pin the linter in CI.", "--allowedTools", tool,
                          "--output-format", "json"], cwd=project)  # fmt: skip
        assert ran.returncode == 0, ran.stdout + ran.stderr
        sent = list(api.messages)
    assert "Pin CI tools" in json.dumps(sent[0])  # the start's block gave it
    result = json.dumps(sent[1]["messages"][-1])
    assert '\\"applied_in\\":1' in result and 'is_error": true' not in result
    (judged,) = [r.event for r in EventLog(memory).read() if isinstance(r.event, Influenced)]
    assert judged.session_id == ran.result["session_id"] and judged.source == "agent"
    assert (judged.verdict, judged.evidence) == ("applied", said["evidence"])
