"""The ranking indexes' packed files: named by content, swept once nothing points at them."""

from __future__ import annotations

import os
from pathlib import Path

from memlog.projections.sqlite_view import index_files, store


def test_the_name_is_the_content(tmp_path: Path) -> None:
    first = index_files.write(tmp_path, "lex", b"abc")
    assert first == index_files.write(tmp_path, "lex", b"abc") and first.endswith(".lex")
    assert first != index_files.write(tmp_path, "lex", b"abd")
    assert (tmp_path / index_files.INDEX_DIR / first).read_bytes() == b"abc"


def test_only_files_the_committed_view_points_at_stay(tmp_path: Path) -> None:
    path = tmp_path / store.DB_NAME
    with index_files.preparing(tmp_path), store.opened(path) as db:
        with store.transaction(db):
            old = index_files.write(tmp_path, "lex", b"old")
            index_files.point(db, "lex", old, 1)
        with store.transaction(db):
            new = index_files.write(tmp_path, "lex", b"new")
            index_files.point(db, "lex", new, 1)
            nbr = index_files.write(tmp_path, "nbr", b"graph")
            index_files.point(db, "nbr", nbr, 1)
    assert index_files.sweep(tmp_path, path, wait=True) == [old]
    assert sorted(os.listdir(tmp_path / index_files.INDEX_DIR)) == sorted(
        [".packed.lock", new, nbr, f"{new}.sums", f"{nbr}.sums"]  # each with its checksums
    )


def test_a_file_being_written_is_never_swept(tmp_path: Path) -> None:
    path = tmp_path / store.DB_NAME
    with index_files.preparing(tmp_path), store.opened(path) as db, store.transaction(db):
        named = index_files.write(tmp_path, "lex", b"named")
        index_files.point(db, "lex", named, 1)
    with index_files.preparing(tmp_path):
        pending = index_files.write(tmp_path, "lex", b"not named yet")
        assert index_files.sweep(tmp_path, path) == []  # a writer holds it: skipped
        assert (tmp_path / index_files.INDEX_DIR / pending).exists()
    # the writer gave up without naming it (a rolled-back transaction): it goes now
    assert index_files.sweep(tmp_path, path, wait=True) == [pending]
    assert (tmp_path / index_files.INDEX_DIR / named).exists()


def test_a_damaged_file_is_refused(tmp_path: Path) -> None:
    name = index_files.write(tmp_path, "lex", b"not a packed file at all, far too short?")
    assert index_files.open_mapped(tmp_path, name, b"MLLEX001") is None
    assert index_files.open_mapped(tmp_path, "missing.lex", b"MLLEX001") is None
