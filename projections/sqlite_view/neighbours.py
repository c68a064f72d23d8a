"""Each entry's nearest neighbours, kept in ``index/<generation>.nbr`` and brought up to
date by every catch-up (the lists themselves: ``graph``).

A slot file (``packed``), one record per slot:

    lists   K × int32: the neighbours' slots, best first (−1: none)
    probes  PROBES × uint16: the probed pivots' slots / ``STRIDE``, most similar first
            (65535: none)

An entry that is no member has no list and no probe.  A catch-up rewrites
the records whose list or probes changed and appends those of new entries;
a rebuild writes them all, the same bytes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import numpy.typing as npt

from memlog.projections.sqlite_view import graph as g
from memlog.projections.sqlite_view import index_files, packed, ranks, vectors
from memlog.projections.sqlite_view.graph import Bools, Graph, Vectors
from memlog.projections.sqlite_view.plain import GRAPH
from memlog.vocabulary import Space

KIND, MAGIC = GRAPH
_NO_PROBE = 0xFFFF
RECORD = np.dtype([("lists", "<i4", (g.K,)), ("probes", "<u2", (g.PROBES,))])
_EXTRA = g.K << 32 | g.PROBES


def records(graph: Graph, slots: Iterable[int]) -> list[tuple[int, bytes]]:
    """The records of ``slots``, as the file holds them."""
    chosen = np.fromiter(slots, dtype=np.int64)
    table = np.zeros(len(chosen), dtype=RECORD)
    table["lists"] = graph.lists[chosen]
    probes = graph.probes[chosen]
    table["probes"] = np.where(probes >= 0, probes // g.STRIDE, _NO_PROBE)
    return [(int(s), table[n].tobytes()) for n, s in enumerate(chosen.tolist())]


def _vectors(db: sqlite3.Connection, folder: Path, space: Space) -> Vectors | None:
    found = vectors.read(db, folder, space)
    if found is None:
        return None
    return Vectors.of(found.data, found.total, space.dimensions)


def _members(db: sqlite3.Connection, folder: Path) -> Bools | None:
    found = ranks.read(db, folder)
    if found is None:
        return None
    flags = np.frombuffer(found.data, dtype=np.dtype(ranks.DTYPE), count=found.total)["flags"]
    both = ranks.LIVE | ranks.VECTOR
    return np.asarray((flags & both) == both)


def build(db: sqlite3.Connection, folder: Path, ordinal: int, space: Space) -> None:
    """Write the whole graph of the members the committed-to-be rank and vector files
    name into a new file."""
    vecs, members = _vectors(db, folder, space), _members(db, folder)
    count = len(members) if members is not None else 0
    graph = g.compute(vecs, members) if vecs is not None and members is not None else None
    graph = graph or Graph.empty(count)
    table = np.zeros(count, dtype=RECORD)
    table["lists"] = graph.lists
    table["probes"] = np.where(graph.probes >= 0, graph.probes // g.STRIDE, _NO_PROBE)
    data = packed.header(MAGIC, RECORD.itemsize, _EXTRA) + table.tobytes()
    name = packed.generation_name(ordinal, f".{KIND}")
    index_files.point(db, KIND, packed.write(folder / index_files.INDEX_DIR, name, data), count)


def patch(
    db: sqlite3.Connection,
    folder: Path,
    space: Space,
    was_member: dict[int, bool],
    moved: Iterable[int],
) -> bool:
    """Bring the graph in line with the rank and vector files after a catch-up:
    ``was_member`` says, for the slots the events touched, whether each was a member
    before; ``moved``: members whose vector changed.  False when there is no graph to
    patch (the caller builds one)."""
    found = read(db, folder)
    vecs, after = _vectors(db, folder, space), _members(db, folder)
    if found is None or vecs is None or after is None:
        return False
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
        graph, differing = g.update(vecs, old, before, after, changed & before & after)
    pointer = index_files.pointer(db, KIND)
    assert pointer is not None
    ok = packed.patch(folder / index_files.INDEX_DIR, pointer[0], RECORD.itemsize, pointer[1],
                      records(graph, differing.tolist()))  # fmt: skip
    if ok:
        index_files.point(db, KIND, pointer[0], len(after))
    return ok


def lists(db: sqlite3.Connection, folder: Path) -> npt.NDArray[np.int32] | None:
    """Every slot's neighbour list in this snapshot, mapped (a ranking needs no probes);
    None as ``read``."""
    found = index_files.slots(db, folder, KIND, MAGIC)
    if found is None or found.extra != _EXTRA or found.record != RECORD.itemsize:
        return None
    table: npt.NDArray[np.int32] = np.frombuffer(found.data, dtype=RECORD, count=found.total)[
        "lists"
    ]
    return table


def read(db: sqlite3.Connection, folder: Path) -> Graph | None:
    """The graph this snapshot points at, mapped; None when there is none or it is unusable."""
    found = index_files.slots(db, folder, KIND, MAGIC)
    if found is None or found.extra != _EXTRA or found.record != RECORD.itemsize:
        return None
    table = np.frombuffer(found.data, dtype=RECORD, count=found.total)
    probes = table["probes"].astype(np.int32)
    return Graph(table["lists"], np.where(probes != _NO_PROBE, probes * g.STRIDE, -1))
