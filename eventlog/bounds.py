"""Parsing ``--since`` / ``--until`` bounds: an ISO time or a sequence number."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import NamedTuple

from memlog.errors import InvalidInput


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
        raise InvalidInput(f"{value!r} is neither a sequence number nor an ISO time")
    return Bound(None, moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ"))


def within(seq: int, ts: str, since: Bound | None, until: Bound | None) -> bool:
    """``since`` and ``until`` are both inclusive."""
    if since is not None and since.before(seq, ts):
        return False
    return not (until is not None and until.after(seq, ts))
