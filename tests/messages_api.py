"""A loopback Anthropic Messages API, for memlog's providers and for the real ``claude``.

``MessagesAPI()`` is a ``LoopbackServer`` answering ``POST /v1/messages`` with
the real API's shapes: a JSON message, or server-sent events when the
request asks for ``stream: true`` (message_start, content_block_start /
delta / stop, message_delta, message_stop).  What it answers is set on the
object between calls:

* ``text``: the assistant's text (default ``"ok"``);
* ``structured``: an object; when the request offers a tool named
  ``StructuredOutput`` (what ``claude --json-schema`` adds) the answer is a
  ``tool_use`` calling it with this input; otherwise, when the request has an
  ``output_config.format`` JSON schema (structured outputs over the API),
  the text is this object as JSON;
* ``script``: a list of answers, each a list of content blocks, used in turn
  by the successful calls before falling back to the rules above;
* ``status`` (+ ``retry_after``, ``error_times``): answer errors in the API's
  ``{"type": "error", "error": {...}}`` shape, for the next ``error_times``
  calls (counted down) or for every call while ``error_times`` is None;
* ``usage``: ``input_tokens`` / ``output_tokens`` to report;
* ``raw``: bytes to send as the body of a 200 (truncated or invalid JSON).

``messages`` lists the decoded bodies of every ``/v1/messages`` call.
Anything else (``HEAD /``, count_tokens, other paths) gets a small 200.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Mapping
from typing import Any

from memlog.tests.loopback import Answer, LoopbackServer

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


class MessagesAPI(LoopbackServer):
    """The Messages API on 127.0.0.1; configure the answers through attributes."""

    def __init__(self, text: str = "ok", structured: Any = None) -> None:
        super().__init__(self._handle)
        self.text = text
        self.structured = structured
        self.script: list[list[dict[str, Any]]] = []
        self.status: int | None = None
        self.retry_after: str | None = None
        self.error_times: int | None = None
        self.error_message = ""
        self.usage = {"input_tokens": 120, "output_tokens": 40}
        self.raw: bytes | None = None
        self.messages: list[dict[str, Any]] = []
        self._successes = itertools.count(1)
        self._ids = itertools.count(1)
        self._guard = threading.Lock()

    # -- dispatch ------------------------------------------------------------------

    def _handle(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> Answer:
        route = path.split("?", 1)[0]
        if method != "POST" or not route.endswith("/v1/messages"):
            if route.endswith("/count_tokens"):
                return 200, {}, json.dumps({"input_tokens": max(1, len(body) // 4)}).encode()
            return 200, {}, b"{}"
        request = json.loads(body) if body else {}
        with self._guard:
            self.messages.append(request)
            failure = self._failure()
            call = 0 if failure is not None else next(self._successes)
        if failure is not None:
            return failure
        if self.raw is not None:
            return 200, {}, self.raw
        content = self._content(request, call)
        if request.get("stream"):
            return 200, {"Content-Type": "text/event-stream"}, self._events(request, content)
        return 200, {}, json.dumps(self._message(request, content)).encode()

    def _failure(self) -> Answer | None:
        if self.status is None or self.error_times == 0:
            return None
        if self.error_times is not None:
            self.error_times -= 1
        kind = ERROR_TYPES.get(self.status, "api_error")
        headers = {"retry-after": self.retry_after} if self.retry_after is not None else {}
        error = {"type": kind, "message": self.error_message or f"fake {kind}"}
        return self.status, headers, json.dumps({"type": "error", "error": error}).encode()

    # -- what to say -------------------------------------------------------------

    def _content(self, request: dict[str, Any], call: int) -> list[dict[str, Any]]:
        """Successful call number ``call``'s content blocks."""
        if 0 < call <= len(self.script):
            return [self._with_id(dict(block)) for block in self.script[call - 1]]
        tools = {t.get("name") for t in request.get("tools") or [] if isinstance(t, dict)}
        if self.structured is not None and "StructuredOutput" in tools and not _answered(request):
            use = {"type": "tool_use", "name": "StructuredOutput", "input": self.structured}
            return [self._with_id(use)]
        if self.structured is not None and _wants_json(request):
            return [{"type": "text", "text": json.dumps(self.structured)}]
        return [{"type": "text", "text": self.text}]

    def _with_id(self, block: dict[str, Any]) -> dict[str, Any]:
        if block.get("type") == "tool_use" and not block.get("id"):
            block["id"] = f"toolu_fake_{next(self._ids):08d}"
        return block

    def _message(self, request: dict[str, Any], content: list[dict[str, Any]]) -> dict[str, Any]:
        stop = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
        return {
            "id": f"msg_fake_{next(self._ids):08d}",
            "type": "message",
            "role": "assistant",
            "model": request.get("model", "claude-haiku-4-5"),
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {
                "input_tokens": self.usage["input_tokens"],
                "output_tokens": self.usage["output_tokens"],
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            },
        }

    def _events(self, request: dict[str, Any], content: list[dict[str, Any]]) -> bytes:
        message = self._message(request, content)
        start = {**message, "content": [], "stop_reason": None}
        start["usage"] = {**message["usage"], "output_tokens": 1}
        events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
        for index, block in enumerate(content):
            events += _block_events(index, block)
        events.append(
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": self.usage["output_tokens"]},
            }
        )
        events.append({"type": "message_stop"})
        lines = [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events]
        return "".join(lines).encode()


def _block_events(index: int, block: dict[str, Any]) -> list[dict[str, Any]]:
    if block["type"] == "text":
        first = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": block["text"]}
    else:
        first = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
    return [
        {"type": "content_block_start", "index": index, "content_block": first},
        {"type": "content_block_delta", "index": index, "delta": delta},
        {"type": "content_block_stop", "index": index},
    ]


def _answered(request: dict[str, Any]) -> bool:
    """Whether the last message returns a tool result (the structured answer was taken)."""
    messages = request.get("messages") or []
    last = messages[-1] if messages else {}
    content = last.get("content")
    return isinstance(content, list) and any(
        isinstance(c, dict) and c.get("type") == "tool_result" for c in content
    )


def _wants_json(request: dict[str, Any]) -> bool:
    """A request for structured output over the API (``output_config.format``)."""
    config = request.get("output_config") or request.get("output_format") or {}
    found = config.get("format", config) if isinstance(config, dict) else {}
    return isinstance(found, dict) and found.get("type") == "json_schema"
