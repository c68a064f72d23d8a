"""One contract suite run against both views, plus fold semantics and recovery."""

from __future__ import annotations

import shutil
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memlog.eventlog.bounds import Bound
from memlog.eventlog.events import (
    Event,
    Labelled,
    Observed,
    Promoted,
    Recalled,
    Reembedded,
    Retired,
    Superseded,
    content_hash,
)
from memlog.eventlog.log import EventLog
from memlog.home import Home
from memlog.projections import markdown_sync
from memlog.projections.fold import fold
from memlog.projections.markdown_view.writer import markdown_files
from memlog.projections.runner import catch_up, rebuild
from memlog.projections.sqlite_view import store
from memlog.projections.sqlite_view.digest import sqlite_digest
from memlog.projections.sqlite_view.reading import Snapshot, load_matrix
from memlog.projections.sqlite_view.schema import SCHEMA_VERSION
from memlog.vocabulary import DEFAULT_SPACE, Space

DESCRIPTIONS = [f"Lesson number {i}: keep the {w} small." for i, w in enumerate("abcdefgh")]
IDS = [content_hash(d) for d in DESCRIPTIONS]
CATEGORIES = ["anti-patterns", "heuristics", "patterns", "facts"]


def vector(seed: int, dims: int = 384) -> bytes:
    values = np.random.default_rng(seed).standard_normal(dims).astype("<f4")
    return (values / np.linalg.norm(values)).astype("<f4").tobytes()


def observed(i: int, **extra: object) -> Observed:
    fields: dict[str, object] = {
        "name": f"Lesson {i}",
        "description": DESCRIPTIONS[i],
        "category": CATEGORIES[i % 4],
        "project": ["alpha", "beta", ""][i % 3],
        "feature": f"{i:03d}",
        "keywords": ("small", f"k{i}"),
    }
    fields.update(extra)
    return Observed(**fields)  # type: ignore[arg-type]


def event_strategy() -> st.SearchStrategy[Event]:
    index = st.integers(0, len(DESCRIPTIONS) - 1)
    return st.one_of(
        index.map(observed),
        st.builds(lambda i, c: observed(i, count=c, source="import"), index, st.integers(1, 5)),
        index.map(lambda i: Promoted(entry_id=IDS[i], project="alpha", feature="023")),
        st.lists(index, min_size=1, max_size=4).map(
            lambda xs: Recalled(ids=tuple(IDS[x] for x in xs), session_id="s")
        ),
        st.builds(
            lambda i, s: Reembedded(
                entry_id=IDS[i],
                provider="local",
                model="all-MiniLM-L6-v2",
                dimensions=384,
                vector=vector(s),
            ),
            index,
            st.integers(0, 50),
        ),  # fmt: skip
        index.map(lambda i: Labelled(entry_id=IDS[i], keywords=("alpha", "beta"))),
        index.map(lambda i: Retired(entry_id=IDS[i], reason="wrong")),
        st.tuples(index, index).map(lambda p: Superseded(entry_id=IDS[p[0]], by=IDS[p[1]])),
    )


def write_log(home: Path, events: list[Event], chunk: int = 0) -> EventLog:
    log = EventLog(home)
    step = chunk or max(len(events), 1)
    for start in range(0, len(events), step):
        log.append(events[start : start + step])
        if chunk:
            catch_up(home)
    return log


def copy_log(source: Path, target: Path) -> None:
    shutil.copytree(source / "events", target / "events")


def cut_log(source: Path, target: Path, keep: int) -> None:
    """Copy only the first ``keep`` lines of the log (single segment)."""
    (target / "events").mkdir(parents=True)
    for path in sorted((source / "events").glob("*.jsonl")):
        lines = path.read_bytes().splitlines(keepends=True)[:keep]
        (target / "events" / path.name).write_bytes(b"".join(lines))


SOME_EVENTS = [
    observed(0),
    observed(1),
    observed(2),
    observed(0, source="retro"),
    Promoted(entry_id=IDS[0], project="alpha", feature="023", reason="universal"),
    Promoted(entry_id=IDS[1]),
    Recalled(ids=(IDS[0], IDS[1])),
    Reembedded(
        entry_id=IDS[0],
        provider="local",
        model="all-MiniLM-L6-v2",
        dimensions=384,
        vector=vector(1),
    ),  # fmt: skip
    observed(3, count=4, source="import"),
    Labelled(entry_id=IDS[2], keywords=("alpha",)),
    Retired(entry_id=IDS[1], reason="no longer true"),
    observed(4),
    Superseded(entry_id=IDS[4], by=IDS[3]),
    observed(5),
]


class ViewContract:
    """What every view promises; subclasses say how to fingerprint theirs."""

    def digest(self, folder: Path) -> object:
        raise NotImplementedError

    def test_same_events_give_same_view(self, tmp_path: Path) -> None:
        write_log(tmp_path / "a", SOME_EVENTS)
        copy_log(tmp_path / "a", tmp_path / "b")
        rebuild(Home(tmp_path / "a"))
        rebuild(Home(tmp_path / "b"))
        assert self.digest(tmp_path / "a") == self.digest(tmp_path / "b")

    def test_replaying_twice_equals_once(self, tmp_path: Path) -> None:
        write_log(tmp_path, SOME_EVENTS)
        rebuild(Home(tmp_path))
        once = self.digest(tmp_path)
        rebuild(Home(tmp_path))
        assert self.digest(tmp_path) == once

    def test_incremental_equals_full(self, tmp_path: Path) -> None:
        write_log(tmp_path / "inc", SOME_EVENTS, chunk=3)
        copy_log(tmp_path / "inc", tmp_path / "full")
        rebuild(Home(tmp_path / "full"))
        assert self.digest(tmp_path / "inc") == self.digest(tmp_path / "full")

    def test_until_equals_truncated_log(self, tmp_path: Path) -> None:
        # cut after a whole batch: a batch cut short is never read (all or none)
        write_log(tmp_path / "all", SOME_EVENTS, chunk=7)
        rebuild(Home(tmp_path / "all"), until=Bound(7, None), target=Home(tmp_path / "then"))
        cut_log(tmp_path / "all", tmp_path / "cut", 7)
        rebuild(Home(tmp_path / "cut"))
        assert self.digest(tmp_path / "then") == self.digest(tmp_path / "cut")

    @settings(
        max_examples=15,
        deadline=None,
        # the suite is subclassed per view on purpose
        suppress_health_check=[
            HealthCheck.function_scoped_fixture,
            HealthCheck.differing_executors,
        ],
    )
    @given(events=st.lists(event_strategy(), min_size=1, max_size=25))
    def test_generated_logs_incremental_equals_full(
        self, tmp_path_factory: pytest.TempPathFactory, events: list[Event]
    ) -> None:
        base = tmp_path_factory.mktemp("gen")
        write_log(base / "inc", events, chunk=4)
        copy_log(base / "inc", base / "full")
        rebuild(Home(base / "full"))
        assert self.digest(base / "inc") == self.digest(base / "full")


class TestSqliteView(ViewContract):
    def digest(self, folder: Path) -> object:
        return sqlite_digest(Home(folder))


class TestMarkdownView(ViewContract):
    def digest(self, folder: Path) -> object:
        return markdown_files(Home(folder))


# -- fold semantics ----------------------------------------------------------------


def test_fold_semantics(memlog_home: Path) -> None:
    log = write_log(memlog_home, SOME_EVENTS[:6])
    log.append(SOME_EVENTS[6:])  # later: the recall gets a later time
    state = fold(r.event for r in log.read())
    first = state.entries[IDS[0]]
    assert first.observation_count == 2
    assert first.sources == ["manual", "retro"]
    assert first.promoted and first.provenance == ["alpha, Feature #000", "alpha, Feature #023"]
    assert first.recall_count == 1 and first.last_recalled_at is not None
    assert first.updated_at < first.last_recalled_at  # recall never touches updated_at
    assert list(first.vectors) == ["local/all-MiniLM-L6-v2"]
    assert state.entries[IDS[3]].observation_count == 4  # an imported count is taken as stated
    assert state.entries[IDS[2]].keywords == ["alpha"]
    assert state.entries[IDS[1]].status == "retired"
    assert state.entries[IDS[4]].superseded_by == IDS[3]


def test_imported_count_is_never_summed(memlog_home: Path) -> None:
    log = write_log(memlog_home, [observed(0, count=3, source="import")] * 3)
    state = fold(r.event for r in log.read())
    assert state.entries[IDS[0]].observation_count == 3
    log.append([observed(0, count=5, source="import")])
    assert fold(r.event for r in log.read()).entries[IDS[0]].observation_count == 5


def test_reembedding_does_not_touch_updated_at(memlog_home: Path) -> None:
    log = write_log(memlog_home, [observed(0)])
    log.append([Reembedded(entry_id=IDS[0], provider="p", model="m", dimensions=384,
                           vector=vector(2))])  # fmt: skip
    state = fold(r.event for r in log.read())
    entry = state.entries[IDS[0]]
    assert entry.updated_at == entry.created_at


# -- the SQLite view ------------------------------------------------------------------

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def test_fts_and_vectors_follow_the_rows(memlog_home: Path) -> None:
    write_log(memlog_home, SOME_EVENTS)
    catch_up(memlog_home)
    with Snapshot(Home(memlog_home)) as view:  # D3's FTS5 bm25, from an index of the rows
        found = view.candidates(["heuristics", "patterns", "anti-patterns", "facts"], NOW)
        scores = view.bm25("alpha", view.rowid_positions(found.ids))
    assert [i for i, s in zip(found.ids, scores, strict=True) if s > 0] == [IDS[2]]
    db = store.connect(Home(memlog_home).db)
    assert db.execute("SELECT name FROM sqlite_master WHERE name LIKE '%fts%'").fetchall() == []
    matrix = load_matrix(db, Home(memlog_home), DEFAULT_SPACE)
    assert matrix.ids == [IDS[0]]
    expected = np.frombuffer(vector(1), "<f4")  # kept as q8: within half a step of its scale
    assert np.abs(matrix.vectors[0] - expected).max() <= np.abs(expected).max() / 254 + 1e-7
    meta = dict(db.execute("SELECT key, value FROM _metadata").fetchall())
    assert meta["embedding_provider"] == "local" and meta["schema_version"] == str(SCHEMA_VERSION)
    assert meta["log_seq"] == str(len(SOME_EVENTS))
    db.close()


def test_vector_spaces_never_mix(memlog_home: Path) -> None:
    other = Space("openai", "text-embedding-3-small", 384)
    write_log(memlog_home, SOME_EVENTS)
    EventLog(memlog_home).append(
        [
            Reembedded(
                entry_id=IDS[2],
                provider=other.provider,
                model=other.model,
                dimensions=384,
                vector=vector(9),
            )
        ]  # fmt: skip
    )
    catch_up(memlog_home)
    db = store.connect(Home(memlog_home).db)
    assert load_matrix(db, Home(memlog_home), DEFAULT_SPACE).ids == [IDS[0]]
    assert load_matrix(db, Home(memlog_home), other).ids == [IDS[2]]  # from the table of others
    db.close()
    catch_up(memlog_home, other)  # the configured space changes: the view is rebuilt
    db = store.connect(Home(memlog_home).db)
    assert load_matrix(db, Home(memlog_home), other).ids == [IDS[2]]
    assert load_matrix(db, Home(memlog_home), DEFAULT_SPACE).ids == [IDS[0]]
    in_table = db.execute("SELECT entry_id, provider FROM vectors").fetchall()
    assert in_table == [(IDS[0], "local")]  # each vector once: the one in force is packed
    db.close()


def test_catch_up_is_incremental(memlog_home: Path) -> None:
    log = write_log(memlog_home, SOME_EVENTS)
    assert catch_up(memlog_home).applied == len(SOME_EVENTS)
    log.append([Recalled(ids=(IDS[0],))])
    result = catch_up(memlog_home)
    assert (result.applied, result.rebuilt) == (1, False)
    assert catch_up(memlog_home).applied == 0


# -- recovery ----------------------------------------------------------------------


def events_bytes(home: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((home / "events").iterdir())}


@pytest.mark.parametrize("damage", ["delete", "truncate", "garbage"])
def test_damaged_database_is_rebuilt_and_log_untouched(memlog_home: Path, damage: str) -> None:
    write_log(memlog_home, SOME_EVENTS)
    catch_up(memlog_home)
    good = sqlite_digest(Home(memlog_home))
    before = events_bytes(memlog_home)
    path = Home(memlog_home).db
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    if damage == "delete":
        path.unlink()
    elif damage == "truncate":
        path.write_bytes(path.read_bytes()[:3000])
    else:
        path.write_bytes(b"this is not a database" * 500)
    result = catch_up(memlog_home)
    assert result.rebuilt or damage == "delete"
    assert sqlite_digest(Home(memlog_home)) == good
    assert events_bytes(memlog_home) == before


def test_reader_keeps_its_snapshot_during_a_rebuild(memlog_home: Path) -> None:
    log = write_log(memlog_home, SOME_EVENTS[:5])
    catch_up(memlog_home)
    reader = sqlite3.connect(Home(memlog_home).db, isolation_level=None)
    reader.execute("BEGIN")
    old = reader.execute("SELECT count(*) FROM entries").fetchone()
    log.append(SOME_EVENTS[5:])
    rebuild(Home(memlog_home))
    assert reader.execute("SELECT count(*) FROM entries").fetchone() == old
    reader.execute("COMMIT")
    new = reader.execute("SELECT count(*), (SELECT value FROM _metadata WHERE key='log_seq') "
                         "FROM entries").fetchone()  # fmt: skip
    assert new == (6, str(len(SOME_EVENTS)))
    reader.close()


def test_catch_ups_patch_the_markdown_files_in_place(
    memlog_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new entry that sorts last is appended to its file, a changed one replaced where it
    is, a retired one removed, without reading the file's other entries from the rows; the
    files equal those a rebuild writes."""
    same = {"category": "patterns", "project": "alpha"}  # all in one file
    log = write_log(memlog_home, [observed(0, **same), observed(1, **same)])
    catch_up(memlog_home)
    log.append([observed(2, **same)])  # rendered: after a rebuild the last entry is not known
    catch_up(memlog_home)

    def unread(*args: object) -> list[object]:
        raise AssertionError("the file was rendered from the rows")

    monkeypatch.setattr(markdown_sync, "_members", unread)
    for events in (
        [observed(3, **same)],  # appended
        [observed(1, **same, source="retro", reasoning="Seen twice.")],  # replaced in place
        [Retired(entry_id=IDS[2], reason="wrong")],  # removed
    ):
        log.append(events)
        assert not catch_up(memlog_home).rebuilt
    monkeypatch.undo()
    copy_log(memlog_home, tmp_path / "full")
    rebuild(Home(tmp_path / "full"))
    assert markdown_files(Home(memlog_home)) == markdown_files(Home(tmp_path / "full"))


def test_a_file_no_entry_belongs_to_any_longer_is_removed_as_a_replay_has_none(
    memlog_home: Path, tmp_path: Path
) -> None:
    """Promoted to every project and then back to its own, the only entry of its category
    leaves the global file, which a replay never writes: a catch-up removes it instead of
    leaving its header."""
    log = write_log(memlog_home, [observed(0, category="patterns", project="alpha")])
    catch_up(memlog_home)
    for scope in ("universal", "project"):
        log.append([Promoted(entry_id=IDS[0], scope=scope, reason="judged")])
        assert not catch_up(memlog_home).rebuilt
        assert (memlog_home / "patterns.md").exists() == (scope == "universal")
    copy_log(memlog_home, tmp_path / "full")
    rebuild(Home(tmp_path / "full"))
    assert markdown_files(Home(memlog_home)) == markdown_files(Home(tmp_path / "full"))


def test_a_catch_up_changing_many_entries_of_a_file_renders_it_once(
    memlog_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past ``MOST_EDITS`` a file is rendered whole, not patched edit by edit (each a pass
    over the text: a 12,000-entry import took 80 s there); it equals a rebuild's."""

    def lesson(i: int, **extra: object) -> Observed:
        return Observed(name=f"Bulk {i}", description=f"Bulk lesson number {i}.",
                        category="patterns", project="alpha", **extra)  # fmt: skip

    count = markdown_sync.MOST_EDITS + 10
    log = write_log(memlog_home, [lesson(i) for i in range(count)])
    catch_up(memlog_home)
    log.append([lesson(i, source="retro", reasoning="Seen twice.") for i in range(count)])
    read, members = [], markdown_sync._members
    monkeypatch.setattr(markdown_sync, "_members", lambda *a: read.append(a[1]) or members(*a))
    assert not catch_up(memlog_home).rebuilt
    assert read == ["projects/alpha/patterns.md"]  # rendered from the rows, once
    text = (memlog_home / "projects" / "alpha" / "patterns.md").read_text()
    assert text.count("Observation count: 2") == count
    copy_log(memlog_home, tmp_path / "full")
    rebuild(Home(tmp_path / "full"))
    assert markdown_files(Home(memlog_home)) == markdown_files(Home(tmp_path / "full"))
