"""The ``lines`` table: where each entry's, session's and day's events are in the log."""

from __future__ import annotations

from pathlib import Path

from memlog.eventlog import devices
from memlog.eventlog.events import (
    MaintenanceRan,
    Observed,
    Recalled,
    SessionProgress,
    content_hash,
)
from memlog.eventlog.log import EventLog
from memlog.projections.runner import catch_up
from memlog.projections.sqlite_view import lines, store
from memlog.projections.sqlite_view.lines import Line
from memlog.vocabulary import DEFAULT_SPACES

SPACE = DEFAULT_SPACES["hashing"]
LESSON = "Keep the lock file beside what it guards."
OTHER = "Quote every path a shell command takes."


def read(home: Path, line: Line) -> bytes:
    with open(home / "events" / line.segment, "rb") as handle:
        handle.seek(line.start)
        return handle.read(line.end - line.start)


def test_each_key_names_the_lines_of_every_event_about_it(memlog_home: Path) -> None:
    log = EventLog(memlog_home)
    log.home.events.mkdir(parents=True)
    devices.to_devices(log.home)  # kept per device, as a synced home's log is
    first, other = content_hash(LESSON), content_hash(OTHER)
    log.append([Observed(name="Lock", description=LESSON, category="patterns")])
    catch_up(memlog_home, SPACE)  # built from zero: the rows of a rebuild
    log.append([Observed(name="Quote", description=OTHER, category="patterns"),
                Recalled(ids=(first, other), session_id="s1"),
                SessionProgress(session_id="s1", status="extracted", offset=3),
                MaintenanceRan(task="weekly")])  # fmt: skip
    catch_up(memlog_home, SPACE)  # followed: the rows of a catch-up
    with store.opened(memlog_home / "memory.db") as db:
        found = {k: sorted(lines.of(db, [k])) for k in (first, other, "session:s1", "maintenance")}
        day = sorted(lines.of(db, [k for k in _keys(db) if k.startswith("day:")]))
        firsts = lines.first_observations(db, first)
        assert lines.of(db, ["nothing"]) == set()
    texts = {k: [read(memlog_home, line) for line in v] for k, v in found.items()}
    assert [b"entry.observed" in t for t in texts[first]] == [True, False]
    assert b"entry.recalled" in texts[first][1] and texts[first][1] == texts[other][1]
    assert len(texts[other]) == 2 and b"entry.observed" in texts[other][0]
    # the session's key: what it received (the recall), then its progress (also the day's)
    assert texts["session:s1"] == [texts[first][1], *(read(memlog_home, line) for line in day)]
    assert all(t.endswith(b"\n") for v in texts.values() for t in v)
    assert len(texts["maintenance"]) == 1 and firsts == found[first][:1]
    assert [line.stamp for line in found[first]] == sorted(line.stamp for line in found[first])


def test_a_flat_log_has_no_lines_and_one_past_four_gib_is_kept_as_unknown(
    memlog_home: Path,
) -> None:
    EventLog(memlog_home).append([Observed(name="Lock", description=LESSON, category="patterns")])
    catch_up(memlog_home, SPACE)  # a log of one machine that never synced: nothing comes late
    with store.opened(memlog_home / "memory.db") as db:
        assert _keys(db) == []
    with store.opened(memlog_home / "memory.db") as db, store.transaction(db):
        lines.add(db, [("far", 7, "aa/1.jsonl", 1 << 32, (1 << 32) + 90, True)])
        assert lines.of(db, ["far"]) == {Line(7, "", 0xFFFFFFFF, 0xFFFFFFFF)}


def _keys(db: object) -> list[str]:
    import sqlite3

    assert isinstance(db, sqlite3.Connection)
    return [str(row[0]) for row in db.execute("SELECT key FROM lines")]
