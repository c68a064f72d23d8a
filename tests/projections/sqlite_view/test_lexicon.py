"""The packed lexical index: BM25 weights by hand, kept in step with the entries."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from memlog.eventlog.events import Observed, Retired
from memlog.eventlog.log import EventLog
from memlog.projections.runner import catch_up, rebuild
from memlog.projections.sqlite_view import index_files, lexicon, store
from memlog.projections.sqlite_view.lexicon import _TERM, K1, B, encode, term_hash
from memlog.projections.terms import Unit
from memlog.vocabulary import DEFAULT_SPACE


def rows(*docs: dict[str, float]) -> list[np.ndarray]:
    return [np.array(sorted((term_hash(t), n) for t, n in d.items()), dtype=_TERM) for d in docs]


def mapped(tmp_path: Path, data: bytes) -> lexicon.Lexicon:
    with store.opened(tmp_path / store.DB_NAME) as db:
        index_files.point(db, lexicon.KIND, index_files.write(tmp_path, lexicon.KIND, data), 3)
        index = lexicon.load(db, tmp_path)
    assert index is not None
    return index


def test_bm25_by_hand(tmp_path: Path) -> None:
    # three documents of lengths 3, 1 and 2; "lock" is in two of them
    data = encode(
        ["a" * 16, "b" * 16, "c" * 16], rows({"lock": 2, "retri": 1}, {"lock": 1}, {"cach": 2})
    )
    index = mapped(tmp_path, data)
    average = 2.0
    idf = {1: math.log1p((3 - 1 + 0.5) / 1.5), 2: math.log1p((3 - 2 + 0.5) / 2.5)}

    def weight(tf: float, length: float, df: int) -> float:
        return idf[df] * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / average))

    scores = index.score([Unit(("lock",), 1.0), Unit(("retri",), 2.0)])
    expected = [weight(2, 3, 2) + 2 * weight(1, 3, 1), weight(1, 1, 2), 0.0]
    assert scores.tolist() == pytest.approx(expected, rel=1e-6)
    assert index.score([Unit(("unknown",), 1.0)]).tolist() == [0.0, 0.0, 0.0]
    # an identifier's terms count only where all of them are: "lock" alone is in b
    together = index.score([Unit(("lock", "retri"), 1.5)])
    assert together.tolist() == pytest.approx([1.5 * (weight(2, 3, 2) + weight(1, 3, 1)), 0, 0])
    assert index.score([Unit(("lock", "unknown"), 1.0)]).tolist() == [0.0, 0.0, 0.0]
    assert [i.decode() for i in index.ids.tolist()] == ["a" * 16, "b" * 16, "c" * 16]


def test_index_follows_the_entries_and_equals_a_rebuild(memlog_home: Path) -> None:
    log = EventLog(memlog_home)
    first = Observed(name="Lock retries", description="Retry the SQLite lock.", category="patterns")
    second = Observed(name="Cache keys", description="Cache keys by content.", category="patterns")
    log.append([first, second])
    catch_up(memlog_home, DEFAULT_SPACE)
    with store.opened(memlog_home / store.DB_NAME) as db:
        before = index_files.pointer(db, lexicon.KIND)
        assert before is not None and before[1] == 2
    log.append([Retired(entry_id=first.entry_id, reason="wrong")])
    catch_up(memlog_home, DEFAULT_SPACE)
    with store.opened(memlog_home / store.DB_NAME) as db:
        after = index_files.pointer(db, lexicon.KIND)
        index = lexicon.load(db, memlog_home)
    assert after is not None and after[1] == 1 and after != before
    assert index is not None and index.score([Unit(("lock",), 1.0)]).tolist() == [0.0]
    rebuild(memlog_home, DEFAULT_SPACE)
    with store.opened(memlog_home / store.DB_NAME) as db:
        assert index_files.pointer(db, lexicon.KIND) == after  # same content, same name


def test_a_missing_file_is_no_index(memlog_home: Path) -> None:
    EventLog(memlog_home).append(
        [Observed(name="Lock retries", description="Retry the lock.", category="patterns")]
    )
    catch_up(memlog_home, DEFAULT_SPACE)
    for path in (memlog_home / index_files.INDEX_DIR).glob("*.lex"):
        path.unlink()
    with store.opened(memlog_home / store.DB_NAME) as db:
        assert lexicon.load(db, memlog_home) is None
