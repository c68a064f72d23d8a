"""One line of the log: the encoded event followed by its checksum.

A line is ``{...event fields...,"sum":"<16 hex>"}\\n`` where ``sum`` is a
BLAKE2b-64 digest of the line's bytes up to (not including) ``,"sum":``.
A torn, glued or edited line fails the check and is never decoded.  A line
longer than ``bounds.MAX_EVENT_BYTES`` is refused before it is checked, and an
event whose time cannot be read or lies outside 1970-9000 is refused after it
is decoded: every time memlog computes with stays in range.

A line leaves out the fields that hold their default (an empty list, ``""``,
``None``, ``v`` 1): they were a third of an observation's bytes, and the
decoder fills them in again, so lines that spell them out (every line written
before) read the same.  Everything else that prints an event as JSON (``memlog
log --json``, ``show --json``) still spells every field out.
"""

from __future__ import annotations

import functools
import re

import msgspec

from memlog import digests
from memlog.errors import InvalidInput
from memlog.eventlog.bounds import size_note, too_large, utc_moment
from memlog.eventlog.events import Event, EventBase
from memlog.vocabulary import MAX_EVENT_BYTES

SUM_KEY = b',"sum":"'
SUM_LEN = 16
_TAIL_LEN = len(SUM_KEY) + SUM_LEN + 3  # ,"sum":"<16>"}\n

ENCODER = msgspec.json.Encoder()


@functools.cache
def decoder() -> msgspec.json.Decoder[Event]:
    """The decoder of every event type (built when first needed: a tenth of a start's
    imports, which a start that reads no event never pays)."""
    return msgspec.json.Decoder(Event)


class BadLine(Exception):
    """A line that fails its checksum or its schema; ``reason`` says which."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def checksum(body: bytes) -> bytes:
    return digests.blake2b(body, digest_size=SUM_LEN // 2).hexdigest().encode("ascii")


def encode_line(event: EventBase) -> bytes:
    """Encode ``event`` as one checksummed log line ending in a newline (fields at their
    default left out)."""
    defaults = _defaults(type(event))
    fields = msgspec.to_builtins(event)
    body = ENCODER.encode({k: v for k, v in fields.items() if defaults.get(k, _NONE) != v})[:-1]
    return body + SUM_KEY + checksum(body) + b'"}\n'


def bounded_line(event: EventBase) -> bytes:
    """The line of ``event``; InvalidInput (nothing written) past the largest event: every
    writer of the log encodes through here."""
    line = encode_line(event)
    if too_large(len(line) - 1):
        tag = type(event).__struct_config__.tag
        name = getattr(event, "name", "")
        what = f"{tag} {name[:60]!r}" if isinstance(name, str) and name else tag
        raise InvalidInput(f"{what} would be {size_note(len(line) - 1)} "
                           "(a memory entry is a few KB); nothing was stored")  # fmt: skip
    return line


_NONE = object()


@functools.cache
def _defaults(cls: type[EventBase]) -> dict[str, object]:
    """The fields of ``cls`` that have a default, with it as JSON would hold it."""
    found: dict[str, object] = {}
    for field in msgspec.structs.fields(cls):
        if field.default is not msgspec.NODEFAULT:
            found[field.encode_name] = msgspec.to_builtins(field.default)
        elif field.default_factory is not msgspec.NODEFAULT:
            found[field.encode_name] = msgspec.to_builtins(field.default_factory())
    return found


def check_line(line: bytes) -> bytes:
    """Return the checksummed body of ``line`` (without newline) or raise BadLine."""
    if line.endswith(b"\n"):
        line = line[:-1]
    cut = len(line) - _TAIL_LEN + 1
    if cut <= 0 or line[cut : cut + len(SUM_KEY)] != SUM_KEY or not line.endswith(b'"}'):
        raise BadLine("no checksum (torn or foreign line)")
    body = line[:cut]
    if checksum(body) != line[cut + len(SUM_KEY) : -2]:
        raise BadLine("checksum mismatch (damaged or edited line)")
    return body


def decode_line(line: bytes) -> Event:
    """Check and decode one line; raise BadLine naming what is wrong."""
    if len(line) > MAX_EVENT_BYTES + 1:
        raise BadLine(f"too long: {size_note(len(line))}")
    body = check_line(line)
    try:
        event = decoder().decode(body + b"}")
    except msgspec.ValidationError as exc:
        raise BadLine(f"invalid event: {exc}") from None
    except msgspec.DecodeError as exc:
        raise BadLine(f"malformed JSON: {exc}") from None
    except UnicodeDecodeError as exc:
        raise BadLine(f"not UTF-8 (byte {exc.start} of its text)") from None
    if not _TIME.match(event.ts) and not _in_range(event.ts):
        raise BadLine(f"time out of range: {event.ts[:40]!r} (1970 to 9000)")
    return event


#: the form every writer stamps, in the years memlog takes (the common case, checked fast)
_TIME = re.compile(
    r"(?:19[7-9]\d|[2-8]\d{3})-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])"
    r"T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{6}Z\Z"
)


def _in_range(ts: str) -> bool:
    """Whether ``ts`` is empty (an event not stamped) or a time in 1970-9000."""
    if not ts:
        return True
    moment = utc_moment(ts)
    return moment is not None and 1970 <= moment.year < 9000


#: where an event line starts: a good line glued behind a torn prefix is found by it
GLUE_MARK = b'{"type":"'


def salvage(line: bytes) -> tuple[int, Event] | None:
    """A good line glued after a torn prefix: its offset in ``line`` and its event."""
    cut = line.find(GLUE_MARK, 1)
    while cut > 0:
        try:
            return cut, decode_line(line[cut:])
        except BadLine:
            cut = line.find(GLUE_MARK, cut + 1)
    return None
