"""JSON-RPC 2.0 as ``memlog serve-mcp`` speaks it: every line gets what the specification
says (a result, an error with ``id: null`` when the id cannot be read, or nothing for a
notification), within depth and size limits, and the server keeps serving after each."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from memlog.eventlog.events import Observed
from memlog.eventlog.log import START, EventLog
from memlog.mcp_server import protocol
from memlog.mcp_server.server import VERSIONS
from memlog.tests.mcp_server.helpers import call, raw_server, request, store_args
from memlog.vocabulary import MAX_EVENT_BYTES

INIT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "t", "version": "0"},
}

#: (line, the error code, whether the id could be read)
REFUSED: list[tuple[bytes, int, Any]] = [
    (b"not json", protocol.PARSE_ERROR, None),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "ping"', protocol.PARSE_ERROR, None),
    (b"\xff\xfe{}", protocol.PARSE_ERROR, None),
    # invalid UTF-8 inside a string of otherwise good JSON: still a parse error
    (
        b'{"jsonrpc": "2.0", "id": 11, "method": "ping", "params": {"a": "\xff\xfe"}}',
        protocol.PARSE_ERROR,
        None,
    ),
    (b"42", protocol.INVALID_REQUEST, None),
    (b'"ping"', protocol.INVALID_REQUEST, None),
    (b"[]", protocol.INVALID_REQUEST, None),
    (b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]', protocol.INVALID_REQUEST, None),
    (b'{"foo": 1}', protocol.INVALID_REQUEST, None),
    (b'{"id": 3, "method": "ping"}', protocol.INVALID_REQUEST, 3),
    (b'{"jsonrpc": "1.0", "id": "a", "method": "ping"}', protocol.INVALID_REQUEST, "a"),
    (b'{"jsonrpc": "2.0", "id": 4}', protocol.INVALID_REQUEST, 4),
    (b'{"jsonrpc": "2.0", "id": 5, "method": 12}', protocol.INVALID_REQUEST, 5),
    (b'{"jsonrpc": "2.0", "id": true, "method": "ping"}', protocol.INVALID_REQUEST, None),
    (b'{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}', protocol.INVALID_REQUEST, None),
    (b'{"jsonrpc": "2.0", "id": {}, "method": "ping"}', protocol.INVALID_REQUEST, None),
    (b'{"jsonrpc": "2.0", "id": 6, "method": "ping", "params": [1]}', protocol.INVALID_PARAMS, 6),
    (b'{"jsonrpc": "2.0", "id": 7, "method": "resources/list"}', protocol.METHOD_NOT_FOUND, 7),
    (
        b'{"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {}}',
        protocol.INVALID_PARAMS,
        8,
    ),
    (
        b'{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "nope"}}',
        protocol.INVALID_PARAMS,
        9,
    ),
    (json.dumps(call(10, "list_memories", [])).encode(), protocol.INVALID_PARAMS, 10),  # type: ignore[arg-type]
    (b"[" * 5000 + b"]" * 5000, protocol.INVALID_REQUEST, None),
]


def nested(levels: int) -> Any:
    value: Any = []
    for _ in range(levels - 1):
        value = [value]
    return value


def test_the_error_codes_are_json_rpcs() -> None:
    # JSON-RPC 2.0, section 5.1: what a client matches on, whatever the constants are named
    codes = (protocol.PARSE_ERROR, protocol.INVALID_REQUEST, protocol.INVALID_PARAMS)
    assert codes == (-32700, -32600, -32602)


def test_every_line_gets_what_json_rpc_says(
    project: Path, memlog_home: Path, tmp_path: Path
) -> None:
    deep = json.dumps(request(12, "ping", {"deep": nested(protocol.MAX_DEPTH)})).encode()
    with (
        open(tmp_path / "stderr.log", "wb") as stderr,
        raw_server(project, memlog_home, stderr) as raw,
    ):
        for line, code, request_id in REFUSED:
            raw.send(line)
            reply = raw.reply()
            assert reply["jsonrpc"] == "2.0" and "result" not in reply, (line[:80], reply)
            assert reply["id"] == request_id and reply["error"]["code"] == code, (line[:80], reply)
            assert reply["error"]["message"] and "\n" not in reply["error"]["message"]
        raw.send(deep)  # nesting beyond the limit is refused, and one level less is not
        assert raw.reply()["error"]["code"] == protocol.INVALID_REQUEST
        shallow = request(13, "ping", {"deep": nested(protocol.MAX_DEPTH - 3)})
        assert raw.exchange(shallow) == {"jsonrpc": "2.0", "id": 13, "result": {}}
        # nothing is answered to notifications, known or not, nor to a stray response
        for quiet in (
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
            {"jsonrpc": "2.0", "method": "no/such/notification"},
            {"jsonrpc": "2.0", "id": 77, "result": {}},
            {"jsonrpc": "2.0", "id": 78, "error": {"code": -1, "message": "x"}},
        ):
            raw.send(json.dumps(quiet).encode())
        raw.send(b"")
        raw.send(b"   ")
        assert raw.silent()
        # and the server still serves
        stored = raw.exchange(call(14, "store_memory", store_args("after")))
    assert stored is not None and stored["result"]["isError"] is False


def test_a_twenty_megabyte_description_is_a_tool_error(
    project: Path, memlog_home: Path, tmp_path: Path
) -> None:
    huge = store_args("huge", description="A lesson. " + "x" * (20 << 20))
    with (
        open(tmp_path / "stderr.log", "wb") as stderr,
        raw_server(project, memlog_home, stderr) as raw,
    ):
        refused = raw.exchange(call(1, "store_memory", huge))
        stored = raw.exchange(call(2, "store_memory", store_args("small")))
    assert refused is not None and refused["result"]["isError"] is True
    message = refused["result"]["content"][0]["text"]
    assert f"more than memlog's maximum event size of {MAX_EVENT_BYTES} bytes" in message
    assert "\n" not in message and len(message) < 300
    assert stored is not None and stored["result"]["isError"] is False
    observed = [r.event for r in EventLog(memlog_home).read(START) if isinstance(r.event, Observed)]
    assert [e.name for e in observed] == ["Parser lesson small"]


def test_a_line_past_the_message_limit_is_dropped_unread(
    project: Path, memlog_home: Path, tmp_path: Path
) -> None:
    padding = b" " * (protocol.MAX_MESSAGE_BYTES + 10)
    with (
        open(tmp_path / "stderr.log", "wb") as stderr,
        raw_server(project, memlog_home, stderr) as raw,
    ):
        raw.send(b'{"jsonrpc": "2.0", "id": 1, "method": "ping"' + padding + b"}")
        refused = raw.reply()
        after = raw.exchange(request(2, "ping", {}))
    assert refused["id"] is None and refused["error"]["code"] == protocol.INVALID_REQUEST
    assert f"at most {protocol.MAX_MESSAGE_BYTES}" in refused["error"]["message"]
    assert after == {"jsonrpc": "2.0", "id": 2, "result": {}}


@pytest.mark.parametrize(
    ("asked", "given", "has_output"),
    [("2025-11-25", "2025-11-25", True), ("2025-06-18", "2025-06-18", True),
     ("2025-03-26", "2025-03-26", False), ("2024-11-05", "2024-11-05", False),
     ("2099-01-01", VERSIONS[0], True), (None, VERSIONS[0], True)],
)  # fmt: skip
def test_protocol_versions(
    project: Path,
    memlog_home: Path,
    tmp_path: Path,
    asked: str | None,
    given: str,
    has_output: bool,
) -> None:
    params = {**INIT, "protocolVersion": asked}
    with (
        open(tmp_path / "stderr.log", "wb") as stderr,
        raw_server(project, memlog_home, stderr) as raw,
    ):
        init = raw.exchange(request(1, "initialize", params))
        listed = raw.exchange(request(2, "tools/list", {}))
        stored = raw.exchange(call(3, "store_memory", store_args("v")))
    assert init is not None and init["result"]["protocolVersion"] == given
    assert init["result"]["serverInfo"]["name"] == "memlog"
    assert listed is not None and stored is not None
    for tool in listed["result"]["tools"]:
        assert tool["inputSchema"]["type"] == "object"
        assert ("outputSchema" in tool) is has_output and ("title" in tool) is has_output
        assert ("annotations" in tool) is (given >= "2025-03-26")
    assert ("structuredContent" in stored["result"]) is has_output
    assert json.loads(stored["result"]["content"][0]["text"])["created"] is True


# -- the pieces, without a process ----------------------------------------------------------


def test_lines_are_read_within_the_limit() -> None:
    stream = io.BytesIO(b"one\n" + b"x" * 50 + b"\ntwo\nlast")
    found = list(protocol.lines(stream, limit=10))
    assert found == [b"one", protocol.TooLarge(51), b"two", b"last"]


def test_depth_is_counted_without_recursion() -> None:
    assert protocol.depth("text") == 0
    assert protocol.depth({"a": [1, {"b": []}]}) == 4
    assert protocol.depth(nested(100_000)) == 100_000


def test_invalid_utf8_inside_a_string_is_named_where_it_is_in_the_line() -> None:
    line = b'{"jsonrpc": "2.0", "id": 11, "method": "ping", "params": {"a": "ok \xff"}}'
    with pytest.raises(protocol.Refused) as refused:
        protocol.parse(line)
    at = line.index(b"\xff")  # in the line, not in the string msgspec was reading
    assert refused.value.code == protocol.PARSE_ERROR
    assert refused.value.message == f"Parse error: not UTF-8 at byte {at}"
