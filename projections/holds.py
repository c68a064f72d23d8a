"""An entry held for review, as the fold keeps it, and where an entry came from.

An ``entry.held`` event (the scan of lessons found text in an observation that
steers the agent) adds its rules to ``held`` and its digest to ``holds``; while
``holds`` is not empty a live entry's status is ``held``, and it is injected
nowhere.  An ``entry.reviewed`` event accepts (the digests move to
``accepted``: the same text held again changes nothing) or rejects (status
``rejected``, which a new sighting does not undo).  Pure, like the fold.

An entry's ``devices`` are the device folders holding its observations: it
came from another device when none of them is this machine's.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from memlog.eventlog.events import Held, Reviewed

if TYPE_CHECKING:
    from memlog.projections.model import Entry


def hold(entry: Entry, event: Held) -> None:
    """Fold an ``entry.held`` event into ``entry``."""
    if event.digest and event.digest in entry.accepted:
        return  # text its user accepted already
    entry.held += [rule for rule in event.rules if rule not in entry.held]
    digest = event.digest or event.id
    if digest not in entry.holds:
        entry.holds.append(digest)
    if entry.live:
        entry.status, entry.status_reason = "held", ", ".join(event.rules)


def review(entry: Entry, event: Reviewed) -> None:
    """Fold an ``entry.reviewed`` event into ``entry``."""
    entry.review = event.verdict
    if event.verdict == "accepted":
        entry.accepted += [d for d in entry.holds if d not in entry.accepted]
        entry.holds.clear()
        if entry.status in ("held", "rejected"):
            entry.status, entry.status_reason = "live", ""
    elif entry.status in ("live", "held"):
        entry.status, entry.status_reason = "rejected", event.reason


def settle(entry: Entry) -> None:
    """An entry brought back while text of it waits for review is held, not live."""
    if entry.live and entry.holds:
        entry.status = "held"


def from_elsewhere(entry: Entry, own_device: str) -> bool:
    """Whether ``entry`` came from another device: its observations are all in other
    devices' folders (an entry of a log kept flat, or seen here too, is this machine's)."""
    return bool(entry.devices) and own_device not in entry.devices


def foreign(entries: Iterable[Entry], own_device: str) -> set[str]:
    """The ids of ``entries`` another device recorded (``from_elsewhere``)."""
    return {e.id for e in entries if from_elsewhere(e, own_device)}


def device_of(segment: str) -> str:
    """The device folder of a segment's name in the log (``<device>/<file>``; "" when flat)."""
    return segment.split("/", 1)[0] if "/" in segment else ""
