"""Packed slot files: a catch-up writes the records its events changed and nothing else,
readers keep what their snapshot covers, crashes leave nothing behind, disk stays bounded.

Regressions: every catch-up that added a vector once wrote a new vector file
and never removed the old one (6 observes and 2 replays left 9 files); then
every catch-up rewrote the lexical index, the neighbour lists and the ranking
columns whole, a cost that followed the size of the view, not the events.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from memlog.commands.cli import cli
from memlog.eventlog.events import Observed, Reembedded
from memlog.eventlog.log import EventLog
from memlog.eventlog.vectors import q8_size
from memlog.home import Home
from memlog.projections.runner import catch_up, rebuild
from memlog.projections.sqlite_view import (
    index_files,
    neighbours,
    packed,
    packsums,
    ranks,
    store,
    vectors,
)
from memlog.projections.sqlite_view.reading import load_matrix
from memlog.vocabulary import DEFAULT_SPACES, Space

SPACE = DEFAULT_SPACES["hashing"]
SMALL = Space("hashing", "blake2b-words", 4)
KINDS = ("lex", "nbr", "rnk", "vec")


def invoke(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def observe(i: int) -> str:
    return invoke(
        "observe", "--name", f"Lesson {i}", "--category", "patterns",
        "--description", f"Lesson {i}: keep the parser for format {i} strict and tested.",
    )  # fmt: skip


def index_names(home: Path) -> list[str]:
    """The packed files of ``home``, once each is found beside its checksums (and no
    checksums are left without their file)."""
    names = [n for n in os.listdir(home / "index") if not n.startswith(".")]
    files = sorted(n for n in names if not n.endswith(packsums.SUFFIX))
    assert sorted(n for n in names if n.endswith(packsums.SUFFIX)) == [
        n + packsums.SUFFIX for n in files
    ]
    return files


def pointer(home: Path, kind: str) -> tuple[str, int]:
    with store.opened(Home(home).db, readonly=True) as db:
        found = index_files.pointer(db, kind)
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


def records(home: Path, kind: str) -> list[bytes]:
    name, count = pointer(home, kind)
    data = (home / "index" / name).read_bytes()[packed.HEADER.size :]
    size = len(data) // count
    return [data[n * size : (n + 1) * size] for n in range(count)]


def test_observes_and_replays_leave_one_file_of_each_kind(memlog_home: Path) -> None:
    for i in range(6):
        observe(i)
        names = index_names(memlog_home)
        kinds = sorted({n.rsplit(".", 1)[1] for n in names})
        assert kinds in (sorted(KINDS), sorted([*KINDS, "lxd"]))
        assert len(names) <= len(KINDS) + 2  # and the delta before the last one
    assert pointer(memlog_home, "vec")[1] == 6
    invoke("replay")
    first = {n: (memlog_home / "index" / n).read_bytes() for n in index_names(
        memlog_home)}  # fmt: skip
    assert sorted(n.rsplit(".", 1)[1] for n in first) == sorted(KINDS)  # a replay: no delta
    assert len({n.split(".")[0] for n in first}) == 1  # all named by the replay's last event
    invoke("replay")
    again = {n: (memlog_home / "index" / n).read_bytes() for n in index_names(
        memlog_home)}  # fmt: skip
    assert again == first  # the same log makes the same names and bytes
    assert len(first[pointer(memlog_home, "vec")[0]]) == packed.HEADER.size + 6 * q8_size(
        SPACE.dimensions
    )


def test_a_catch_up_adding_one_entry_writes_its_records_and_nothing_else(
    memlog_home: Path,
) -> None:
    log = EventLog(memlog_home)
    ids = [add_entry(log, i) for i in range(3)]
    catch_up(memlog_home, SMALL)
    before = {kind: records(memlog_home, kind) for kind in ("vec", "rnk", "nbr")}
    names = {kind: pointer(memlog_home, kind)[0] for kind in ("vec", "rnk", "nbr")}
    inodes = {k: (memlog_home / "index" / n).stat().st_ino for k, n in names.items()}
    ids.append(add_entry(log, 3))
    assert not catch_up(memlog_home, SMALL).rebuilt
    for kind, name in names.items():
        path = memlog_home / "index" / name
        assert pointer(memlog_home, kind) == (name, 4)  # the same file, one more record
        assert path.stat().st_ino == inodes[kind]
        after = records(memlog_home, kind)
        if kind != "nbr":  # (the lists the newcomer enters change too)
            assert after[:3] == before[kind]
    with store.opened(Home(memlog_home).db, readonly=True) as db:
        matrix = load_matrix(db, Home(memlog_home), SMALL)
    assert matrix.ids == ids  # slot order: the order the log created them
    for entry_id, row in zip(matrix.ids, matrix.vectors, strict=True):
        exact = np.frombuffer(vector(ids.index(entry_id)), "<f4")
        assert np.abs(row - exact).max() <= np.abs(exact).max() / 254 + 1e-7


def test_a_replaced_vector_is_rewritten_where_it_is(memlog_home: Path) -> None:
    log = EventLog(memlog_home)
    first = add_entry(log, 0)
    add_entry(log, 1)
    catch_up(memlog_home, SMALL)
    name, _ = pointer(memlog_home, "vec")
    second_record = records(memlog_home, "vec")[1]
    log.append([Reembedded(entry_id=first, provider=SMALL.provider, model=SMALL.model,
                           dimensions=4, vector=vector(99))])  # fmt: skip
    catch_up(memlog_home, SMALL)
    assert pointer(memlog_home, "vec") == (name, 2)
    assert records(memlog_home, "vec")[1] == second_record
    with store.opened(Home(memlog_home).db, readonly=True) as db:
        assert vectors.vector_count(db) == 2


def test_a_count_a_writer_missed_is_made_right_by_the_next_catch_up(memlog_home: Path) -> None:
    """``vector_count`` is counted from the ranking records each time a catch-up writes
    them: a count left behind (a writer whose transaction was lost while its records
    stood) is right again after the next catch-up, though it adds no vector."""
    log = EventLog(memlog_home)
    add_entry(log, 0)
    add_entry(log, 1)
    catch_up(memlog_home, SMALL)
    home = Home(memlog_home)
    with store.opened(home.db) as db, store.transaction(db):
        store.set_meta(db, {"vector_count": "1"})
    log.append([Observed(name="n0", description="entry number 0", category="facts")])
    catch_up(memlog_home, SMALL)
    with store.opened(home.db, readonly=True) as db:
        assert vectors.vector_count(db) == ranks.vectored(db, home) == 2


def test_a_reader_keeps_its_records_while_records_are_appended(memlog_home: Path) -> None:
    log = EventLog(memlog_home)
    add_entry(log, 0)
    catch_up(memlog_home, SMALL)
    reader = store.connect(Home(memlog_home).db, readonly=True)
    reader.execute("BEGIN")
    seen = load_matrix(reader, Home(memlog_home), SMALL)
    for i in range(1, 4):
        add_entry(log, i)
        catch_up(memlog_home, SMALL)
    again = load_matrix(reader, Home(memlog_home), SMALL)  # the same snapshot, the same records
    assert again.ids == seen.ids and again.vectors.tobytes() == seen.vectors.tobytes()
    reader.close()


def test_records_nobody_committed_are_cut_before_anything_is_written(memlog_home: Path) -> None:
    """A crash between writing records and committing them leaves bytes past the count."""
    log = EventLog(memlog_home)
    add_entry(log, 0)
    catch_up(memlog_home, SMALL)
    name, _ = pointer(memlog_home, "vec")
    path = memlog_home / "index" / name
    with open(path, "ab") as handle:
        handle.write(b"x" * 3 * q8_size(SMALL.dimensions))  # records of a rolled-back catch-up
    (memlog_home / "index" / f".{name}.123.tmp").write_bytes(b"torn")
    add_entry(log, 1)
    assert not catch_up(memlog_home, SMALL).rebuilt
    assert pointer(memlog_home, "vec") == (name, 2)
    assert path.stat().st_size == packed.HEADER.size + 2 * q8_size(SMALL.dimensions)
    assert b"x" not in path.read_bytes()[packed.HEADER.size :]
    assert not any(n.endswith(".tmp") for n in os.listdir(path.parent))
    assert packsums.full(path) is None  # its checksums follow the cut and the new record
    with store.opened(Home(memlog_home).db, readonly=True) as db:
        assert len(load_matrix(db, Home(memlog_home), SMALL).ids) == 2


def test_a_file_shorter_than_its_count_is_written_again_by_a_rebuild(memlog_home: Path) -> None:
    log = EventLog(memlog_home)
    add_entry(log, 0)
    add_entry(log, 1)
    catch_up(memlog_home, SMALL)
    name, _ = pointer(memlog_home, "rnk")
    path = memlog_home / "index" / name
    path.write_bytes(path.read_bytes()[: packed.HEADER.size + ranks.RECORD.size])  # damaged
    with store.opened(Home(memlog_home).db, readonly=True) as db:
        assert ranks.read(db, Home(memlog_home)) is None  # refused: readers rank without it
    add_entry(log, 2)
    assert catch_up(memlog_home, SMALL).rebuilt
    assert pointer(memlog_home, "rnk")[1] == 3


def test_patch_joins_neighbouring_records_and_refuses_a_gap(tmp_path: Path) -> None:
    packed.write(tmp_path, "f.rnk", packed.header(b"MAGIC001", 2) + b"aabb")
    assert packed.patch(tmp_path, "f.rnk", 2, 2, [(2, b"cc"), (1, b"BB"), (3, b"dd")])
    assert (tmp_path / "f.rnk").read_bytes()[packed.HEADER.size :] == b"aaBBccdd"
    assert not packed.patch(tmp_path, "f.rnk", 2, 9, [(0, b"zz")])  # shorter than its count
    assert not packed.patch(tmp_path, "missing.rnk", 2, 0, [(0, b"zz")])
    with pytest.raises(ValueError):
        packed.patch(tmp_path, "f.rnk", 2, 4, [(0, b"zzz")])


def test_no_sweep_while_a_file_is_being_prepared(memlog_home: Path) -> None:
    folder = memlog_home / "index"
    kept = packed.write(folder, "000000000001.vec", b"a" * 20)
    extra = packed.write(folder, "000000000002.vec", b"b" * 20)  # not yet named by any view
    with packed.preparing(folder):
        assert packed.sweep(folder, ".vec", lambda: {kept}) == []
        assert index_names(memlog_home) == sorted([kept, extra])
    assert packed.sweep(folder, ".vec", lambda: {kept}) == [extra]
    assert index_names(memlog_home) == [kept]


def test_the_sweep_lock_is_shared_by_writers(memlog_home: Path) -> None:
    folder = memlog_home / "index"
    with packed.preparing(folder), packed.preparing(folder):  # two writers at once
        fd = os.open(folder / packed.LOCK_NAME, os.O_RDWR)
        with pytest.raises(BlockingIOError):
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.close(fd)


def test_a_view_of_an_earlier_layout_is_rebuilt_and_its_files_removed(memlog_home: Path) -> None:
    log = EventLog(memlog_home)
    ids = [add_entry(log, i) for i in range(2)]
    catch_up(memlog_home, SMALL)
    legacy = memlog_home / "vectors"
    legacy.mkdir()
    (legacy / "0123abcd.vec").write_bytes(b"\0" * 200)  # where vectors were kept before
    with store.opened(Home(memlog_home).db) as db:
        db.execute("DELETE FROM _metadata WHERE key = 'view_format'")  # as a migrated view
    add_entry(log, 2)
    assert catch_up(memlog_home, SMALL).rebuilt
    assert not legacy.exists()
    with store.opened(Home(memlog_home).db, readonly=True) as db:
        assert load_matrix(db, Home(memlog_home), SMALL).ids[:2] == ids


# -- disk use stays bounded by the live data --------------------------------------------------


def home_bytes(home: Path) -> dict[str, int]:
    sizes = {"log": 0, "db": 0, "index": 0, "other": 0}
    for path in home.rglob("*"):
        if not path.is_file():
            continue
        rel = path.relative_to(home).parts
        kind = {"events": "log", "index": "index"}.get(rel[0])
        kind = kind or ("db" if rel[0].startswith("memory.db") else "other")
        if path.name.endswith(".sums"):
            kind = "other"  # a packed file's checksums: 4 bytes per 64 KiB
        sizes[kind] += path.stat().st_size
    return sizes


def test_disk_growth_is_bounded_by_the_new_records(memlog_home: Path) -> None:
    log = EventLog(memlog_home)
    space = Space(SMALL.provider, SMALL.model, 64)
    for i in range(200):
        add_entry(log, i, dims=64)
    rebuild(Home(memlog_home), space)
    before = home_bytes(memlog_home)
    for i in range(200, 260):  # 60 catch-ups, each adding one vector
        add_entry(log, i, dims=64)
        catch_up(memlog_home, space)
    after = home_bytes(memlog_home)
    assert len(index_names(memlog_home)) <= len(KINDS) + 2
    slot_files = q8_size(64) + ranks.RECORD.size + neighbours.RECORD.itemsize
    assert after["index"] - before["index"] <= 60 * (slot_files + 200)  # + the postings
    log_grown = after["log"] - before["log"]
    assert after["db"] - before["db"] <= 2 * log_grown
    assert after["other"] - before["other"] <= log_grown
    assert sum(after.values()) - sum(before.values()) <= 4 * log_grown
