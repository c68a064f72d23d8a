"""Events that arrive late: folded in their place, and the views are still a replay's.

Another device's events can sort before events the views already hold (a
machine that was offline).  The catch-up folds again only the entries,
sessions and days they touch, from every event about them in the log's
order; a late event that creates an entry before entries that have their
slots (a replay puts it among them) moves their records to the slots a
replay gives them, without folding them again.
"""

from __future__ import annotations

import random
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from memlog.eventlog import clock
from memlog.eventlog.codec import encode_line
from memlog.eventlog.events import (
    EventBase,
    MaintenanceRan,
    Observed,
    Promoted,
    Recalled,
    Retired,
    SessionPending,
    SessionProgress,
    Usage,
    content_hash,
)
from memlog.eventlog.log import START, EventLog, Position, Record
from memlog.home import Home
from memlog.projections import late
from memlog.projections.markdown_view.writer import markdown_files
from memlog.projections.runner import catch_up, rebuild
from memlog.projections.sqlite_view import index_files, lines, ranks, store
from memlog.projections.sqlite_view.digest import sqlite_digest
from memlog.tests.retrieval.helpers import entry
from memlog.vocabulary import DEFAULT_SPACES

SPACE = DEFAULT_SPACES["hashing"]
T0 = clock.micros("2026-05-01T09:00:00Z")
SEGMENT = "00000000000000000001.jsonl"
SPENT = Usage(provider="anthropic", model="m", calls=1, tokens_in=10, tokens_out=5, cost_micros=7)


def lesson(n: int) -> str:
    return f"Lesson {n}: keep the lock file beside what it guards."


def observed(n: int) -> Observed:
    return Observed(name=f"Lesson {n}", description=lesson(n), category="patterns",
                    project="parser")  # fmt: skip


class Device:
    """One device's segment, written line by line at the times given (seconds past T0)."""

    def __init__(self, home: Path, name: str) -> None:
        self.path = home / "events" / name / SEGMENT
        self.name, self.seq = name, 0

    def write(self, *timed: tuple[int, EventBase]) -> None:
        lines = b""
        for at, event in timed:
            self.seq += 1
            stamped = msgspec.structs.replace(
                event, seq=self.seq, id=f"{self.name}-{self.seq:03d}",
                ts=clock.iso(T0 + at * 1_000_000),
            )  # fmt: skip
            lines += encode_line(stamped)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "ab") as handle:
            handle.write(lines)


def views(home: Path) -> tuple[str, dict[str, str]]:
    return sqlite_digest(Home(home)), markdown_files(Home(home))


def folds_in_place(home: Path, where: Path, late: int) -> None:
    """A catch-up folds ``late`` late events in place, and the views are a replay's
    (replayed in ``where``)."""
    done = catch_up(home, SPACE)
    assert not done.rebuilt and done.late == late
    assert views(home) == replayed(home, where)


def replayed(home: Path, where: Path) -> tuple[str, dict[str, str]]:
    shutil.copytree(home / "events", where / "events")
    rebuild(Home(where), SPACE)
    return views(where)


def test_late_events_fold_in_place_and_the_views_are_a_replay(
    memlog_home: Path, tmp_path: Path
) -> None:
    first, second = Device(memlog_home, "aa"), Device(memlog_home, "bb")
    first.write(
        (10, observed(1)), (30, observed(2)), (40, Recalled(ids=(content_hash(lesson(1)),))),
        (50, SessionPending(session_id="s1", project="parser", trigger="SessionEnd", size=9)),
        (60, SessionProgress(session_id="s1", status="extracted", offset=9, usage=SPENT)),
        (61, MaintenanceRan(task="weekly")),
        (62, SessionProgress(session_id="s2", status="extracted", offset=3, usage=SPENT)),
    )  # fmt: skip
    assert catch_up(memlog_home, SPACE).rebuilt  # nothing folded yet: built from zero
    second.write(  # an offline machine: everything it wrote sorts among what is folded
        (20, observed(1)),  # seen again: the counts add
        (35, Retired(entry_id=content_hash(lesson(2)), reason="no longer true")),
        (45, Promoted(entry_id=content_hash(lesson(1)), reason="seen twice")),
        (55, SessionProgress(session_id="s1", status="pending", offset=4, usage=SPENT)),
        # (the day's spend is s2's too: folded again from both sessions' events)
        (56, MaintenanceRan(task="monthly")),
    )  # fmt: skip
    done = catch_up(memlog_home, SPACE)
    assert not done.rebuilt and done.applied == done.late == 5
    assert views(memlog_home) == replayed(memlog_home, tmp_path / "replay")
    second.write((70, observed(3)), (80, Recalled(ids=(content_hash(lesson(3)),))))
    done = catch_up(memlog_home, SPACE)  # after everything: followed as usual
    assert not done.rebuilt and (done.applied, done.late) == (2, 0)
    assert views(memlog_home) == replayed(memlog_home, tmp_path / "replay-2")


@pytest.mark.parametrize(
    "late",
    [
        [(20, 1), (40, 3), (50, 4)],  # seen again, then new ones after every other
        [(20, 3)],  # a replay gives it the slot before lesson 2's: lesson 2's moves
        [(1, 3), (2, 4), (25, 5), (40, 6)],  # before, among and after the others
        [(5, 2)],  # lesson 2 was created first: it takes lesson 1's slot, and 1 the next
        [(5, 2), (7, 3), (20, 1)],  # moved, new and seen again at once
    ],
)
def test_a_late_entry_takes_its_place_among_the_slots_without_a_rebuild(
    memlog_home: Path, tmp_path: Path, late: list[tuple[int, int]]
) -> None:
    first, second = Device(memlog_home, "aa"), Device(memlog_home, "bb")
    first.write((10, observed(1)), (30, observed(2)))
    catch_up(memlog_home, SPACE)
    second.write(*((at, observed(n)) for at, n in late))
    folds_in_place(memlog_home, tmp_path / "replay", len(late))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_late_entries_among_many_keep_the_neighbour_cells_a_replay_gives(
    memlog_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """Sixty entries with vectors, one in three a pivot (so lists come from cells), then a
    machine's late lessons among them, three times (its clock only goes forward): new
    ones, ones it saw first, and a retirement."""
    monkeypatch.setattr(ranks, "PIVOT_EVERY", 3)
    rng = random.Random(seed)
    first, second = Device(memlog_home, "aa"), Device(memlog_home, "bb")
    first.write(*((100 + 10 * n, e) for n in range(60) for e in vectored(n)))
    catch_up(memlog_home, SPACE)
    for round_ in range(3):
        times = sorted(rng.sample(range(50 + 200 * round_, 250 + 200 * round_), 6))
        new = [(at, e) for k, at in enumerate(times[:4]) for e in vectored(100 + 10 * round_ + k)]
        again = [(times[4], e) for e in vectored(rng.randrange(60))]  # seen here first
        gone = (times[5], Retired(entry_id=content_hash(topic(rng.randrange(60))), reason="x"))
        second.write(*sorted([*new, *again, gone], key=lambda t: t[0]))
        folds_in_place(
            memlog_home, tmp_path / f"replay-{round_}", 11
        )  # 4 lessons and their vectors, 3 more


def test_a_late_event_reads_the_lines_of_what_it_touches_not_the_whole_log(
    memlog_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = Device(memlog_home, "aa"), Device(memlog_home, "bb")
    first.write(*((100 + 10 * n, e) for n in range(40) for e in vectored(n)))
    first.write((600, SessionPending(session_id="s1", project="parser", trigger="SessionEnd",
                                     size=9)))  # fmt: skip
    catch_up(memlog_home, SPACE)
    read = EventLog.read

    def from_a_position(log: EventLog, start: Position = START, *args: Any) -> Iterator[Record]:
        assert start != START, "the whole log was read"
        return read(log, start, *args)

    monkeypatch.setattr(EventLog, "read", from_a_position)
    second.write(
        (105, vectored(7)[0]),  # lesson 7 seen again (first seen at 170 on the other)
        *((150, e) for e in vectored(70)),  # a new lesson among the others
        (250, Recalled(ids=(content_hash(topic(3)), content_hash(topic(70))))),
        (300, SessionProgress(session_id="s1", status="pending", offset=4, usage=SPENT)),
    )  # fmt: skip
    done = catch_up(memlog_home, SPACE)
    assert not done.rebuilt and done.late == 5  # (a rebuild would read the whole log)
    monkeypatch.undo()
    assert views(memlog_home) == replayed(memlog_home, tmp_path / "replay")


def test_a_line_damaged_since_it_was_folded_rebuilds_the_views(
    memlog_home: Path, tmp_path: Path
) -> None:
    first, second = Device(memlog_home, "aa"), Device(memlog_home, "bb")
    first.write((10, observed(1)), (30, observed(2)), (50, observed(3)))
    catch_up(memlog_home, SPACE)
    data = first.path.read_bytes()
    at = data.index(b"Lesson 2: keep")
    first.path.write_bytes(data[:at] + b"l" + data[at + 1 :])  # its checksum fails now
    second.write((40, observed(2)))  # lesson 2 again: its first line no longer reads
    done = catch_up(memlog_home, SPACE)
    assert done.rebuilt
    assert views(memlog_home) == replayed(memlog_home, tmp_path / "replay")


@pytest.mark.parametrize("harm", ["lines row", "packed file"])
def test_a_damaged_index_rebuilds_the_views_instead_of_guessing(
    memlog_home: Path, tmp_path: Path, harm: str
) -> None:
    first, second = Device(memlog_home, "aa"), Device(memlog_home, "bb")
    first.write(*((100 + 10 * n, e) for n in range(6) for e in vectored(n)))
    catch_up(memlog_home, SPACE)
    with store.opened(memlog_home / "memory.db") as db, store.transaction(db):
        if harm == "lines row":  # a row cut short: not a whole number of lines
            db.execute("UPDATE lines SET data = substr(data, 1, 30) WHERE key = ?",
                       (content_hash(topic(2)),))  # fmt: skip
        else:  # the vectors' file gone: the records cannot move
            (memlog_home / "index" / str(index_files.pointer(db, "vec")[0])).unlink()
    second.write(*((105, e) for e in vectored(2)), *((115, e) for e in vectored(40)))
    done = catch_up(memlog_home, SPACE)
    assert done.rebuilt
    assert views(memlog_home) == replayed(memlog_home, tmp_path / "replay")


def topic(n: int) -> str:
    words = ("cache", "lock", "retry", "parser", "schema", "deploy", "index", "queue")
    return f"Lesson {n}: the {words[n % 8]} and the {words[n * 3 % 8]} need step {n % 5}."


def vectored(n: int) -> list[EventBase]:
    """Lesson ``n`` observed, and its vector in the hashing space."""
    return entry(f"Lesson {n}", topic(n), space=tuple(SPACE))


def test_an_event_appended_while_late_ones_fold_is_left_to_the_next_catch_up(
    memlog_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = Device(memlog_home, "aa"), Device(memlog_home, "bb")
    first.write((10, observed(1)), (30, observed(2)))
    catch_up(memlog_home, SPACE)
    second.write((20, observed(1)))
    listed = late.unfolded

    def then_another_appends(*args: Any) -> Iterator[Record]:
        found = list(listed(*args))
        first.write((90, observed(5)))  # another process, between the two reads
        return iter(found)

    monkeypatch.setattr(late, "unfolded", then_another_appends)
    done = catch_up(memlog_home, SPACE)
    assert not done.rebuilt and done.late == 1
    monkeypatch.undo()
    done = catch_up(memlog_home, SPACE)
    assert not done.rebuilt and (done.applied, done.late) == (1, 0)
    assert views(memlog_home) == replayed(memlog_home, tmp_path / "replay")


def test_an_entry_first_seen_late_moves_to_its_place_in_the_files(
    memlog_home: Path, tmp_path: Path
) -> None:
    first, second = Device(memlog_home, "aa"), Device(memlog_home, "bb")
    first.write(*((at, observed(n)) for at, n in [(5, 5), (6, 6), (30, 1), (50, 2)]))
    catch_up(memlog_home, SPACE)
    second.write((20, observed(1)))  # lesson 1 was created here first: its own sequence, 1
    folds_in_place(memlog_home, tmp_path / "replay", 1)


def test_an_entry_moved_with_its_block_unchanged_moves_in_its_markdown_file(
    memlog_home: Path, tmp_path: Path
) -> None:
    """Two machines imported the same file (absolute counts): the one whose import sorts
    first created the entry, so it takes that sequence number; its block reads the same,
    its place in the file does not, and another block there changes."""
    first, second = Device(memlog_home, "aa"), Device(memlog_home, "bb")
    imported = msgspec.structs.replace(observed(3), count=3)
    first.write((10, observed(1)), (20, observed(2)), (30, imported))
    catch_up(memlog_home, SPACE)
    second.write((5, imported), (15, observed(1)))
    folds_in_place(memlog_home, tmp_path / "replay", 2)


def test_an_entry_first_seen_late_in_another_project_leaves_the_others_in_its_old_file(
    memlog_home: Path, tmp_path: Path
) -> None:
    first, second = Device(memlog_home, "aa"), Device(memlog_home, "bb")
    first.write((10, observed(1)), (20, observed(2)))
    catch_up(memlog_home, SPACE)
    second.write((5, msgspec.structs.replace(observed(2), project="other")))
    folds_in_place(memlog_home, tmp_path / "replay", 1)
    assert "Lesson 1:" in (memlog_home / "projects" / "parser" / "patterns.md").read_text()


def test_an_entry_first_seen_late_in_another_category_leaves_no_empty_file_behind(
    memlog_home: Path, tmp_path: Path
) -> None:
    first, second = Device(memlog_home, "aa"), Device(memlog_home, "bb")
    first.write((10, msgspec.structs.replace(observed(1), category="anti-patterns")))
    first.write((20, observed(2)))
    catch_up(memlog_home, SPACE)
    assert (memlog_home / "projects" / "parser" / "anti-patterns.md").exists()
    second.write((5, observed(1)))  # seen first as a pattern: that is its category
    folds_in_place(memlog_home, tmp_path / "replay", 1)
    assert not (memlog_home / "projects" / "parser" / "anti-patterns.md").exists()


def _lie(db: Any, harm: str, one: str, other: str) -> None:
    """Make the ``lines`` row of entry ``one`` lie about where its events are."""
    if harm == "row deleted":
        db.execute("DELETE FROM lines WHERE key = ?", (one,))
    elif harm == "another entry's lines":
        data = db.execute("SELECT data FROM lines WHERE key = ?", (other,)).fetchone()[0]
        db.execute("UPDATE lines SET data = ? WHERE key = ?", (data, one))
    elif harm == "a line left out":  # whole records, one fewer: no bad length to see
        data = db.execute("SELECT data FROM lines WHERE key = ?", (one,)).fetchone()[0]
        db.execute("UPDATE lines SET data = ? WHERE key = ?", (data[lines.RECORD.size :], one))
    else:  # a session's rows gone (its own, and its day's, which names its lines too)
        db.execute("DELETE FROM lines WHERE key IN ('session:s1', 'day:2026-05-01')")


@pytest.mark.parametrize(
    "harm", ["row deleted", "another entry's lines", "a line left out", "session row deleted"]
)
def test_a_lines_row_that_lies_rebuilds_the_views_instead_of_folding_from_it(
    memlog_home: Path, tmp_path: Path, harm: str
) -> None:
    """Each line a late fold reads must be an event about the key whose row named it, and
    what it reads must fold to what the views hold; a row that says otherwise (gone, or
    naming another entry's lines, or missing one) rebuilds the views."""
    first, second = Device(memlog_home, "aa"), Device(memlog_home, "bb")
    one, other = content_hash(lesson(1)), content_hash(lesson(2))
    first.write(
        (10, observed(1)), (30, observed(2)), (40, Recalled(ids=(one,))),
        (41, observed(1)), (42, Recalled(ids=(other,))),
        (50, SessionPending(session_id="s1", project="parser", trigger="SessionEnd", size=9)),
        (60, SessionProgress(session_id="s1", status="extracted", offset=9, usage=SPENT)),
    )  # fmt: skip
    catch_up(memlog_home, SPACE)
    with store.opened(memlog_home / "memory.db") as db, store.transaction(db):
        _lie(db, harm, one, other)
    second.write(  # late: about lesson 1 and session s1
        (20, observed(1)), (35, Promoted(entry_id=one, reason="seen twice")),
        (55, SessionProgress(session_id="s1", status="pending", offset=4, usage=SPENT)),
    )  # fmt: skip
    done = catch_up(memlog_home, SPACE)
    assert done.rebuilt
    assert views(memlog_home) == replayed(memlog_home, tmp_path / "replay")


@pytest.mark.parametrize("stays", [False, True], ids=["left-empty", "another-stays"])
def test_a_file_left_by_an_entry_seen_first_elsewhere_goes_with_it(
    memlog_home: Path, tmp_path: Path, stays: bool
) -> None:
    """Lesson 1 was first seen in project p1 here; a late event shows it was created
    earlier in p0, where another anti-pattern lives: p1's anti-patterns file, which no
    entry belongs to any longer, is removed (a replay never writes it), though an entry of
    its category stays in the projects the catch-up touched."""

    def seen(n: int, project: str) -> Observed:
        return Observed(name=f"Lesson {n}", description=lesson(n), category="anti-patterns",
                        project=project)  # fmt: skip

    first, second = Device(memlog_home, "aa"), Device(memlog_home, "bb")
    first.write((10, seen(1, "p1")), (20, seen(2, "p0")), *([(30, seen(3, "p1"))] * stays))
    catch_up(memlog_home, SPACE)
    assert (memlog_home / "projects" / "p1" / "anti-patterns.md").exists()
    second.write((5, seen(1, "p0")))
    catch_up(memlog_home, SPACE)
    assert (memlog_home / "projects" / "p1" / "anti-patterns.md").exists() == stays
    assert views(memlog_home) == replayed(memlog_home, tmp_path / "replay")
