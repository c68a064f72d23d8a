"""The packed files of ``index/``: named by generation, swept once nothing points at them,
refused when damaged."""

from __future__ import annotations

import os
from pathlib import Path

from memlog.home import Home
from memlog.projections.sqlite_view import index_files, packed, store


def write(folder: Path, name: str, data: bytes) -> str:
    return packed.write(folder / "index", name, data)


def test_a_name_says_which_event_the_file_was_first_written_for() -> None:
    assert packed.generation_name(30_000, ".rnk") == "000000030000.rnk"
    names = [packed.generation_name(n, ".lex") for n in (9, 10, 100_000)]
    assert names == sorted(names)


def test_only_files_the_committed_view_points_at_stay(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    with index_files.preparing(Home(tmp_path)), store.opened(path) as db:
        with store.transaction(db):
            old = write(tmp_path, "000000000001.lex", b"old")
            index_files.point(db, "lex", old, 1)
        with store.transaction(db):
            new = write(tmp_path, "000000000002.lex", b"new")
            index_files.point(db, "lex", new, 1)
            nbr = write(tmp_path, "000000000002.nbr", b"graph")
            index_files.point(db, "nbr", nbr, 1)
    assert index_files.sweep(Home(tmp_path), path, wait=True) == [old]
    assert sorted(os.listdir(tmp_path / "index")) == sorted(
        [".packed.lock", ".patch.lock", new, nbr, f"{new}.sums", f"{nbr}.sums"]
    )


def test_a_file_being_written_is_never_swept(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    with index_files.preparing(Home(tmp_path)), store.opened(path) as db, store.transaction(db):
        named = write(tmp_path, "000000000001.lex", b"named")
        index_files.point(db, "lex", named, 1)
    with index_files.preparing(Home(tmp_path)):
        pending = write(tmp_path, "000000000002.lex", b"not named yet")
        assert index_files.sweep(Home(tmp_path), path) == []  # a writer holds it: skipped
        assert (tmp_path / "index" / pending).exists()
    # the writer gave up without naming it (a rolled-back transaction): it goes now
    assert index_files.sweep(Home(tmp_path), path, wait=True) == [pending]
    assert (tmp_path / "index" / named).exists()


def test_a_damaged_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    good = packed.header(b"MLRNK002", 4) + b"abcdefgh"
    with store.opened(path) as db, store.transaction(db):
        index_files.point(db, "rnk", write(tmp_path, "000000000001.rnk", good), 2)
        found = index_files.slots(db, Home(tmp_path), "rnk", b"MLRNK002")
        assert found is not None and bytes(found.data) == b"abcdefgh"
        assert index_files.slots(db, Home(tmp_path), "rnk", b"MLNBR002") is None  # another kind
        index_files.point(db, "rnk", "000000000001.rnk", 3)  # more records than it holds
        assert index_files.slots(db, Home(tmp_path), "rnk", b"MLRNK002") is None
        index_files.point(db, "rnk", write(tmp_path, "000000000002.rnk", b"short"), 1)
        assert index_files.slots(db, Home(tmp_path), "rnk", b"MLRNK002") is None
        index_files.point(db, "rnk", "missing.rnk", 1)
        assert index_files.slots(db, Home(tmp_path), "rnk", b"MLRNK002") is None


def test_the_delta_before_the_named_one_is_kept_for_readers_still_on_it(tmp_path: Path) -> None:
    """A reader that read the pointer just before a catch-up named a newer delta still finds
    the one it read: each catch-up writes a new one, so the last but one stays."""
    path = tmp_path / "memory.db"
    with index_files.preparing(Home(tmp_path)), store.opened(path) as db:
        for n in range(1, 5):
            with store.transaction(db):
                index_files.point(db, "lxd", write(tmp_path, f"{n:012d}.lxd", b"delta"), 1)
    removed = index_files.sweep(Home(tmp_path), path, wait=True)
    assert removed == ["000000000001.lxd", "000000000002.lxd"]
    assert index_files.sweep(Home(tmp_path), path, wait=True) == []
