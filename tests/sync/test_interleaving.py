"""Whatever the order syncs bring events in, a home's views are a replay of its events.

Homes write at random (new lessons, the same lesson seen on two machines,
retirements, promotions, recalls, supersessions), some of it dated days
before the events other homes already sent (a machine whose clock, or whose
network, was a week behind), and sync at random: lessons arrive that were
created before lessons the home holds, and no sync rebuilds the views.  After every sync the home's
views, which sync brings up to date event by event, are compared with views
replayed from zero out of a copy of its log: the database's content (every
row in key order, what its packed files hold) and every other file byte for
byte.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from memlog.eventlog import clock
from memlog.eventlog.events import (
    EventBase,
    Promoted,
    Recalled,
    Retired,
    Superseded,
    content_hash,
)
from memlog.eventlog.log import EventLog
from memlog.home import Home
from memlog.projections.runner import rebuild
from memlog.projections.sqlite_view import store
from memlog.tests.sync.helpers import bare_remote, init, logical_views, memlog_ok, observe
from memlog.vocabulary import DEFAULT_SPACES

SPACE = DEFAULT_SPACES["hashing"]
HOUR = 3_600_000_000
DELAYS = (0, 0, 0, HOUR, 24 * HOUR, 7 * 24 * HOUR)  # how far back a write is dated
STEPS = 26


class Team:
    def __init__(self, tmp_path: Path, count: int, rng: random.Random) -> None:
        self.tmp, self.rng = tmp_path, rng
        self.now = clock.now_micros() - 30 * 24 * HOUR
        self.homes = [tmp_path / f"home{i}" for i in range(count)]
        self.lessons: list[str] = []
        self.replays = 0

    def lesson(self) -> str:
        self.lessons.append(f"Lesson {len(self.lessons)}: check the {self.rng.random():.6f} case.")
        return self.lessons[-1]

    def write(self, home: Path) -> str:
        """One write on ``home``, through the command line or the log as the tools do."""
        kind = self.rng.choice(["new", "new", "again", "retire", "promote", "recall", "supersede"])
        if kind == "new" or not self.lessons:
            observe(home, self.lesson())
            return "new"
        known = content_hash(self.rng.choice(self.lessons))
        if kind == "again":
            observe(home, self.rng.choice(self.lessons))
            return kind
        other = content_hash(self.rng.choice(self.lessons))
        event: EventBase = {
            "retire": Retired(entry_id=known, reason="no longer true"),
            "promote": Promoted(entry_id=known, scope="universal", reason="seen twice"),
            "recall": Recalled(ids=(known, other), session_id="s1", mode="search"),
            "supersede": Superseded(entry_id=known, by=other, reason="a sharper one"),
        }[kind]
        EventLog(home).append([event])  # folded by the next command (here: the sync)
        return kind

    def check(self, home: Path) -> None:
        """The home's views equal views replayed from zero out of a copy of its log."""
        self.replays += 1
        fresh = self.tmp / f"replay{self.replays}"
        shutil.copytree(home / "events", fresh / "events")
        rebuild(Home(fresh), SPACE)
        assert logical_views(home) == logical_views(fresh)
        shutil.rmtree(fresh)


def slots_of(home: Path) -> dict[str, int]:
    if not (home / "memory.db").exists():
        return {}
    with store.opened(home / "memory.db", readonly=True) as db:
        return store.all_slots(db)


@pytest.mark.parametrize("seed", [2, 3, 4, 5])
def test_any_interleaving_of_writes_delays_and_syncs_ends_in_a_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    team = Team(tmp_path, 3, random.Random(seed))
    at = [team.now]
    monkeypatch.setattr(clock, "now_micros", lambda: at[0])
    remote = bare_remote(tmp_path / "remote.git")
    for home in team.homes:
        observe(home, team.lesson())
        init(home, remote)
    late = synced = reslotted = 0
    for _ in range(STEPS):
        team.now += 60_000_000
        home = team.rng.choice(team.homes)
        if team.rng.random() < 0.4:
            at[0] = team.now
            slots = slots_of(home)
            views = json.loads(memlog_ok(home, "sync", "--json").output)["views"]
            reslotted += any(slots_of(home)[i] != slot for i, slot in slots.items())
            assert views == "unchanged" or views.startswith("applied"), views  # never rebuilt
            late += "sorted before" in views
            team.check(home)
            synced += 1
            continue
        at[0] = team.now - team.rng.choice(DELAYS)
        team.write(home)
    at[0] = team.now
    for home in [*team.homes, *team.homes]:
        memlog_ok(home, "sync")
    for home in team.homes:
        team.check(home)
    assert synced >= 5 and late >= 1  # the seeds do bring events late, folded in place
    assert reslotted >= 1  # and lessons created before others had theirs: entries moved
    assert logical_views(team.homes[0]) == logical_views(team.homes[-1])
