"""Content-named packed files: written once, swept only after their grace period."""

from __future__ import annotations

import os
import time
from pathlib import Path

from memlog.projections.sqlite_view import packed, store


def test_the_name_is_the_content(tmp_path: Path) -> None:
    first = packed.write(tmp_path, "lex", b"abc")
    assert first == packed.write(tmp_path, "lex", b"abc") and first.endswith(".lex")
    assert first != packed.write(tmp_path, "lex", b"abd")
    assert (tmp_path / packed.INDEX_DIR / first).read_bytes() == b"abc"


def test_unreferenced_files_go_only_after_the_grace_period(tmp_path: Path) -> None:
    with store.opened(tmp_path / store.DB_NAME) as db:
        old = packed.write(tmp_path, "lex", b"old")
        packed.point(db, tmp_path, "lex", old, 1)
        new = packed.write(tmp_path, "lex", b"new")
        packed.point(db, tmp_path, "lex", new, 1)
        assert packed.sweep(db, tmp_path) == 0  # the old one just lost its pointer
        aged = time.time() - packed.GRACE_SECONDS - 5
        for name in (old, new):
            os.utime(tmp_path / packed.INDEX_DIR / name, (aged, aged))
        assert packed.sweep(db, tmp_path) == 1
        assert sorted(os.listdir(tmp_path / packed.INDEX_DIR)) == [new]


def test_a_damaged_file_is_refused(tmp_path: Path) -> None:
    name = packed.write(tmp_path, "lex", b"not a packed file at all, far too short?")
    assert packed.open_mapped(tmp_path, name, b"MLLEX001") is None
    assert packed.open_mapped(tmp_path, "missing.lex", b"MLLEX001") is None
