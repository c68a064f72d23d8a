"""Any interleaving of the same per-device event sets folds to the same views.

Homes receive each device's events in an order of their own, a few at a
time, catching up in between or not; whatever the order, once they hold the
same events their views match each other and a rebuild from zero.
"""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

import msgspec
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from memlog.eventlog import clock
from memlog.eventlog.codec import encode_line
from memlog.eventlog.events import Event
from memlog.eventlog.log import EventLog
from memlog.home import Home
from memlog.projections.markdown_view.writer import markdown_files
from memlog.projections.runner import catch_up, rebuild
from memlog.projections.sqlite_view.digest import sqlite_digest
from memlog.tests.projections.test_views import event_strategy

START = clock.micros("2026-05-01T09:00:00Z")
DEVICES = ("d1", "d2", "d3")


def device_log(
    name: str, events: list[Event], skew: int, gaps: list[int], batches: list[int]
) -> list[bytes]:
    """The lines a device would have written: its own sequence, batches, clock readings."""
    lines, at, seq = [], START + skew, 0
    sizes = iter(batches)
    while seq < len(events):
        size = min(next(sizes, 1), len(events) - seq)
        end = seq + size if size > 1 else 0
        for offset in range(size):
            at += gaps[(seq + offset) % len(gaps)]
            event = msgspec.structs.replace(
                events[seq + offset], seq=seq + offset + 1, id=f"{name}-{seq + offset:04d}",
                ts=clock.iso(at), batch_end=end,
            )  # fmt: skip
            lines.append(encode_line(event))
        seq += size
    return lines


def deliver(home: Path, logs: dict[str, list[bytes]], order: list[str], catch: list[bool]) -> None:
    """Hand ``home`` each device's lines in ``order`` (a device name per batch of lines)."""
    held = {name: 0 for name in logs}
    for step, name in enumerate(order):
        if held[name] >= len(logs[name]):
            continue
        held[name] = min(len(logs[name]), held[name] + 2)
        folder = home / "events" / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "00000000000000000001.jsonl").write_bytes(b"".join(logs[name][: held[name]]))
        if catch[step % len(catch)]:
            catch_up(home)
    for name, lines in logs.items():  # whatever was left arrives at the end
        folder = home / "events" / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "00000000000000000001.jsonl").write_bytes(b"".join(lines))
    catch_up(home)


def views(home: Path) -> tuple[str, dict[str, str]]:
    return sqlite_digest(Home(home)), markdown_files(Home(home))


device_events = st.lists(event_strategy(), max_size=8)


@settings(max_examples=40, deadline=None)
@given(
    sets=st.lists(device_events, min_size=2, max_size=3),
    skews=st.lists(st.integers(-5_000_000, 5_000_000), min_size=3, max_size=3),
    gaps=st.lists(st.integers(0, 3_000_000), min_size=1, max_size=4),
    batches=st.lists(st.integers(1, 3), max_size=6),
    seed=st.integers(0, 2**32),
    catch=st.lists(st.booleans(), min_size=1, max_size=5),
)
def test_any_interleaving_folds_to_the_same_views(
    sets: list[list[Event]], skews: list[int], gaps: list[int], batches: list[int],
    seed: int, catch: list[bool],
) -> None:  # fmt: skip
    assume(any(sets))  # a home with no event at all has no position to compare
    logs = {
        name: device_log(name, events, skew, gaps, batches)
        for name, events, skew in zip(DEVICES, sets, skews, strict=False)
    }
    rng = random.Random(seed)
    steps = [name for name, lines in logs.items() for _ in range(0, len(lines), 2)]
    with tempfile.TemporaryDirectory() as tmp:
        homes = [Path(tmp) / "one", Path(tmp) / "two", Path(tmp) / "fresh"]
        for home in homes[:2]:
            order = steps[:]
            rng.shuffle(order)
            deliver(home, logs, order, catch)
        deliver(homes[2], logs, [], [False])
        rebuild(Home(homes[2]))
        assert views(homes[0]) == views(homes[1]) == views(homes[2])


def test_time_travel_counts_events_in_the_merged_order(tmp_path: Path) -> None:
    from memlog.eventlog.bounds import Bound
    from memlog.tests.projections.test_views import SOME_EVENTS

    logs = {
        "d1": device_log("d1", SOME_EVENTS[:7], 0, [1_000_000], [1]),  # no batch to cut
        "d2": device_log("d2", SOME_EVENTS[7:], 500_000, [1_000_000], [1]),
    }
    full = tmp_path / "full"
    deliver(full, logs, [], [False])
    for keep in (1, 4, 9, len(SOME_EVENTS)):
        then = tmp_path / f"then-{keep}"
        done = rebuild(Home(full), until=Bound(keep, None), target=Home(then))
        merged = [r.segment.split("/")[0] for r in EventLog(full).read()][:keep]
        cut = tmp_path / f"cut-{keep}"
        deliver(cut, {d: lines[: merged.count(d)] for d, lines in logs.items()}, [], [False])
        rebuild(Home(cut))
        assert done.seq == keep
        assert views(then) == views(cut)
