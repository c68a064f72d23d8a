"""Each entry's nearest neighbours, kept in ``index/<generation>.nbr`` and brought up to
date by every catch-up (the lists themselves: ``graph``).

A slot file (``packed``), one record per slot:

    lists   K × int32: the neighbours' slots, best first (−1: none)
    probes  PROBES × int32: the probed pivots' slots, most similar first (−1: none)

An entry that is no member has no list and no probe.  A catch-up rewrites
the records whose list or probes changed and appends those of new entries;
a rebuild writes them all, the same bytes.  When entries take other slots
(``reslot``), the records move with them and the slots they name follow.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from memlog.home import Home
from memlog.projections.sqlite_view import graph as g
from memlog.projections.sqlite_view import index_files, packed, ranks, vectors
from memlog.projections.sqlite_view.graph import Bools, Graph, Vectors
from memlog.projections.sqlite_view.plain import GRAPH
from memlog.vocabulary import Space

KIND, MAGIC = GRAPH
RECORD = np.dtype([("lists", "<i4", (g.K,)), ("probes", "<i4", (g.PROBES,))])
EXTRA = g.K << 32 | g.PROBES


def records(graph: Graph, slots: Iterable[int]) -> list[tuple[int, bytes]]:
    """The records of ``slots``, as the file holds them."""
    chosen = np.fromiter(slots, dtype=np.int64)
    table = np.zeros(len(chosen), dtype=RECORD)
    table["lists"], table["probes"] = graph.lists[chosen], graph.probes[chosen]
    return [(int(s), table[n].tobytes()) for n, s in enumerate(chosen.tolist())]


def _vectors(db: sqlite3.Connection, folder: Home, space: Space) -> Vectors | None:
    found = vectors.read(db, folder, space)
    if found is None:
        return None
    return Vectors.of(found.data, found.total, space.dimensions)


def _members(db: sqlite3.Connection, folder: Home) -> tuple[Bools, Bools] | None:
    """Which slots hold a member (live, with a vector), and which a pivot when a member."""
    found = ranks.read(db, folder)
    if found is None:
        return None
    flags = np.frombuffer(found.data, dtype=np.dtype(ranks.DTYPE), count=found.total)["flags"]
    both = ranks.LIVE | ranks.VECTOR
    return np.asarray((flags & both) == both), np.asarray((flags & ranks.PIVOT) != 0)


def build(db: sqlite3.Connection, folder: Home, ordinal: int, space: Space) -> None:
    """Write the whole graph of the members the committed-to-be rank and vector files
    name into a new file."""
    vecs, members = _vectors(db, folder, space), _members(db, folder)
    count = len(members[0]) if members is not None else 0
    graph = g.compute(vecs, *members) if vecs is not None and members is not None else None
    graph = graph or Graph.empty(count)
    table = np.zeros(count, dtype=RECORD)
    table["lists"], table["probes"] = graph.lists, graph.probes
    data = packed.header(MAGIC, RECORD.itemsize, EXTRA) + table.tobytes()
    name = packed.generation_name(ordinal, f".{KIND}")
    index_files.point(db, KIND, packed.write(folder.index, name, data), count)


def patch(
    db: sqlite3.Connection,
    folder: Home,
    space: Space,
    was_member: dict[int, bool],
    moved: Iterable[int],
) -> bool:
    """Bring the graph in line with the rank and vector files after a catch-up:
    ``was_member`` says, for the slots the events touched, whether each was a member
    before; ``moved``: members whose vector changed, or that took a slot out of their
    order among the others (``reslot``).  False when there is no graph to
    patch (the caller builds one)."""
    found = read(db, folder)
    vecs, members = _vectors(db, folder, space), _members(db, folder)
    if found is None or vecs is None or members is None:
        return False
    after, pivotal = members
    old = Graph(found.lists.copy(), found.probes.copy())
    before = after.copy()
    before[len(old.lists) :] = False
    for slot, member in was_member.items():
        before[slot] = member and slot < len(old.lists)
    changed = np.zeros(len(after), dtype=bool)
    changed[list(moved)] = True
    if not (before != after).any() and not changed.any():  # no member came, went or moved
        graph, differing = Graph.empty(len(after)), np.arange(len(old.lists), len(after))
    else:
        graph, differing = g.update(vecs, old, before, after, changed & before & after, pivotal)
    pointer = index_files.pointer(db, KIND)
    assert pointer is not None
    ok = packed.patch(folder.index, pointer[0], RECORD.itemsize, pointer[1],
                      records(graph, differing.tolist()))  # fmt: skip
    if ok:
        index_files.point(db, KIND, pointer[0], len(after))
    return ok


def lists(db: sqlite3.Connection, folder: Home) -> npt.NDArray[np.int32] | None:
    """Every slot's neighbour list in this snapshot, mapped (a ranking needs no probes);
    None as ``read``."""
    found = index_files.slots(db, folder, KIND, MAGIC)
    if found is None or found.extra != EXTRA or found.record != RECORD.itemsize:
        return None
    table: npt.NDArray[np.int32] = np.frombuffer(found.data, dtype=RECORD, count=found.total)[
        "lists"
    ]
    return table


def read(db: sqlite3.Connection, folder: Home) -> Graph | None:
    """The graph this snapshot points at, mapped; None when there is none or it is unusable."""
    found = index_files.slots(db, folder, KIND, MAGIC)
    if found is None or found.extra != EXTRA or found.record != RECORD.itemsize:
        return None
    table = np.frombuffer(found.data, dtype=RECORD, count=found.total)
    return Graph(table["lists"], table["probes"])
