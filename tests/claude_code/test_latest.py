"""memlog in Claude Code 2.1.332, the newest release checked (installed on Node 22).

Since 2.1.7 Claude Code defers every MCP server's tools behind its tool search: none is
in the first request's ``tools``; their names are listed in a message as deferred tools,
and the model loads one (``ToolSearch`` with ``select:<name>``) before it calls it.  So
memlog's three tools must be named there, through the plugin and through ``memlog
setup`` alike, and ``search_memory`` must answer once loaded.  The plugin validates with
no warning, and its one-time notice about extraction waits for a session someone
watches: ``claude -p`` shows no hook message.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memlog.eventlog.events import Influenced, Observed
from memlog.eventlog.log import EventLog
from memlog.tests.claude_code import ClaudeCode, latest_claude_binary
from memlog.tests.messages_api import MessagesAPI
from memlog.tests.support import REPO

pytestmark = pytest.mark.slow

TOOLS = ("store_memory", "search_memory", "list_memories", "record_influence")
#: how the tools are named: through the plugin, and through `memlog setup`
PREFIXES = {"plugin": "mcp__plugin_memlog_memlog__", "setup": "mcp__memlog__"}
RUNS = 3
LESSON = Observed(
    name="Pin CI tools", category="patterns",
    description="Pin the versions of CI tools so that builds stay reproducible.",
)  # fmt: skip
#: the notice's first words (``hooks/notice.py``)
NOTICE = b"memlog extraction ("


def latest(tmp_path: Path, api_url: str) -> ClaudeCode:
    """Claude Code 2.1.332 with a home of its own, memlog of this run first on PATH."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "MEMLOG_HOME": str(tmp_path / "memory"),
        "MEMLOG_EMBEDDING_PROVIDER": "hashing",
        "MEMLOG_EXTRACTION_PROVIDER": "off",
    }
    return ClaudeCode(latest_claude_binary(), home, api_url, env)


def wire(claude: ClaudeCode, how: str, project: Path) -> None:
    """memlog wired into ``claude`` as a user does: the plugin, or ``memlog setup``."""
    if how == "plugin":
        done = claude.install_plugin(REPO, project)
        assert done.returncode == 0, done.stdout + done.stderr
        return
    ran = subprocess.run(
        [sys.executable, "-m", "memlog", "setup"], env=claude.env(), cwd=project,
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr


def texts(request: dict[str, Any]) -> Iterator[str]:
    """Every text the request carries: its system prompt and its messages' text blocks."""
    system = request.get("system") or []
    for block in [system] if isinstance(system, str) else system:
        yield block if isinstance(block, str) else block.get("text", "")
    for message in request.get("messages") or []:
        content = message.get("content")
        for block in [content] if isinstance(content, str) else content or []:
            yield block if isinstance(block, str) else block.get("text", "")


def deferred(request: dict[str, Any]) -> set[str]:
    """The tools the request lists as deferred: the lines after the sentence that names
    them "deferred tools", up to the next blank line."""
    found: set[str] = set()
    for text in texts(request):
        lines = text.splitlines()
        for n, line in enumerate(lines):
            if "deferred tools" in line and "ToolSearch" in line:
                for name in lines[n + 1 :]:
                    if not name.strip():
                        break
                    found.add(name.strip())
    return found


def started_since(home: Path, grace: float) -> Callable[[bytes], bool]:
    """A condition on the terminal: the prompt is shown, one more session start than now
    has been claimed in ``home`` (the hook ran and answered), and ``grace`` seconds have
    passed since, for Claude Code to show what the hook said."""
    claims = home / ".hook-claims"
    before = len(list(claims.iterdir())) if claims.exists() else 0
    since: list[float] = []

    def done(shown: bytes) -> bool:
        if not since and b"shift+tab" in shown and len(list(claims.iterdir())) > before:
            since.append(time.monotonic())
        return bool(since) and time.monotonic() > since[0] + grace

    return done


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    (folder / ".git").mkdir(parents=True)
    return folder


@pytest.mark.parametrize("how", ["plugin", "setup"])
def test_memlogs_tools_are_deferred_and_named(tmp_path: Path, project: Path, how: str) -> None:
    """In every run, the first request offers ToolSearch and none of memlog's tools, and
    names all four among the deferred tools."""
    with MessagesAPI(text="ok") as api:
        claude = latest(tmp_path, api.url)
        wire(claude, how, project)
        firsts = []
        for run in range(RUNS):
            before = len(api.messages)
            ran = claude.run(["-p", f"hello {run}", "--output-format", "json"], cwd=project)
            assert ran.returncode == 0, ran.stdout + ran.stderr
            firsts.append(api.messages[before])
    names = {PREFIXES[how] + tool for tool in TOOLS}
    for first in firsts:
        offered = {t.get("name", "") for t in first.get("tools") or []}
        assert "ToolSearch" in offered and not offered & names
        assert names <= deferred(first), sorted(deferred(first))


def test_search_memory_answers_once_tool_search_loaded_it(tmp_path: Path, project: Path) -> None:
    """The model loads search_memory with ToolSearch (as 2.1.332's prompt tells it to),
    then calls it: the schema arrives in the next request and the answer holds the lesson."""
    tool = PREFIXES["plugin"] + "search_memory"
    with MessagesAPI(text="Pin your CI tools.") as api:
        claude = latest(tmp_path, api.url)
        EventLog(tmp_path / "memory").append([LESSON])
        wire(claude, "plugin", project)
        api.script = [
            [{"type": "tool_use", "name": "ToolSearch", "input": {"query": f"select:{tool}"}}],
            [{"type": "tool_use", "name": tool, "input": {"query": "CI tool versions"}}],
        ]
        ran = claude.run(["-p", "What do we know about CI?", "--allowedTools", tool,
                          "--output-format", "json"], cwd=project)  # fmt: skip
        assert ran.returncode == 0, ran.stdout + ran.stderr
        sent = list(api.messages)
    assert len(sent) == 3  # ToolSearch, the tool, the answer
    assert tool not in {t["name"] for t in sent[0]["tools"]}
    (loaded,) = [t for t in sent[1]["tools"] if t["name"] == tool]
    assert "query" in loaded["input_schema"]["properties"]
    reference = json.dumps(sent[1]["messages"][-1])
    assert '"tool_reference"' in reference and tool in reference
    (result,) = [b for b in sent[2]["messages"][-1]["content"] if b["type"] == "tool_result"]
    assert not result.get("is_error") and "Pin CI tools" in json.dumps(result["content"])
    assert ran.result["result"] == "Pin your CI tools."


def test_the_plugin_validates_without_a_warning(tmp_path: Path) -> None:
    """`claude plugin validate --strict`, with the plugin directory's own checks: no
    ICON_MISSING, nothing to report."""
    claude = latest(tmp_path, "http://127.0.0.1:9")
    market = claude.run(["plugin", "validate", "--strict", str(REPO)], cwd=tmp_path)
    assert market.returncode == 0 and "✔ Validation passed" in market.stdout, market.stdout
    plugin = claude.run(["plugin", "validate", "--strict", "--profile", "directory",
                         str(REPO / "plugin")], cwd=tmp_path)  # fmt: skip
    assert plugin.returncode == 0, plugin.stdout + plugin.stderr
    assert "ICON_MISSING" not in plugin.stdout and "⚠" not in plugin.stdout, plugin.stdout
    assert "✔ These checks found nothing to report" in plugin.stdout


def test_the_notice_waits_for_a_session_someone_watches(tmp_path: Path, project: Path) -> None:
    """`claude -p` shows no hook message, so the plugin's notice is not spent there; the
    first interactive session shows it on the terminal, once."""
    told = tmp_path / "home" / ".claude" / "plugins" / "data" / "memlog-memlog" / "extraction-told"
    with MessagesAPI(text="ok") as api:
        claude = latest(tmp_path, api.url)
        EventLog(tmp_path / "memory").append([LESSON])  # a home whose starts are claimed
        wire(claude, "plugin", project)
        for run in range(2):
            ran = claude.run(["-p", f"hello {run}"], cwd=project)
            assert ran.returncode == 0, ran.stdout + ran.stderr
        transcripts = [t.read_text() for t in claude.transcripts(project)]
        assert len(transcripts) == 2 and not any("memlog extraction (" in t for t in transcripts)
        assert not told.exists()
        shown = claude.interactive(project, lambda out: NOTICE in out and told.exists())
        assert NOTICE in shown, shown[-2000:]
        assert told.read_text().startswith("memlog extraction (off): no session is sent")
        again = claude.interactive(project, started_since(tmp_path / "memory", 3.0))
    assert b"shift+tab" in again and NOTICE not in again, again[-2000:]


def test_a_session_on_main_reads_none_of_a_branchs_lessons(tmp_path: Path) -> None:
    """`memlog claude-md --write` on a feature branch, then `git checkout main`: the first
    request of a session there holds none of the branch's lessons; back on the branch,
    it holds them (CLAUDE.md is read before any hook runs)."""
    lesson = "Open every CSV export with utf-8-sig: the billing exports begin with a BOM."
    root = tmp_path / "shop"
    root.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    for args in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "start"],
                 ["checkout", "-q", "-b", "feature/x"]):  # fmt: skip
        subprocess.run([*git, *args], cwd=root, check=True, capture_output=True)
    with MessagesAPI(text="ok") as api:
        claude = latest(tmp_path, api.url)
        env = claude.env()
        EventLog(tmp_path / "memory").append([
            Observed(name="utf-8-sig", description=lesson, category="patterns", project="shop",
                     source="extraction", branch="feature/x", section="conventions"),
        ])  # fmt: skip
        written = subprocess.run(
            [sys.executable, "-m", "memlog", "claude-md", "--write"], cwd=root, env=env,
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert written.returncode == 0, written.stderr
        sent: dict[str, str] = {}
        for branch in ("main", "feature/x"):
            subprocess.run([*git, "checkout", "-q", branch], cwd=root, env=env, check=True)
            before = len(api.messages)
            ran = claude.run(["-p", "hello"], cwd=root)
            assert ran.returncode == 0, ran.stdout + ran.stderr
            sent[branch] = json.dumps(api.messages[before])
    assert lesson not in sent["main"] and lesson in sent["feature/x"]


def test_record_influence_is_recorded_once_tool_search_loaded_it(
    tmp_path: Path, project: Path
) -> None:
    """The agent of a 2.1.332 session loads record_influence with ToolSearch and says what
    it did with the lesson its start gave it: the judgment is the agent's, for that
    session."""
    tool = PREFIXES["plugin"] + "record_influence"
    said = {"entry": LESSON.name, "verdict": "applied",
            "evidence": "pinned ruff to 0.6.9 in the CI workflow"}  # fmt: skip
    with MessagesAPI(text="Noted.") as api:
        claude = latest(tmp_path, api.url)
        EventLog(tmp_path / "memory").append([LESSON])
        wire(claude, "plugin", project)
        api.script = [
            [{"type": "tool_use", "name": "ToolSearch", "input": {"query": f"select:{tool}"}}],
            [{"type": "tool_use", "name": tool, "input": said}],
        ]
        ran = claude.run(["-p", "Pin the linter in CI.", "--allowedTools", tool,
                          "--output-format", "json"], cwd=project)  # fmt: skip
        assert ran.returncode == 0, ran.stdout + ran.stderr
        sent = list(api.messages)
    assert len(sent) == 3  # ToolSearch, the tool, the answer
    assert LESSON.name in json.dumps(sent[0])  # the start's block gave it
    (result,) = [b for b in sent[2]["messages"][-1]["content"] if b["type"] == "tool_result"]
    assert not result.get("is_error"), result
    log = EventLog(tmp_path / "memory")
    (judged,) = [r.event for r in log.read() if isinstance(r.event, Influenced)]
    assert judged.session_id == ran.result["session_id"] and judged.source == "agent"
    assert (judged.verdict, judged.evidence) == ("applied", said["evidence"])
