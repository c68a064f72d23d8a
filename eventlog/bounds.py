"""What memlog takes in: the largest event, and ``--since`` / ``--until`` bounds.

``MAX_EVENT_BYTES`` is the one limit on the size of anything that becomes an
event, whatever the door (the command line, ``--from`` input, an import, the
MCP server's tools, a sync, the resident's socket): a memory entry is a few
KB, so an event of more is refused with one line before anything is stored.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import NamedTuple, TypeVar

from memlog.errors import InvalidInput
from memlog.untrusted import shown
from memlog.vocabulary import MAX_EVENT_BYTES as MAX_EVENT_BYTES

T = TypeVar("T")

#: the largest event memlog stores or accepts (``vocabulary.MAX_EVENT_BYTES``, defined
#: there so the MCP server holds tool arguments to it without loading the log): here it
#: bounds one encoded log line, its JSON and checksum.  The largest real memory entries
#: are a few KB, their events with a vector under 3 KB; 64 KiB leaves room for long
#: texts and 4096-dimension vectors


def too_large(size: int) -> bool:
    """Whether ``size`` bytes are more than one event may hold."""
    return size > MAX_EVENT_BYTES


def size_note(size: int) -> str:
    """``65.5 KiB, more than the 64 KiB an event may hold`` (for a one-line refusal)."""
    return f"{_kib(size)}, more than the {_kib(MAX_EVENT_BYTES)} an event may hold"


def check_payload(payload: object, what: str = "the input") -> None:
    """InvalidInput when ``payload`` (text, bytes, or anything JSON encodes, measured as
    its JSON) is larger than one event may be: called by every door before it builds or
    stores anything."""
    size = payload_size(payload)
    if too_large(size):
        raise InvalidInput(f"{what} is {size_note(size)}; nothing was stored")


def payload_size(payload: object) -> int:
    """The bytes of ``payload``: UTF-8 of a text, length of bytes, else its JSON."""
    if isinstance(payload, bytes | bytearray | memoryview):
        return len(payload)
    if isinstance(payload, str):
        return len(payload.encode("utf-8", "surrogatepass"))
    import msgspec

    try:
        return len(msgspec.json.encode(payload))
    except (TypeError, msgspec.EncodeError, OverflowError):
        return len(repr(payload).encode("utf-8", "replace"))


#: what one slice of a long list may take (``slices``): the rest of the event has room
SLICE_BYTES = MAX_EVENT_BYTES // 2


def slices(items: Sequence[T], budget: int = SLICE_BYTES) -> list[tuple[T, ...]]:
    """``items`` cut, in order, into runs whose JSON takes at most ``budget`` bytes each
    (at least one item a run; one empty run for no items): the lists of an event that can
    grow long (the ids a recall names, what a redaction removed, a branch's operations)
    spread over several events of one batch instead of making one too large."""
    import msgspec

    runs: list[tuple[T, ...]] = []
    run: list[T] = []
    size = 0
    for item in items:
        cost = len(msgspec.json.encode(item)) + 1
        if run and size + cost > budget:
            runs.append(tuple(run))
            run, size = [], 0
        run.append(item)
        size += cost
    return [*runs, tuple(run)] if run or not runs else runs


def _kib(size: int) -> str:
    return f"{size / 1024:.0f} KiB" if size % 1024 == 0 else f"{size / 1024:.1f} KiB"


class Bound(NamedTuple):
    """A point in the log: a sequence number or a UTC timestamp string."""

    seq: int | None
    ts: str | None

    def after(self, seq: int, ts: str) -> bool:
        """Whether an event at ``seq``/``ts`` lies strictly after this bound."""
        return seq > self.seq if self.seq is not None else ts > (self.ts or "")

    def before(self, seq: int, ts: str) -> bool:
        """Whether an event lies strictly before this bound."""
        return seq < self.seq if self.seq is not None else ts < (self.ts or "")

    def text(self) -> str:
        """The bound as given: a sequence number or a UTC time."""
        return str(self.seq) if self.seq is not None else self.ts or ""


def utc_moment(value: str | None) -> datetime | None:
    """The UTC moment of an ISO 8601 time (a naive one is UTC), else None."""
    if not value:
        return None
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def parse_bound(value: str) -> Bound:
    """``123`` is a sequence number; anything else must be an ISO 8601 time (UTC if naive)."""
    text = value.strip()
    if text.isdigit():
        return Bound(int(text), None)
    moment = utc_moment(text)
    if moment is None:
        raise InvalidInput(f"{shown(value)} is neither a sequence number nor an ISO time")
    return Bound(None, moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ"))


def within(seq: int, ts: str, since: Bound | None, until: Bound | None) -> bool:
    """``since`` and ``until`` are both inclusive."""
    if since is not None and since.before(seq, ts):
        return False
    return not (until is not None and until.after(seq, ts))
