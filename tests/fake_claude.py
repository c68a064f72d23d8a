"""A fake ``claude`` executable for tests of the ``claude-cli`` provider.

``install(folder)`` writes ``folder/claude``, a script run by this Python;
put ``folder`` first on PATH.  What it answers is set in its environment:

* ``FAKE_CLAUDE_MODE``: ``success`` (default), ``invalid-then-valid``,
  ``invalid`` (always fails the schema: ``error_max_turns``), ``no-structured``
  (a success without ``structured_output``, as the real CLI does when the
  model never calls the tool), ``error`` (``is_error`` with a 400),
  ``rate-limit`` (429), ``overloaded`` (529), ``not-logged-in``, ``hang``
  (sleeps past any deadline), ``garbage`` (not JSON);
* ``FAKE_CLAUDE_ANSWERS``: a JSON list of structured outputs, used in turn
  (the last one repeats); ``FAKE_CLAUDE_STATE``: a file counting the calls;
* ``FAKE_CLAUDE_LOG``: a JSON-lines file receiving each call's argv, stdin
  and the environment variables that matter.

The result objects have the real CLI's shape (``@anthropic-ai/claude-code``
2.1.197, recorded offline): ``type``, ``subtype``, ``is_error``,
``api_error_status``, ``result``, ``usage``, ``modelUsage``,
``total_cost_usd`` and, on success, ``structured_output``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

MODEL = "claude-haiku-4-5-20251001"
ENV_SEEN = (
    "MEMLOG_EXTRACTING", "MAX_THINKING_TOKENS", "CLAUDE_CODE_MAX_RETRIES", "ANTHROPIC_API_KEY",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
)  # fmt: skip


def install(folder: Path) -> Path:
    """Write the fake ``claude`` into ``folder``; return its path."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "claude"
    path.write_text(f"#!{sys.executable}\nimport sys\nsys.path[:0] = {sys.path!r}\n"
                    "from memlog.tests.fake_claude import main\nmain()\n")  # fmt: skip
    path.chmod(0o755)
    return path


def _usage(tokens_in: int, tokens_out: int) -> dict[str, Any]:
    return {
        "input_tokens": tokens_in, "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0, "output_tokens": tokens_out,
        "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
        "service_tier": "standard",
    }  # fmt: skip


def result(subtype: str = "success", **fields: Any) -> dict[str, Any]:
    """A result object as ``claude -p --output-format json`` prints it."""
    tokens_in, tokens_out = fields.pop("tokens", (1200, 150))
    cost = round(tokens_in * 1e-6 + tokens_out * 5e-6, 6) if tokens_in else 0
    base: dict[str, Any] = {
        "type": "result", "subtype": subtype, "is_error": False, "api_error_status": None,
        "duration_ms": 320, "duration_api_ms": 180, "num_turns": 2, "result": "",
        "stop_reason": "tool_use", "session_id": "5f2d3c1b-8e9a-4b7c-a1d2-3e4f5a6b7c8d",
        "total_cost_usd": cost, "usage": _usage(tokens_in, tokens_out),
        "modelUsage": {MODEL: {"inputTokens": tokens_in, "outputTokens": tokens_out,
                               "costUSD": cost}} if tokens_in else {},
        "permission_denials": [], "terminal_reason": "completed",
        "uuid": "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d",
    }  # fmt: skip
    base.update(fields)
    return base


def _call_number() -> int:
    state = os.environ.get("FAKE_CLAUDE_STATE")
    if not state:
        return 1
    path = Path(state)
    number = int(path.read_text() or "0") + 1 if path.exists() else 1
    path.write_text(str(number))
    return number


def _answer(number: int) -> Any:
    answers = json.loads(os.environ.get("FAKE_CLAUDE_ANSWERS") or "[]")
    if not answers:
        return {"extractions": []}
    return answers[min(number, len(answers)) - 1]


def _outcome(mode: str, number: int) -> dict[str, Any] | None:
    invalid = result(
        "error_max_turns", is_error=True, errors=["Reached maximum number of turns (1)"]
    )
    del invalid["result"]
    errors: dict[str, dict[str, Any]] = {
        "error": result(is_error=True, api_error_status=400, tokens=(0, 0),
                        result="API Error: 400 invalid_request_error"),
        "rate-limit": result(is_error=True, api_error_status=429, tokens=(0, 0),
                             result="API Error: Request rejected (429) · rate limited"),
        "overloaded": result(is_error=True, api_error_status=529, tokens=(0, 0),
                             result="API Error: 529 Overloaded"),
        "not-logged-in": result(is_error=True, tokens=(0, 0),
                                result="Not logged in · Please run /login"),
        "no-structured": result(result="I found nothing to extract.", stop_reason="end_turn"),
    }  # fmt: skip
    if mode in errors:
        return errors[mode]
    if mode == "invalid" or (mode == "invalid-then-valid" and number == 1):
        return invalid
    if mode == "garbage":
        return None
    answer = _answer(number)
    return result(result=json.dumps(answer), structured_output=answer)


def main() -> None:
    prompt = sys.stdin.read()
    mode = os.environ.get("FAKE_CLAUDE_MODE", "success")
    number = _call_number()
    log = os.environ.get("FAKE_CLAUDE_LOG")
    if log:
        seen = {k: os.environ[k] for k in ENV_SEEN if k in os.environ}
        entry = {
            "argv": sys.argv[1:], "stdin": prompt, "env": seen, "cwd": os.getcwd(),
            "pid": os.getpid(),
        }  # fmt: skip
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")
    if mode == "hang":
        time.sleep(600)
    outcome = _outcome(mode, number)
    if outcome is None:
        print("this is not json")
        sys.exit(1)
    print(json.dumps(outcome))
    sys.exit(1 if outcome["is_error"] else 0)
