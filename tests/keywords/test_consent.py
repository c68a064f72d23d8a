"""Nothing leaves the machine for labels unless its user named a remote labeller: the real
commands, run with an API key in the environment and every setting at its default, against
a loopback Messages API (and a loopback Ollama) that count what reaches them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from memlog.eventlog.events import Labelled
from memlog.eventlog.log import EventLog
from memlog.tests.loopback import LoopbackServer
from memlog.tests.messages_api import MessagesAPI
from memlog.tests.support import REPO

DEMO = REPO / "examples" / "demo-project"
LESSON = ["--name", "Quote CSV fields", "--description",
          "Split CSV lines with the csv module: a naive split broke quoted commas in fields.",
          "--category", "anti-patterns"]  # fmt: skip


def defaults(home: Path, api: str, ollama: str, **more: str) -> dict[str, str]:
    """The environment of a user with an API key (and a gateway) who set nothing for memlog."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("MEMLOG_", "ANTHROPIC_"))}
    return {
        **kept, "MEMLOG_HOME": str(home), "MEMLOG_RESIDENT_MINUTES": "0",
        "MEMLOG_CACHE_DIR": os.environ["MEMLOG_CACHE_DIR"],
        "ANTHROPIC_API_KEY": "sk-ant-test-key", "ANTHROPIC_BASE_URL": api,
        "OLLAMA_HOST": ollama, **more,
    }  # fmt: skip


def memlog(env: dict[str, str], cwd: Path, *args: str, stdin: str = "") -> str:
    done = subprocess.run(
        [sys.executable, "-m", "memlog", *args], env=env, cwd=cwd, input=stdin,
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def store_over_mcp(env: dict[str, str], cwd: Path) -> None:
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "store_memory", "arguments": {
                "name": "Pin CI tools", "category": "patterns",
                "description": "Pin the versions of CI tools so builds stay reproducible.",
                "reasoning": "An unpinned linter upgrade broke every build one morning."}}},
    ]  # fmt: skip
    out = memlog(env, cwd, "serve-mcp", stdin="".join(json.dumps(m) + "\n" for m in lines))
    assert json.loads(out.splitlines()[-1])["result"]["isError"] is False


def test_with_a_key_and_defaults_no_labelling_request_leaves(tmp_path: Path) -> None:
    home = tmp_path / "memory"
    ollama = LoopbackServer(lambda *_: (200, {}, b"{}"))
    with MessagesAPI(text='["csv", "quoted-commas", "naive-split"]') as api, ollama:
        env = defaults(home, api.url, ollama.url, MEMLOG_OLLAMA_BASE_URL=ollama.url)
        memlog(env, tmp_path, "observe", *LESSON)
        memlog(env, tmp_path, "import", str(DEMO))
        store_over_mcp(env, tmp_path)
        memlog(env, tmp_path, "maintenance", "--monthly")  # labels what still lacks labels
        asked = api.requests + ollama.requests
    assert asked == []
    labelled = [r.event for r in EventLog(home).read() if isinstance(r.event, Labelled)]
    assert len(labelled) >= 2  # the observed and the stored entries, labelled locally
    assert {e.provider for e in labelled} == {"local"}


def test_a_named_remote_labeller_is_asked_where_anthropic_base_url_says(tmp_path: Path) -> None:
    home = tmp_path / "memory"
    with MessagesAPI(text='["csv", "quoted-commas", "naive-split"]') as api:
        env = defaults(home, api.url, "http://127.0.0.1:9", MEMLOG_KEYWORD_PROVIDER="haiku")
        memlog(env, tmp_path, "observe", *LESSON)
    (request,) = api.messages
    assert "Split CSV lines with the csv module" in request["messages"][0]["content"]
    assert [r.headers["x-api-key"] for r in api.requests] == ["sk-ant-test-key"]
    (labelled,) = [r.event for r in EventLog(home).read() if isinstance(r.event, Labelled)]
    assert labelled.provider == "haiku"
    assert labelled.keywords == ("csv", "quoted-commas", "naive-split")
