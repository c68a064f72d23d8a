"""Packed vector files: named by content, appended in place, swept, bounded on disk.

Regression of failure 1 of issue 12: every catch-up that added a vector
wrote a new ``vectors/<uuid>.f32`` and never removed the old one (6 observes
and 2 replays left 9 files), and the random name made two replays differ.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from memlog.commands.cli import cli
from memlog.eventlog.events import Observed, Reembedded
from memlog.eventlog.log import EventLog
from memlog.projections.runner import catch_up, db_path, rebuild
from memlog.projections.sqlite_view import packed, store
from memlog.projections.sqlite_view.reading import load_matrix
from memlog.projections.sqlite_view.vectors import (
    LEGACY_SUFFIX,
    SUFFIX,
    VECTOR_DIR,
    packed_file,
    row_size,
)
from memlog.vocabulary import DEFAULT_SPACES, Space

SPACE = DEFAULT_SPACES["hashing"]
SMALL = Space("hashing", "blake2b-words", 4)


def invoke(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def observe(i: int) -> str:
    return invoke(
        "observe", "--name", f"Lesson {i}", "--category", "patterns",
        "--description", f"Lesson {i}: keep the parser for format {i} strict and tested.",
    )  # fmt: skip


def packed_files(home: Path) -> list[str]:
    return sorted(n for n in os.listdir(home / VECTOR_DIR) if n.endswith((SUFFIX, LEGACY_SUFFIX)))


def pointer(home: Path, space: Space = SPACE) -> tuple[int, str]:
    with store.opened(db_path(home), readonly=True) as db:
        found = packed_file(db, space)
    assert found is not None
    return found


def vector(seed: int, dims: int = 4) -> bytes:
    return np.random.default_rng(seed).standard_normal(dims).astype("<f4").tobytes()


def add_entry(log: EventLog, i: int, dims: int = 4) -> str:
    event = Observed(name=f"n{i}", description=f"entry number {i}", category="facts")
    log.append([event])
    space = {"provider": SMALL.provider, "model": SMALL.model, "dimensions": dims}
    log.append([Reembedded(entry_id=event.entry_id, vector=vector(i, dims), **space)])
    return event.entry_id


# -- failure 1: one file, named by its content ----------------------------------------------


def test_observes_and_replays_leave_one_content_named_file(memlog_home: Path) -> None:
    for i in range(6):
        observe(i)
        assert len(packed_files(memlog_home)) == 1
    count, name = pointer(memlog_home)
    assert count == 6 and packed_files(memlog_home) == [name]
    invoke("replay")
    first = pointer(memlog_home)
    data = (memlog_home / VECTOR_DIR / first[1]).read_bytes()
    invoke("replay")
    assert pointer(memlog_home) == first  # the same rows make the same file
    assert packed_files(memlog_home) == [first[1]]
    assert (memlog_home / VECTOR_DIR / first[1]).read_bytes() == data
    assert first[1] == packed.content_name(data, SUFFIX)
    assert len(data) == 6 * row_size(SPACE.dimensions)


def test_a_catch_up_adding_one_vector_appends_one_row(memlog_home: Path) -> None:
    log = EventLog(memlog_home)
    ids = [add_entry(log, i) for i in range(3)]
    catch_up(memlog_home, SMALL)
    count, name = pointer(memlog_home, SMALL)
    path = memlog_home / VECTOR_DIR / name
    before = path.read_bytes()
    inode = path.stat().st_ino
    ids.append(add_entry(log, 3))
    catch_up(memlog_home, SMALL)
    assert pointer(memlog_home, SMALL) == (count + 1, name)  # same file, one more row
    after = path.read_bytes()
    assert path.stat().st_ino == inode
    assert after[: len(before)] == before  # committed rows are never rewritten
    assert len(after) - len(before) == row_size(SMALL.dimensions)
    with store.opened(db_path(memlog_home), readonly=True) as db:
        matrix = load_matrix(db, memlog_home, SMALL)
    assert sorted(matrix.ids) == sorted(ids)
    for entry_id, row in zip(matrix.ids, matrix.vectors, strict=True):
        assert row.tobytes() == vector(ids.index(entry_id))


def test_a_replaced_vector_writes_a_new_file_and_sweeps_the_old(memlog_home: Path) -> None:
    log = EventLog(memlog_home)
    first = add_entry(log, 0)
    add_entry(log, 1)
    catch_up(memlog_home, SMALL)
    _, old = pointer(memlog_home, SMALL)
    log.append([Reembedded(entry_id=first, provider=SMALL.provider, model=SMALL.model,
                           dimensions=4, vector=vector(99))])  # fmt: skip
    catch_up(memlog_home, SMALL)
    count, new = pointer(memlog_home, SMALL)
    assert count == 2 and new != old and packed_files(memlog_home) == [new]


def test_a_reader_keeps_its_rows_while_rows_are_appended(memlog_home: Path) -> None:
    log = EventLog(memlog_home)
    add_entry(log, 0)
    catch_up(memlog_home, SMALL)
    reader = store.connect(db_path(memlog_home), readonly=True)
    reader.execute("BEGIN")
    seen = load_matrix(reader, memlog_home, SMALL)
    for i in range(1, 4):
        add_entry(log, i)
        catch_up(memlog_home, SMALL)
    again = load_matrix(reader, memlog_home, SMALL)  # the same snapshot, the same rows
    assert again.ids == seen.ids and again.vectors.tobytes() == seen.vectors.tobytes()
    reader.close()


def test_rows_nobody_committed_are_never_appended_after(memlog_home: Path) -> None:
    """A crash between writing rows and committing them leaves bytes past the count."""
    log = EventLog(memlog_home)
    add_entry(log, 0)
    catch_up(memlog_home, SMALL)
    _, name = pointer(memlog_home, SMALL)
    with open(memlog_home / VECTOR_DIR / name, "ab") as handle:
        handle.write(b"x" * row_size(SMALL.dimensions))  # rows of a rolled-back catch-up
    (memlog_home / VECTOR_DIR / f".{name}.123.tmp").write_bytes(b"torn")
    add_entry(log, 1)
    catch_up(memlog_home, SMALL)
    count, new = pointer(memlog_home, SMALL)
    assert count == 2 and new != name
    assert sorted(os.listdir(memlog_home / VECTOR_DIR)) == sorted(
        [packed.LOCK_NAME, new, f"{new}.sums"]  # the file and its checksums
    )
    with store.opened(db_path(memlog_home), readonly=True) as db:
        assert len(load_matrix(db, memlog_home, SMALL).ids) == 2


def test_no_sweep_while_a_file_is_being_prepared(memlog_home: Path) -> None:
    folder = memlog_home / VECTOR_DIR
    folder.mkdir(parents=True)
    kept = packed.write(folder, b"a" * 20, SUFFIX)
    extra = packed.write(folder, b"b" * 20, SUFFIX)  # written, not yet named by any view
    with packed.preparing(folder):
        assert packed.sweep(folder, SUFFIX, lambda: {kept}) == []
        assert sorted(packed_files(memlog_home)) == sorted([kept, extra])
    assert packed.sweep(folder, SUFFIX, lambda: {kept}) == [extra]
    assert packed_files(memlog_home) == [kept]


def test_the_sweep_lock_is_shared_by_writers(memlog_home: Path) -> None:
    folder = memlog_home / VECTOR_DIR
    with packed.preparing(folder), packed.preparing(folder):  # two writers at once
        fd = os.open(folder / packed.LOCK_NAME, os.O_RDWR)
        with pytest.raises(BlockingIOError):
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.close(fd)


def test_a_legacy_file_is_read_through_the_rows_then_replaced(memlog_home: Path) -> None:
    log = EventLog(memlog_home)
    ids = [add_entry(log, i) for i in range(2)]
    catch_up(memlog_home, SMALL)
    (memlog_home / VECTOR_DIR / "0123abcd.f32").write_bytes(b"\0" * 200)  # an old uuid file
    with sqlite3.connect(db_path(memlog_home)) as db:
        db.execute("UPDATE vector_sets SET file = '0123abcd.f32'")
    with store.opened(db_path(memlog_home), readonly=True) as db:
        assert sorted(load_matrix(db, memlog_home, SMALL).ids) == sorted(ids)  # from the rows
    add_entry(log, 2)
    catch_up(memlog_home, SMALL)
    count, name = pointer(memlog_home, SMALL)
    assert count == 3 and name.endswith(SUFFIX) and packed_files(memlog_home) == [name]


# -- disk use stays bounded by the live data --------------------------------------------------


def home_bytes(home: Path) -> dict[str, int]:
    sizes = {"log": 0, "db": 0, "vectors": 0, "other": 0}
    for path in home.rglob("*"):
        if not path.is_file():
            continue
        rel = path.relative_to(home).parts
        kind = {"events": "log", VECTOR_DIR: "vectors"}.get(rel[0])
        kind = kind or ("db" if rel[0].startswith("memory.db") else "other")
        if path.name.endswith(".sums"):
            kind = "other"  # a packed file's checksums: 4 bytes per 64 KiB
        sizes[kind] += path.stat().st_size
    return sizes


def test_disk_growth_is_bounded_by_the_new_rows(memlog_home: Path) -> None:
    log = EventLog(memlog_home)
    for i in range(200):
        add_entry(log, i, dims=64)
    rebuild(memlog_home, Space(SMALL.provider, SMALL.model, 64))
    space = Space(SMALL.provider, SMALL.model, 64)
    before = home_bytes(memlog_home)
    for i in range(200, 260):  # 60 catch-ups, each adding one vector
        add_entry(log, i, dims=64)
        catch_up(memlog_home, space)
    after = home_bytes(memlog_home)
    assert len(packed_files(memlog_home)) == 1
    assert after["vectors"] == 260 * row_size(64)  # exactly the live rows, nothing left over
    assert after["vectors"] - before["vectors"] == 60 * row_size(64)
    # the rest grows with the new entries (rows, FTS, markdown), never by a copy per step:
    # before the fix the vectors alone grew by a whole matrix per catch-up (~3.7 MB here)
    log_grown = after["log"] - before["log"]
    assert after["db"] - before["db"] <= 2 * log_grown
    assert after["other"] - before["other"] <= log_grown
    assert sum(after.values()) - sum(before.values()) <= 4 * log_grown
