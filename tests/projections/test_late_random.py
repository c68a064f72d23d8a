"""Random writes on three devices whose clocks tie and run apart, caught up at random
points: every catch-up (late events folded in place, records moved among the slots)
leaves the views a replay of the same events makes."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import msgspec
import pytest

from memlog.eventlog.events import (
    EventBase,
    Held,
    Influenced,
    Labelled,
    MaintenanceRan,
    MemoryEvolved,
    Observed,
    Operation,
    Promoted,
    Proposed,
    Recalled,
    Retired,
    Reviewed,
    SessionPending,
    SessionProgress,
    Superseded,
    content_hash,
)
from memlog.projections.runner import catch_up
from memlog.projections.sqlite_view import ranks
from memlog.tests.projections.test_late_events import (
    SPACE,
    SPENT,
    Device,
    replayed,
    topic,
    vectored,
    views,
)

LESSONS = 80
#: seconds a device's clock moves between two of its writes (0: a tie with its last)
STEPS = (0, 40, 40, 80, 3600, 43200)


class Writer:
    """Random events about ``LESSONS`` lessons; with ``tied``, vectors drawn from four, so
    neighbour lists tie."""

    def __init__(self, rng: random.Random, tied: bool) -> None:
        self.rng, self.tied = rng, tied

    def events(self) -> list[EventBase]:
        rng, n = self.rng, self.rng.randrange(LESSONS)
        kind = rng.choice(["new"] * 3 + ["recall", "retire", "supersede", "promote", "label",
                                         "pending", "progress", "evolved", "maint", "held",
                                         "review", "judge", "judge", "propose"])  # fmt: skip
        if kind == "new":
            return self.lesson(n)
        return [self.other(kind, content_hash(topic(n)), f"s{rng.randrange(3)}")]

    def lesson(self, n: int) -> list[EventBase]:
        if self.rng.random() < 0.5:
            events = vectored(n)
            if self.tied:
                shared = vectored(self.rng.randrange(4))[1]
                events[1] = msgspec.structs.replace(shared, entry_id=events[1].entry_ids[0])
            return events
        extra = self.rng.choice([{}, {"section": "facts", "project": "parser",
                                      "branch": self.rng.choice(["b1", "b2"])},
                                 {"revive": False}, {"confidence": "high"}, {"count": 3},
                                 {"category": "anti-patterns"}, {"door": "mcp"}])  # fmt: skip
        return [Observed(name=f"Lesson {n}", description=topic(n),
                         **{"category": "patterns", "project": "project-a", **extra})]  # fmt: skip

    def other(self, kind: str, entry_id: str, session: str) -> EventBase:
        rng, other = self.rng, content_hash(topic(self.rng.randrange(LESSONS)))
        return {
            "recall": lambda: Recalled(ids=(entry_id, other), session_id=session,
                                       trigger=rng.choice(["startup", "prompt", "compact"])),
            "judge": lambda: Influenced(
                entry_id=entry_id, session_id=session, evidence="e",
                verdict=rng.choice(["applied", "contradicted", "not used"]),
                source=rng.choice(["extraction", "local", "agent"])),
            "propose": lambda: Proposed(entry_id=entry_id, kind=rng.choice(["unused", "stale"]),
                                        reason="r", dismissed=rng.random() < 0.3),
            "retire": lambda: Retired(entry_id=entry_id, reason="x",
                                      branch=rng.choice(["", "parser/b1", "parser/b2"])),
            "supersede": lambda: Superseded(entry_id=entry_id, by=other, reason="y"),
            "promote": lambda: Promoted(entry_id=entry_id, reason="z",
                                        scope=rng.choice(["universal", "project"])),
            "label": lambda: Labelled(entry_id=entry_id, keywords=(f"k{rng.randrange(5)}",)),
            "pending": lambda: SessionPending(session_id=session, project="parser",
                                              trigger="SessionEnd", size=rng.randrange(20)),
            "progress": lambda: SessionProgress(
                session_id=session, status=rng.choice(["pending", "extracted"]),
                offset=rng.randrange(20), usage=SPENT),
            "evolved": lambda: MemoryEvolved(
                project="parser", branch="main", mode="evolved",
                session_id=rng.choice([session, ""]),
                operations=(Operation(op="keep", entry_id=entry_id),), usage=SPENT),
            "maint": lambda: MaintenanceRan(task=rng.choice(["weekly", "monthly"])),
            "held": lambda: Held(entry_id=entry_id, rules=(rng.choice(["override", "frame"]),),
                                 digest=rng.choice(["d1", "d2", ""])),
            "review": lambda: Reviewed(entry_id=entry_id,
                                       verdict=rng.choice(["accepted", "rejected"])),
        }[kind]()  # fmt: skip


@pytest.mark.parametrize(("seed", "tied"), [(100, False), (101, False), (102, False),
                                            (200, True), (201, True)])  # fmt: skip
def test_random_late_events_end_in_a_replay(
    memlog_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, tied: bool
) -> None:
    monkeypatch.setattr(ranks, "PIVOT_EVERY", 3)  # neighbour lists from cells
    rng = random.Random(seed)
    writer, devices = Writer(rng, tied), [Device(memlog_home, n) for n in ("aa", "bb", "cc")]
    clocks, checks, late, rebuilt = [0, 0, 0], 0, 0, 0
    for _ in range(70):
        at = rng.randrange(3)
        batch = []
        for _ in range(rng.randrange(1, 4)):
            clocks[at] += rng.choice(STEPS)
            batch += [(clocks[at], event) for event in writer.events()]
        devices[at].write(*batch)
        if rng.random() < 0.5:
            done = catch_up(memlog_home, SPACE)
            checks, late, rebuilt = checks + 1, late + done.late, rebuilt + done.rebuilt
            where = tmp_path / f"replay{checks}"
            assert views(memlog_home) == replayed(memlog_home, where), checks
            shutil.rmtree(where)
    assert late >= 20 and rebuilt == 1  # only the first catch-up built the views
