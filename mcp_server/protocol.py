"""JSON-RPC 2.0 over newline-delimited stdio, as MCP's stdio transport carries it.

Every line the client writes gets what JSON-RPC 2.0 says it should, and the
server never dies on one:

* a request (``method`` and ``id``) gets one response, a result or an error;
* a notification (``method``, no ``id``) gets none, whatever its method;
* a response (``result`` or ``error`` with an ``id``: the server sends no
  requests, so it is a stray one) gets none either;
* a line that is not JSON (invalid UTF-8 inside a string among it) gets ``-32700``
  (parse error), and JSON that is no
  JSON-RPC 2.0 message (a batch, a number, an object without ``"jsonrpc":
  "2.0"`` or ``method``, an ``id`` that is neither a string nor an integer)
  gets ``-32600`` (invalid request); both with ``"id": null`` unless the
  request's own id could be read.

Limits: a line holds at most ``MAX_MESSAGE_BYTES`` (longer ones are read
through and dropped, never kept in memory whole) and nests at most
``MAX_DEPTH`` arrays and objects; past either the answer is ``-32600``.
Nothing here loads more than msgspec: the server answers ``initialize``
while the rest of memlog is still loading.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO, Any, NamedTuple

import msgspec

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

#: the longest line read whole; tool arguments have their own, much smaller limit
MAX_MESSAGE_BYTES = 64 << 20
#: arrays and objects nested deeper than this are refused
MAX_DEPTH = 64
_CHUNK = 1 << 20
_SHOWN = 200

RequestId = int | str


class Request(NamedTuple):
    """A request (``id`` set) or a notification (``id`` None) to act on."""

    id: RequestId | None
    method: str
    params: dict[str, Any]


class Refused(Exception):
    """A message answered with a JSON-RPC error."""

    def __init__(self, code: int, message: str, request_id: RequestId | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.id = request_id


class TooLarge(NamedTuple):
    """A line longer than the limit, read through and dropped."""

    size: int


def lines(stream: IO[bytes], limit: int = MAX_MESSAGE_BYTES) -> Iterator[bytes | TooLarge]:
    """Each line of ``stream`` (newline dropped) until its end; a longer one as ``TooLarge``."""
    while True:
        line = stream.readline(limit + 1)
        if not line:
            return
        if line.endswith(b"\n"):
            yield line[:-1]
        elif len(line) <= limit:
            yield line  # the last line, without a newline
        else:
            yield TooLarge(len(line) + _skip_line(stream))


def _skip_line(stream: IO[bytes]) -> int:
    """Read up to the end of the current line; how many bytes were dropped."""
    dropped = 0
    while chunk := stream.readline(_CHUNK):
        dropped += len(chunk)
        if chunk.endswith(b"\n"):
            break
    return dropped


def _bad_byte(line: bytes) -> int:
    """Where in ``line`` its UTF-8 first fails (msgspec says where in the string)."""
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start
    return 0


def parse(line: bytes) -> Request | None:
    """The request a line holds; None for a stray response; ``Refused`` for anything else."""
    try:
        message = msgspec.json.decode(line)
    except msgspec.DecodeError as exc:
        raise Refused(PARSE_ERROR, f"Parse error: {_one_line(str(exc))}") from None
    except UnicodeDecodeError:  # msgspec checks a string's UTF-8 only when it reads it
        raise Refused(PARSE_ERROR, f"Parse error: not UTF-8 at byte {_bad_byte(line)}") from None
    except RecursionError:
        raise Refused(INVALID_REQUEST, _too_deep()) from None
    if isinstance(message, list):
        raise Refused(INVALID_REQUEST, "Invalid Request: batches are not supported")
    if not isinstance(message, dict):
        raise Refused(INVALID_REQUEST, "Invalid Request: a message is a JSON object")
    return _request(message)


def _request(message: dict[str, Any]) -> Request | None:
    request_id = message.get("id")
    valid_id = _valid_id(request_id)
    known = request_id if valid_id else None
    if "id" in message and not valid_id:
        raise Refused(INVALID_REQUEST, "Invalid Request: id must be a string or an integer")
    if message.get("jsonrpc") != "2.0":
        raise Refused(INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"', known)
    if "method" not in message:
        if "id" in message and ("result" in message or "error" in message):
            return None  # a response: this server asks nothing, so it is a stray one
        raise Refused(INVALID_REQUEST, "Invalid Request: no method", known)
    method, params = message["method"], message.get("params", {})
    if not isinstance(method, str):
        raise Refused(INVALID_REQUEST, "Invalid Request: method must be a string", known)
    if not isinstance(params, dict):
        raise Refused(INVALID_PARAMS, "Invalid params: params must be an object", known)
    if depth(params) > MAX_DEPTH - 1:
        raise Refused(INVALID_REQUEST, _too_deep(), known)
    return Request(known, method, params)


def _valid_id(value: object) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def depth(value: object) -> int:
    """How deeply arrays and objects nest in ``value`` (0 for a scalar), without recursion."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        item, level = todo.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            deepest = max(deepest, level)
            todo.extend((child, level + 1) for child in item)
    return deepest


def _too_deep() -> str:
    return f"Invalid Request: arrays and objects nested more than {MAX_DEPTH} deep"


def too_large(size: int, limit: int = MAX_MESSAGE_BYTES) -> Refused:
    return Refused(INVALID_REQUEST, f"Invalid Request: a message of {size} bytes (at most {limit})")


def encode(value: Any) -> bytes:
    return _ENCODER.encode(value)


def result(request_id: RequestId, value: Any) -> bytes:
    return _ENCODER.encode({"jsonrpc": "2.0", "id": request_id, "result": value})


def error(refused: Refused) -> bytes:
    body = {"code": refused.code, "message": refused.message}
    return _ENCODER.encode({"jsonrpc": "2.0", "id": refused.id, "error": body})


def _one_line(text: str) -> str:
    folded = " ".join(text.split())
    return folded if len(folded) <= _SHOWN else folded[: _SHOWN - 1] + "…"


_ENCODER = msgspec.json.Encoder()
