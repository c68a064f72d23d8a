"""The user's own ``claude`` CLI as a structured-output model (no key of memlog's own).

Flags, checked against ``claude --help`` of ``@anthropic-ai/claude-code``
2.1 and its behaviour offline:

``claude -p --output-format json --json-schema SCHEMA --model haiku
--max-turns 1 --tools "" --strict-mcp-config --setting-sources ""
--no-session-persistence --settings '{"disableAllHooks":true}'
--system-prompt SYSTEM``, the prompt on stdin (a transcript can be larger
than one argument may be).  ``--json-schema`` adds a ``StructuredOutput``
tool; ``--max-turns 1`` makes one model call (an answer that fails the
schema ends the run as ``error_max_turns`` instead of being retried by the
CLI: memlog does its own, bounded, retries); no tools, no MCP servers, no
settings, hooks or transcript of its own: the extraction never shows up as
a session of its own, and never triggers memlog's hooks (the environment
also carries ``MEMLOG_EXTRACTING=1``, which every memlog hook obeys).
``MAX_THINKING_TOKENS=0`` turns off Haiku's thinking, which ``-p``
otherwise enables with a 32k budget.  ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1``
makes the run one request: without it Claude Code 2.1 first asks the model for
a title for the "session", sending it the transcript a second time (counted
against a loopback Messages API: two requests per extraction without it, one
with it).  It runs in an empty directory so no
``CLAUDE.md`` is read, in a process group of its own that is killed at the
deadline.

The result is one JSON object: ``is_error`` is the error flag (API errors
keep ``subtype: success``), ``api_error_status`` the HTTP status, and a run
may succeed without ``structured_output`` (the model never called the
tool): that is an invalid answer, as are ``error_max_turns`` and
``error_max_structured_output_retries``.  429 and 529 are rate limits.
Tokens are counted from ``modelUsage`` (every request the run made, by
model) and the cost is ``total_cost_usd`` (the same requests), not from
``usage``, which holds the main request alone.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Mapping
from typing import Any, ClassVar

from memlog.errors import ProviderError, ProviderUnavailable, RateLimited
from memlog.eventlog.events import Usage
from memlog.llm.base import Answer, StructuredModel, cost_micros

GUARD = "MEMLOG_EXTRACTING"
MODEL = "haiku"
INVALID_SUBTYPES = ("error_max_turns", "error_max_structured_output_retries")
RATE_LIMITS = (429, 529)
_MESSAGE_CHARS = 240


def not_found(where: str) -> ProviderUnavailable:
    return ProviderUnavailable(
        f"Claude CLI not found ({where}); install it (npm install -g @anthropic-ai/claude-code) "
        "and make sure `claude` is on PATH, or set memory_extraction_provider"
    )


def arguments(binary: str, system: str, schema: dict[str, Any], model: str) -> list[str]:
    return [
        binary, "-p", "--output-format", "json", "--json-schema", json.dumps(schema),
        "--model", model, "--max-turns", "1", "--tools", "", "--strict-mcp-config",
        "--setting-sources", "", "--no-session-persistence",
        "--settings", '{"disableAllHooks":true}', "--system-prompt", system,
    ]  # fmt: skip


def child_environment(env: Mapping[str, str]) -> dict[str, str]:
    return {
        **env,
        GUARD: "1",
        "MAX_THINKING_TOKENS": "0",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "CLAUDE_CODE_MAX_RETRIES": env.get("CLAUDE_CODE_MAX_RETRIES", "2"),
    }


def _one_line(text: str) -> str:
    folded = " ".join(text.split())
    return folded if len(folded) <= _MESSAGE_CHARS else folded[: _MESSAGE_CHARS - 3] + "..."


class ClaudeCli(StructuredModel):
    """``claude -p`` with a JSON schema, Haiku, one turn, nothing else."""

    name: ClassVar[str] = "claude-cli"

    def __init__(self, env: Mapping[str, str] = os.environ, model: str = MODEL) -> None:
        self.env = dict(env)
        self.model = model
        found = shutil.which("claude", path=self.env.get("PATH", os.defpath))
        if found is None:
            raise not_found("no `claude` on PATH")
        self.binary = found

    def ask(self, system: str, prompt: str, schema: dict[str, Any], timeout: float) -> Answer:
        args = arguments(self.binary, system, schema, self.model)
        out, err, code = self._run(args, prompt, timeout)
        result = _result(out)
        if result is None:
            why = _one_line(err) or _one_line(out) or "no output"
            raise ProviderError(f"claude-cli exited with status {code}: {why}")
        return self._answer(result)

    def _run(self, args: list[str], prompt: str, timeout: float) -> tuple[str, str, int]:
        with tempfile.TemporaryDirectory(prefix="memlog-extract-") as empty:
            try:
                child = subprocess.Popen(
                    args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                    cwd=empty, env=child_environment(self.env), start_new_session=True,
                )  # fmt: skip
            except FileNotFoundError:
                raise not_found(self.binary) from None
            except OSError as exc:
                raise ProviderError(f"claude-cli: cannot run {self.binary}: {exc}") from None
            try:
                out, err = child.communicate(prompt.encode("utf-8"), timeout=max(timeout, 0.1))
            except subprocess.TimeoutExpired:
                _kill(child)
                raise ProviderError(f"claude-cli: no answer within {timeout:.0f} s") from None
        return out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), child.returncode

    def _answer(self, result: dict[str, Any]) -> Answer:
        usage = _usage(result, self.model)
        if result.get("is_error"):
            self._refusal(result)
            subtype = str(result.get("subtype", ""))
            why = "; ".join(map(str, result.get("errors") or [])) or subtype
            return Answer(None, usage, f"claude-cli: {why}")
        if "structured_output" not in result:
            return Answer(None, usage, "claude-cli: the result has no structured_output")
        return Answer(result["structured_output"], usage)

    def _refusal(self, result: dict[str, Any]) -> None:
        """Raise what an error result means, unless it is an invalid answer."""
        if result.get("subtype") in INVALID_SUBTYPES:
            return
        status = result.get("api_error_status")
        said = _one_line(str(result.get("result") or result.get("errors") or "error"))
        if status in RATE_LIMITS:
            raise RateLimited(f"claude-cli: rate limited ({status}): {said}")
        if status in (401, 403) or "Not logged in" in said:
            raise ProviderUnavailable(f"claude-cli: not signed in or key refused: {said}")
        raise ProviderError(f"claude-cli: {said}")


def _kill(child: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except OSError:
        child.kill()
    child.communicate()


def _result(stdout: str) -> dict[str, Any] | None:
    """The JSON result object: the last line of stdout that is one."""
    for line in reversed(stdout.strip().splitlines()):
        try:
            found = json.loads(line)
        except ValueError:
            continue
        if isinstance(found, dict) and found.get("type") == "result":
            return found
    return None


def _usage(result: dict[str, Any], asked: str) -> Usage:
    """What the run's requests were sent and cost: ``modelUsage``, else ``usage``."""
    models = result.get("modelUsage")
    if isinstance(models, dict) and models:
        counted = [c for c in models.values() if isinstance(c, dict)]
        tokens_in = sum(_count(c, "inputTokens", "cacheReadInputTokens",
                               "cacheCreationInputTokens") for c in counted)  # fmt: skip
        tokens_out = sum(_count(c, "outputTokens") for c in counted)
        model = next(iter(models))
    else:
        counts = result.get("usage") if isinstance(result.get("usage"), dict) else {}
        assert isinstance(counts, dict)
        tokens_in = _count(counts, "input_tokens", "cache_creation_input_tokens",
                           "cache_read_input_tokens")  # fmt: skip
        tokens_out = _count(counts, "output_tokens")
        model = asked
    reported = result.get("total_cost_usd")
    if isinstance(reported, int | float):
        cost = round(reported * 1_000_000)
    else:
        cost = cost_micros(model, tokens_in, tokens_out)
    calls = 1 if tokens_in or tokens_out else 0
    return Usage(
        provider=ClaudeCli.name, model=model, calls=calls, tokens_in=tokens_in,
        tokens_out=tokens_out, cost_micros=cost,
    )  # fmt: skip


def _count(counts: dict[str, Any], *keys: str) -> int:
    return sum(int(counts.get(k) or 0) for k in keys)
