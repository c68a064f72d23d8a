"""The packed lexical index: BM25 by hand, a base and its delta scoring as one base."""

from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np
import pytest

from memlog.eventlog.events import Observed, Retired
from memlog.eventlog.log import EventLog
from memlog.home import Home
from memlog.projections.runner import catch_up, rebuild
from memlog.projections.sqlite_view import index_files, lexfiles, lexicon, store
from memlog.projections.sqlite_view.lexfiles import K1, B
from memlog.projections.terms import Unit, term_hash
from memlog.vocabulary import DEFAULT_SPACE


def base(tmp_path: Path, docs: list[dict[str, int] | None]) -> None:
    """A view whose lexical index holds ``docs`` (None: a slot not indexed), as a base."""
    hashes, at, tf, lengths = [], [], [], []
    for slot, doc in enumerate(docs):
        lengths.append(sum(doc.values()) if doc is not None else -1)
        for term, count in (doc or {}).items():
            hashes.append(term_hash(term))
            at.append(slot)
            tf.append(count)
    data = lexicon._base_bytes(len(docs), np.array(hashes, dtype=np.uint64), np.array(at),
                               np.array(tf), np.array(lengths))  # fmt: skip
    with store.opened(tmp_path / "memory.db") as db, store.transaction(db):
        lexicon._point_base(db, Home(tmp_path), 1, data, len(docs))


def scores(tmp_path: Path, query: list[Unit], size: int) -> tuple[list[float], list[float]]:
    """The numpy scores and the plain ones."""
    with store.opened(tmp_path / "memory.db", readonly=True) as db:
        index = lexicon.load(db, Home(tmp_path))
        files = lexfiles.load_files(db, Home(tmp_path))
    assert index is not None and files is not None
    return index.score(query, size).tolist(), lexfiles.scores(files, query, size)


def test_bm25_by_hand(tmp_path: Path) -> None:
    # three documents of lengths 3, 1 and 2 (and a slot not indexed); "lock" is in two
    base(tmp_path, [{"lock": 2, "retri": 1}, {"lock": 1}, None, {"cach": 2}])
    average = 2.0
    idf = {1: math.log1p((3 - 1 + 0.5) / 1.5), 2: math.log1p((3 - 2 + 0.5) / 2.5)}

    def weight(tf: float, length: float, df: int) -> float:
        return idf[df] * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / average))

    numbers, plain = scores(tmp_path, [Unit(("lock",), 1.0), Unit(("retri",), 2.0)], 4)
    expected = [weight(2, 3, 2) + 2 * weight(1, 3, 1), weight(1, 1, 2), 0.0, 0.0]
    assert numbers == pytest.approx(expected, rel=1e-12)
    assert plain == numbers  # bit for bit
    assert scores(tmp_path, [Unit(("unknown",), 1.0)], 4) == ([0.0] * 4, [0.0] * 4)
    # an identifier's terms count only where all of them are: "lock" alone is in slot 1
    numbers, plain = scores(tmp_path, [Unit(("lock", "retri"), 1.5)], 4)
    assert numbers == pytest.approx([1.5 * (weight(2, 3, 2) + weight(1, 3, 1)), 0, 0, 0])
    assert plain == numbers
    nothing = scores(tmp_path, [Unit(("lock", "unknown"), 1.0)], 4)
    assert nothing == ([0.0] * 4, [0.0] * 4)


WORDS = ("lock", "retri", "cach", "pars", "fsync", "index", "queu", "token")


def random_doc(rng: random.Random) -> dict[str, int] | None:
    if rng.random() < 0.15:
        return None
    return {w: rng.randint(1, 4) for w in rng.sample(WORDS, rng.randint(1, 5))}


def as_doc(doc: dict[str, int] | None) -> lexicon.Doc | None:
    if doc is None:
        return None
    postings = sorted((term_hash(t), n) for t, n in doc.items())
    return sum(doc.values()), postings


@pytest.mark.parametrize("seed", range(6))
def test_a_delta_scores_as_the_base_a_rebuild_writes(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    docs = [random_doc(rng) for _ in range(12)]
    base(tmp_path, docs)
    for step in range(4):  # catch-ups: new slots, changed and retired documents
        changed = {rng.randrange(len(docs) + 3): random_doc(rng) for _ in range(rng.randint(1, 5))}
        size = max(len(docs), max(changed) + 1)
        docs += [None] * (size - len(docs))
        for slot, doc in changed.items():
            docs[slot] = doc
        with store.opened(tmp_path / "memory.db") as db, store.transaction(db):
            patched = [(slot, as_doc(doc)) for slot, doc in sorted(changed.items())]
            assert lexicon.patch(db, Home(tmp_path), 10 + step, size, patched)
            kept = lexicon.canonical(db, Home(tmp_path))
        words = rng.sample(WORDS, 4)  # two words, and two held together as an identifier's
        query = [Unit((words[0],), 1.0), Unit((words[1],), 1.5), Unit(tuple(words[2:]), 1.0)]
        incremental = scores(tmp_path, query, size)
        assert incremental[0] == incremental[1]  # numpy and plain agree, bit for bit
        fresh = tmp_path / f"fresh-{step}"
        fresh.mkdir()
        base(fresh, docs)
        assert scores(fresh, query, size) == incremental  # the same numbers as a rebuild
        with store.opened(tmp_path / "memory.db", readonly=True) as db:
            files = lexfiles.load_files(db, Home(tmp_path))
        assert files is not None
        for word in WORDS:  # the relevance floor's idf counts the same documents
            holding = sum(1 for doc in docs if doc is not None and word in doc)
            assert lexfiles.document_frequency(files, word) == holding
        with store.opened(fresh / "memory.db", readonly=True) as db:
            assert lexicon.canonical(db, Home(fresh)) == kept  # and the same base once compacted


def test_a_full_delta_is_folded_into_a_new_base(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lexicon, "DELTA_LIMIT", 3)
    base(tmp_path, [{"lock": 1}, {"cach": 1}])
    with store.opened(tmp_path / "memory.db") as db, store.transaction(db):
        assert lexicon.patch(db, Home(tmp_path), 5, 3, [(2, as_doc({"pars": 1, "lock": 2}))])
        assert index_files.pointer(db, "lxd") is not None  # two postings: a delta
        assert lexicon.patch(db, Home(tmp_path), 6, 3, [(0, as_doc({"fsync": 1, "queu": 1}))])
        assert index_files.pointer(db, "lxd") is None  # four: folded into a new base
        assert index_files.pointer(db, "lex") == ("000000000006.lex", 3)
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    base(fresh, [{"fsync": 1, "queu": 1}, {"cach": 1}, {"pars": 1, "lock": 2}])
    with store.opened(fresh / "memory.db", readonly=True) as db:
        rebuilt = lexicon.canonical(db, Home(fresh))
    written = (tmp_path / "index" / "000000000006.lex").read_bytes()
    assert rebuilt == written


def test_index_follows_the_entries_and_equals_a_rebuild(memlog_home: Path) -> None:
    log = EventLog(memlog_home)
    first = Observed(name="Lock retries", description="Retry the SQLite lock.", category="patterns")
    second = Observed(name="Cache keys", description="Cache keys by content.", category="patterns")
    log.append([first, second])
    catch_up(memlog_home, DEFAULT_SPACE)
    log.append([Retired(entry_id=first.entry_id, reason="wrong")])
    catch_up(memlog_home, DEFAULT_SPACE)
    with store.opened(memlog_home / "memory.db") as db:
        assert index_files.pointer(db, "lxd") is not None  # the retirement: in a delta
        index = lexicon.load(db, Home(memlog_home))
        kept = lexicon.canonical(db, Home(memlog_home))
    assert index is not None and index.score([Unit(("lock",), 1.0)], 2).tolist() == [0.0, 0.0]
    assert index.score([Unit(("cach",), 1.0)], 2).tolist()[1] > 0
    rebuild(Home(memlog_home), DEFAULT_SPACE)
    with store.opened(memlog_home / "memory.db") as db:
        assert index_files.pointer(db, "lxd") is None
        assert lexicon.canonical(db, Home(memlog_home)) == kept


def test_a_missing_file_is_no_index(memlog_home: Path) -> None:
    EventLog(memlog_home).append(
        [Observed(name="Lock retries", description="Retry the lock.", category="patterns")]
    )
    catch_up(memlog_home, DEFAULT_SPACE)
    for path in (memlog_home / "index").glob("*.lex"):
        path.unlink()
    with store.opened(memlog_home / "memory.db") as db:
        assert lexicon.load(db, Home(memlog_home)) is None
        assert lexfiles.load_files(db, Home(memlog_home)) is None
