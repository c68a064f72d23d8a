"""Neighbour lists: exact, kept up to date event by event, equal to a full replay."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from memlog.eventlog.events import Reembedded, Retired
from memlog.eventlog.log import EventLog
from memlog.projections.runner import catch_up, rebuild
from memlog.projections.sqlite_view import index_files, neighbours, store
from memlog.tests.retrieval.helpers import HASHING, entry, filler, vector_of
from memlog.vocabulary import Space

SPACE = Space(*HASHING.space)


def graph(home: Path) -> tuple[str | None, dict[str, list[str]]]:
    """The packed file's name and each entry's neighbours, by id."""
    with store.opened(home / store.DB_NAME) as db:
        found = index_files.pointer(db, neighbours.KIND)
        loaded = neighbours.load(db, home)
    assert loaded is not None
    ids = [i.decode() for i in loaded.ids.tolist()]
    rows = zip(ids, loaded.index.tolist(), strict=True)
    lists = {i: [ids[n] for n in row if n >= 0] for i, row in rows}
    return (found[0] if found else None), lists


def brute_force(home: Path) -> dict[str, list[str]]:
    """The graph computed directly: quantised dot products, best first, ties by id."""
    with store.opened(home / store.DB_NAME) as db:
        ids, matrix = neighbours.quantised(db, SPACE)
    dots = (matrix.astype(np.int64) @ matrix.astype(np.int64).T).tolist()
    result = {}
    for n, entry_id in enumerate(ids):
        others = sorted((-dots[n][m], ids[m]) for m in range(len(ids)) if m != n)
        result[entry_id] = [other for _, other in others[: neighbours.K]]
    return result


def test_scale_keeps_dot_products_exact_in_float32() -> None:
    for dims in (384, 768, 1024, 1536, 3072):
        s = neighbours.scale(dims)
        assert dims * s * s < 2**24 and s >= 1
    assert neighbours.scale(384) == 127


def test_incremental_updates_equal_a_full_replay(memlog_home: Path) -> None:
    log = EventLog(memlog_home)
    log.append([e for e in filler(14, "patterns")])
    catch_up(memlog_home, SPACE)
    _, lists = graph(memlog_home)
    assert lists == brute_force(memlog_home) and len(lists) == 14
    assert all(len(v) == neighbours.K for v in lists.values())

    added = entry("Parser error handling", "Parsers need error handling for every line.")
    victim = sorted(lists)[3]
    moved = sorted(lists)[5]
    log.append(added)  # a new entry with a vector
    catch_up(memlog_home, SPACE)
    log.append([Retired(entry_id=victim, reason="wrong")])  # one leaves
    catch_up(memlog_home, SPACE)
    log.append(
        [Reembedded(entry_id=moved, provider=SPACE.provider, model=SPACE.model,
                    dimensions=SPACE.dimensions, vector=vector_of("something else entirely"))]
    )  # fmt: skip
    catch_up(memlog_home, SPACE)
    name, lists = graph(memlog_home)
    assert victim not in lists and all(victim not in v for v in lists.values())
    assert lists == brute_force(memlog_home)

    rebuild(memlog_home, SPACE)
    assert graph(memlog_home) == (name, lists)  # the same bytes, so the same name


def test_a_small_graph_lists_everyone_else(memlog_home: Path) -> None:
    EventLog(memlog_home).append(filler(3, "heuristics"))
    catch_up(memlog_home, SPACE)
    _, lists = graph(memlog_home)
    assert all(len(v) == 2 and k not in v for k, v in lists.items())


def test_a_space_change_rebuilds_the_graph(memlog_home: Path) -> None:
    EventLog(memlog_home).append(filler(4, "patterns"))
    catch_up(memlog_home, SPACE)
    first, _ = graph(memlog_home)
    other = Space("local", "all-MiniLM-L6-v2", 384)  # no vectors there
    catch_up(memlog_home, other)
    with store.opened(memlog_home / store.DB_NAME) as db:
        assert index_files.pointer(db, neighbours.KIND) == (graph(memlog_home)[0], 0)
        assert store.get_meta(db, "neighbour_space") == neighbours.space_tag(other)
    assert graph(memlog_home)[0] != first
