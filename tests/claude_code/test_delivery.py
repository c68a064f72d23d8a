"""What reaches the model, with the real Claude Code CLI (npm) over a loopback Messages API:
the start's block inline within the cap, a prompt's recall on a remembered topic only,
Claude Code's auto memory recorded and every lesson given once."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memlog import claude_files
from memlog.eventlog.events import Recalled
from memlog.eventlog.log import EventLog
from memlog.home import Home
from memlog.hooks.recorder import settled
from memlog.projections.sqlite_view import queries
from memlog.retrieval.budget import size
from memlog.tests.claude_code import ClaudeCode, claude_binary
from memlog.tests.messages_api import MessagesAPI
from memlog.tests.support import FIXTURES
from memlog.vocabulary import CONTEXT_CAP_CHARS

pytestmark = pytest.mark.slow

KB = FIXTURES / "knowledge-bank-08a38d02"
START = "SessionStart hook additional context: "
PROMPT = "UserPromptSubmit hook additional context: "
BLOCK = "## Engineering Memory (from knowledge bank)"
RECALLED = "## Engineering Memory (recalled for this prompt)"
ON_TOPIC = "Add an FTS5 migration that rebuilds the search index for entities"
UNRELATED = "What is the capital of France?"
NATIVE = """---
name: no-db-mocks
description: Integration tests must hit a real database, never a mocked connection
metadata:
  type: feedback
---
Integration tests open a real SQLite database file.

**Why:** a mocked test passed while the production migration failed.
**How to apply:** in tests of the storage layer, create a temporary database file.
"""
INDEX = "- [Real databases](no-db-mocks.md) — storage tests use real database files\n"


def strip_env(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if not k.startswith("MEMLOG_")}


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("model-cache")


@pytest.fixture(scope="module")
def bank(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> Path:
    """The 265-entry bank imported with the default configuration (the local model)."""
    home = tmp_path_factory.mktemp("bank") / "memory"
    env = {**strip_env(dict(os.environ)), "MEMLOG_HOME": str(home), "MEMLOG_CACHE_DIR": str(cache)}
    subprocess.run([sys.executable, "-m", "memlog", "import", str(KB)], env=env, check=True,
                   capture_output=True, timeout=600)  # fmt: skip
    return home


class Session:
    """A temporary HOME with memlog set up, the bank as its memory, and the CLI."""

    def __init__(self, tmp_path: Path, bank: Path, cache: Path, api: MessagesAPI) -> None:
        home = tmp_path / "home"
        home.mkdir()
        self.memory = home / ".claude" / "iflow" / "memory"  # memlog's default home
        shutil.copytree(bank, self.memory)
        bin_dir = str(Path(sys.executable).parent)  # memlog of this test run, first on PATH
        # no extraction: its calls would reach the same loopback API
        extra = {"PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
                 "MEMLOG_CACHE_DIR": str(cache), "MEMLOG_EXTRACTION_PROVIDER": "off"}  # fmt: skip
        self.claude = ClaudeCode(claude_binary(), home, api.url, extra)
        self.api = api

    def memlog(self, *args: str, cwd: Path) -> str:
        done = subprocess.run([sys.executable, "-m", "memlog", *args], cwd=cwd, text=True,
                              env=self.claude.env(), capture_output=True, timeout=300)  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    def run(self, prompt: str, cwd: Path, *more: str) -> dict[str, Any]:
        """One ``claude -p``; its request (the first the API got) and its result."""
        before = len(self.api.messages)
        ran = self.claude.run(["-p", prompt, "--output-format", "json", *more], cwd=cwd)
        assert ran.returncode == 0, ran.stdout + ran.stderr
        assert settled(Home(self.memory))
        asked = [m for m in self.api.messages[before:] if prompt in json.dumps(m["messages"])]
        return {"request": asked[0], "result": ran.result}


@pytest.fixture
def session(tmp_path: Path, bank: Path, cache: Path) -> Iterator[Session]:
    with MessagesAPI(text="ok") as api:
        yield Session(tmp_path, bank, cache, api)


def texts(request: dict[str, Any]) -> list[str]:
    """Every text the request gives the model: the system prompt and each message's."""
    found = [b["text"] if isinstance(b, dict) else str(b) for b in request.get("system") or []]
    if isinstance(request.get("system"), str):
        found = [request["system"]]
    for message in request["messages"]:
        content = message["content"]
        blocks = [content] if isinstance(content, str) else content
        found += [b if isinstance(b, str) else str(b.get("text", "")) for b in blocks]
    return found


def contexts(request: dict[str, Any], label: str) -> list[str]:
    """The hook contexts of one kind the request carries (each up to the next one)."""
    found = []
    for text in texts(request):
        for part in text.split(label)[1:]:
            found.append(part.split(START)[0].split(PROMPT)[0])
    return found


def headers(text: str) -> list[str]:
    sections = ("### Anti-Patterns to Avoid", "### Heuristics", "### Patterns to Follow")
    return [ln for ln in text.splitlines() if ln.startswith("### ") and ln not in sections]


def git_project(path: Path) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


def test_the_default_block_reaches_the_model_inline(session: Session, tmp_path: Path) -> None:
    project = git_project(tmp_path / "project")
    session.memlog("setup", cwd=project)
    expected = json.loads(session.memlog("inject", "--json", cwd=project))["text"]
    assert size(expected) <= 9000 < CONTEXT_CAP_CHARS and len(headers(expected)) >= 10
    request = session.run("hi", project)["request"]
    sent = json.dumps(request)
    assert "<persisted-output>" not in sent and "Output too large" not in sent
    (context,) = contexts(request, START)  # the block, then what Claude Code adds after it
    assert context.startswith(BLOCK + "\n") and context.startswith(expected.rstrip("\n"))


def test_a_prompt_on_a_remembered_topic_is_given_its_lessons(
    session: Session, tmp_path: Path
) -> None:
    project = git_project(tmp_path / "project")
    session.memlog("setup", cwd=project)
    on_topic = session.run(ON_TOPIC, project)["request"]
    (recalled,) = contexts(on_topic, PROMPT)
    assert recalled.startswith(RECALLED) and "FTS5" in recalled and size(recalled) <= 2500
    (start,) = contexts(on_topic, START)
    assert set(headers(recalled)).isdisjoint(headers(start))  # nothing given twice
    unrelated = session.run(UNRELATED, project)["request"]
    assert contexts(unrelated, PROMPT) == [] and len(contexts(unrelated, START)) == 1
    triggers = [r.event.trigger for r in EventLog(session.memory).read()
                if isinstance(r.event, Recalled)]  # fmt: skip
    assert triggers == ["startup", "prompt", "startup"]


def test_auto_memory_is_recorded_and_nothing_arrives_twice(
    session: Session, tmp_path: Path
) -> None:
    # a path of over 200 characters, with letters outside ASCII: cut and hashed
    project = git_project(tmp_path / ("données-" + "x" * 60) / ("y" * 70) / "projét")
    assert len(str(project)) > 200
    folder = claude_files.memory_folder(str(project), session.claude.env())
    folder.mkdir(parents=True)
    (folder / "MEMORY.md").write_text(INDEX)
    (folder / "no-db-mocks.md").write_text(NATIVE)
    lesson = "Migration Idempotency via DROP+CREATE for FTS5 Tables"
    description = next(
        e.description
        for e in queries.entries(Home(session.memory), vectors=False)
        if e.name == lesson
    )
    (project / "CLAUDE.md").write_text(f"# Notes\n\n- {description}\n")
    session.memlog("setup", cwd=project)

    first = session.run("hi", project)
    system = "\n".join(texts(first["request"]))
    assert str(folder) in system  # Claude Code's folder is the one memlog reads
    assert INDEX.strip() in system  # and it loads MEMORY.md into every session
    natives = [e for e in queries.of_source(Home(session.memory), "claude-code") if e.live]
    assert [(e.name, e.category) for e in natives] == [("no-db-mocks", "heuristics")]

    question = "Should the storage layer's integration tests hit a real database or mock it?"
    second = session.run(question, project)
    resumed = session.run("And the FTS5 migration?", project, "--resume",
                          second["result"]["session_id"])  # fmt: skip
    given = contexts(resumed["request"], START) + contexts(resumed["request"], PROMPT)
    assert len(given) >= 2
    everything = "\n".join(given)
    assert "never a mocked connection" not in everything  # MEMORY.md has it already
    assert description not in everything  # the CLAUDE.md line is there already
    shown = headers(everything)
    assert shown and len(shown) == len(set(shown))  # nothing arrives twice
    assert "\n".join(texts(resumed["request"])).count(description) == 1

    elsewhere = git_project(tmp_path / "elsewhere")  # another project: ranked there
    other = session.run(question, elsewhere)["request"]
    assert any("never a mocked connection" in c for c in contexts(other, PROMPT))
