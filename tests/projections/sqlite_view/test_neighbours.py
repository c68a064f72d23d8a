"""Neighbour lists: exact among few, searched by cells among many, kept up to date event by
event, and always equal to the graph a rebuild makes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memlog.eventlog.events import Reembedded, Retired, content_hash
from memlog.eventlog.log import EventLog
from memlog.eventlog.vectors import quantise
from memlog.home import Home
from memlog.projections.runner import catch_up, rebuild
from memlog.projections.sqlite_view import graph as graph_module
from memlog.projections.sqlite_view import index_files, neighbours, ranks, store
from memlog.projections.sqlite_view.reading import load_matrix
from memlog.tests.retrieval.helpers import HASHING, entry, filler, vector_of
from memlog.vocabulary import Space

SPACE = Space(*HASHING.space)


def graph(home: Path) -> tuple[tuple[str, int] | None, dict[str, list[str]]]:
    """The packed file's pointer and each member's neighbours, by id."""
    with store.opened(home / "memory.db") as db:
        found = index_files.pointer(db, neighbours.KIND)
        loaded = neighbours.read(db, Home(home))
        records = ranks.read(db, Home(home))
    assert loaded is not None and records is not None
    ids = [r[0].decode() for r in ranks.RECORD.iter_unpack(records.data)]
    lists = {
        ids[slot]: [ids[n] for n in row if n >= 0]
        for slot, row in enumerate(loaded.lists.tolist())
        if loaded.probes[slot, 0] >= 0 or any(n >= 0 for n in row)
    }
    return found, lists


def brute_force(home: Path) -> dict[str, list[str]]:
    """Every member's K best others by the exact q8 key, ties to the lower slot."""
    with store.opened(home / "memory.db") as db:
        loaded = neighbours._vectors(db, Home(home), SPACE)
        members = neighbours._members(db, Home(home))
        records = ranks.read(db, Home(home))
    assert loaded is not None and members is not None and records is not None
    ids = [r[0].decode() for r in ranks.RECORD.iter_unpack(records.data)]
    slots = np.flatnonzero(members)
    levels = loaded.levels[slots].astype(np.int64)
    dots = levels @ levels.T
    result = {}
    for n, slot in enumerate(slots.tolist()):
        keys = sorted((-(dots[n, m] * loaded.scales[other]), other)
                      for m, other in enumerate(slots.tolist()) if other != slot)  # fmt: skip
        result[ids[slot]] = [ids[other] for _, other in keys[: graph_module.K]]
    return result


def test_among_few_every_list_is_exact(memlog_home: Path) -> None:
    log = EventLog(memlog_home)
    log.append(filler(14, "patterns"))
    catch_up(memlog_home, SPACE)
    _, lists = graph(memlog_home)
    assert lists == brute_force(memlog_home) and len(lists) == 14
    assert all(len(v) == graph_module.K for v in lists.values())


def test_incremental_updates_equal_a_rebuild(
    memlog_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ranks, "PIVOT_EVERY", 2)  # cells from about 18 members on
    log = EventLog(memlog_home)
    log.append(filler(30, "patterns"))
    catch_up(memlog_home, SPACE)
    _, lists = graph(memlog_home)
    added = entry("Parser error handling", "Parsers need error handling for every line.")
    victim, moved, pivot = sorted(lists)[3], sorted(lists)[5], next(iter(lists))
    for events in (
        added,  # a new entry with a vector
        [Retired(entry_id=victim, reason="wrong")],  # one leaves
        [Retired(entry_id=pivot, reason="wrong")],  # a pivot leaves (slot 0)
        [Reembedded(entry_id=moved, provider=SPACE.provider, model=SPACE.model,
                    dimensions=SPACE.dimensions, vector=vector_of("something else"))],
        filler(5, "heuristics", topic="caching"),  # more, some of them pivots
    ):  # fmt: skip
        log.append(events)
        assert not catch_up(memlog_home, SPACE).rebuilt
    pointer, lists = graph(memlog_home)
    assert victim not in lists and all(victim not in v for v in lists.values())
    assert pivot not in lists and added[0].entry_id in lists
    rebuild(Home(memlog_home), SPACE)
    rebuilt_pointer, rebuilt = graph(memlog_home)
    assert rebuilt == lists and rebuilt_pointer is not None and pointer is not None
    assert rebuilt_pointer[1] == pointer[1]


class Members:
    """Slots changing at random: vectors, membership, pivots; an update's inputs."""

    def __init__(self, rng: np.random.Generator, every: int) -> None:
        self.rng, self.every, self.dims = rng, every, 12
        self.data: list[bytes] = []
        self.member: list[bool] = []
        self.pivotal: list[bool] = []
        self.graph = graph_module.Graph.empty(0)
        self.begin()

    def begin(self) -> None:
        """Start a step: what the graph holds is what the slots hold now."""
        self.was = np.array(self.member, dtype=bool)
        self.moved = np.zeros(len(self.data), dtype=bool)

    def vector(self) -> bytes:
        vector = self.rng.standard_normal(self.dims)
        return quantise(np.round(vector) if self.rng.random() < 0.3 else vector)  # ties

    def insert(self, at: int, data: bytes, member: bool, pivot: bool) -> None:
        """A slot at ``at``, the later ones one further (as a late new entry makes)."""
        count = len(self.data)
        self.reslot(np.arange(count) + (np.arange(count) >= at), count + 1)
        self.data.insert(at, data)
        self.member.insert(at, member)
        self.pivotal.insert(at, pivot)

    def move(self, old: int, new: int) -> None:
        """Slot ``old`` to ``new``, the ones between one step its way (an entry found to be
        created earlier or later than the others)."""
        order = list(range(len(self.data)))
        order.insert(new, order.pop(old))
        new_of_old = np.argsort(np.array(order))
        self.reslot(new_of_old, len(order))
        for values in (self.data, self.member, self.pivotal):
            values.insert(new, values.pop(old))  # type: ignore[attr-defined]
        self.moved[new] = True

    def reslot(self, new_of_old: np.ndarray, count: int) -> None:
        self.graph = graph_module.reslot(self.graph, new_of_old, count)
        was, moved = np.zeros(count, dtype=bool), np.zeros(count, dtype=bool)
        was[new_of_old], moved[new_of_old] = self.was, self.moved
        self.was, self.moved = was, moved

    def change(self) -> None:
        roll, count = self.rng.random(), len(self.data)
        if roll < 0.4 or not count:
            self.insert(count, self.vector(), self.rng.random() < 0.9, self.pivot())
        elif roll < 0.5:
            at = int(self.rng.integers(0, count + 1))
            self.insert(at, self.vector(), self.rng.random() < 0.9, self.pivot())
        elif roll < 0.6:
            self.move(int(self.rng.integers(0, count)), int(self.rng.integers(0, count)))
        elif roll < 0.8:
            at = int(self.rng.integers(0, count))
            self.member[at] = not self.member[at]
        else:
            at = int(self.rng.integers(0, count))
            self.data[at] = self.vector()
            self.moved[at] = True

    def pivot(self) -> bool:
        return bool(self.rng.random() < 1 / self.every)


@pytest.mark.parametrize("seed", range(8))
def test_any_sequence_of_changes_ends_in_the_graph_of_the_vectors(seed: int) -> None:
    """Members come, go, move and take other slots at random (ties included); every update
    equals the graph computed from zero, and names every record it changed."""
    slots = Members(np.random.default_rng(seed), 3 + seed % 3)
    for _ in range(120):
        slots.begin()
        for _ in range(int(slots.rng.integers(1, 4))):
            slots.change()
        after, pivotal = np.array(slots.member, dtype=bool), np.array(slots.pivotal, dtype=bool)
        vecs = graph_module.Vectors.of(b"".join(slots.data), len(slots.data), slots.dims)
        updated, written = graph_module.update(
            vecs, slots.graph, slots.was, after, slots.moved & slots.was & after, pivotal
        )
        expected = graph_module.compute(vecs, after, pivotal)
        assert (updated.lists == expected.lists).all()
        assert (updated.probes == expected.probes).all()
        changed = (slots.graph.lists != expected.lists).any(axis=1)
        changed |= (slots.graph.probes != expected.probes).any(axis=1)
        assert set(np.flatnonzero(changed).tolist()) <= set(written.tolist())
        slots.graph = updated


def test_cells_find_most_of_the_true_neighbours() -> None:
    """Among 3,000 clustered vectors (47 pivots, 8 probed), the lists hold most of the
    exact ones: the approximation the graph makes past a few hundred members."""
    rng = np.random.default_rng(7)
    centres = rng.standard_normal((40, 64))
    matrix = centres[rng.integers(0, 40, 3000)] + 0.9 * rng.standard_normal((3000, 64))
    data = b"".join(quantise(row) for row in matrix)
    vecs = graph_module.Vectors.of(data, 3000, 64)
    members = np.ones(3000, dtype=bool)
    approximate = graph_module.compute(vecs, members, np.arange(3000) % 64 == 0)
    exact = graph_module._among(vecs, np.arange(3000), np.arange(3000), None)
    pairs = zip(approximate.lists.tolist(), exact.tolist(), strict=True)
    found = np.mean([len(set(a) & set(e)) / graph_module.K for a, e in pairs])
    assert found >= 0.9


def test_a_small_graph_lists_everyone_else(memlog_home: Path) -> None:
    EventLog(memlog_home).append(filler(3, "heuristics"))
    catch_up(memlog_home, SPACE)
    _, lists = graph(memlog_home)
    assert len(lists) == 3 and all(len(v) == 2 and k not in v for k, v in lists.items())


def test_a_space_change_rebuilds_the_graph_once_that_space_has_vectors(
    memlog_home: Path,
) -> None:
    log = EventLog(memlog_home)
    log.append(filler(4, "patterns"))
    catch_up(memlog_home, SPACE)
    other = Space("local", "all-MiniLM-L6-v2", 384)
    # a process configured for another space, with no vector of it yet, keeps the view
    # in its own (else every such process would rebuild it, and the next one back)
    assert not catch_up(memlog_home, other).rebuilt
    assert len(graph(memlog_home)[1]) == 4
    with store.opened(memlog_home / "memory.db") as db:
        assert store.space_of(db) == SPACE
    log.append(entry("Other space", "A vector in the other space.", space=tuple(other)))
    assert not catch_up(memlog_home, other).rebuilt  # the vector comes in as another space's
    assert catch_up(memlog_home, other).rebuilt  # now there is something to rank with there
    with store.opened(memlog_home / "memory.db") as db:
        assert store.space_of(db) == other
        assert load_matrix(db, Home(memlog_home), other).ids == [
            content_hash("A vector in the other space.")
        ]
        assert len(load_matrix(db, Home(memlog_home), SPACE).ids) == 4  # the table of other spaces
    assert graph(memlog_home)[1] == {}  # one member: no neighbours
