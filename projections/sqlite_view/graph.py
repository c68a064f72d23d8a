"""The neighbour graph, computed: each member's nearest others by cosine, and how a change
of members or vectors changes the lists (``neighbours`` keeps it in its packed file).

The graph holds the live entries with a vector in the space in force (the
*members*); each keeps its ``K`` best others, best first, ties to the lower
slot.  Similarities are exact: the ``q8`` vectors' integer dot products
(exact in float32 up to 1,040 dimensions, in float64 beyond) times the
other's scale, in float64, so any blocking of the work gives the same lists.

Comparing every member with every other costs N²: 100k entries would take
minutes.  So past a few hundred members the graph looks only where
neighbours are: one member in 64, chosen by a hash of its id
(``ranks.is_pivot``), is a *pivot*; each member keeps its ``PROBES`` most
similar pivots (its probes, the first one its *cell*), and its neighbours
are the best members of the cells it probes: N·(N / 64 + PROBES · 64)
comparisons instead of N².  With ``PROBES`` pivots or fewer every member
sees every other (exact).  The lists are a function of the members'
vectors, ids and slot order alone, so a rebuild and any sequence of updates
give the same graph, and entries may take other slots in the same order
(``reslot``: an entry created before them arrived late) without changing
which members are pivots.  An update redoes only what changed: the lists of
new or changed members, of members whose probes changed (a pivot came or
went), and of members that lost a neighbour; other members whose cells
gained someone merge the newcomers into their lists.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

K = 10
PROBES = 8
#: float32 sums of int8 products are exact up to this many dimensions (127² · d < 2²⁴)
_EXACT_F32 = (2**24 - 1) // (127 * 127)
#: keys a step of work computes at most (bounds its memory: 8 bytes each)
_WORK = 1 << 22
#: pairs of (row, candidate) a step of work compares at most (bounds its memory)
_CELLS = 1 << 18
#: rows a step of a pass over every member takes
_BLOCK = 2048

Ints = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]
Keys = npt.NDArray[np.float64]


@dataclass
class Vectors:
    """The ``q8`` vectors of every slot: levels (slots × d int8) and scales (float64)."""

    levels: npt.NDArray[np.int8]
    scales: npt.NDArray[np.float64]

    @classmethod
    def of(cls, data: memoryview | bytes, count: int, dimensions: int) -> Vectors:
        rows = np.frombuffer(data, dtype=np.uint8, count=count * (dimensions + 4))
        rows = rows.reshape(count, dimensions + 4)
        scales = rows[:, :4].copy().view("<f4").reshape(count).astype(np.float64)
        return cls(rows[:, 4:].view(np.int8), scales)

    def floats(self, slots: Ints) -> npt.NDArray[np.floating[Any]]:
        """The levels of ``slots`` as floats whose products and sums stay exact."""
        if self.levels.shape[1] <= _EXACT_F32:
            return self.levels[slots].astype(np.float32)
        return self.levels[slots].astype(np.float64)

    def keys(
        self, rows: Ints, columns: Ints, floats: npt.NDArray[np.floating[Any]] | None = None
    ) -> Keys:
        """Similarity of each of ``rows`` with each of ``columns``: the exact integer dot
        product times the column's scale (the row's own scale ranks nothing); ``floats``:
        the columns' ``floats``, when the caller has them."""
        if not len(rows) or not len(columns):
            return np.zeros((len(rows), len(columns)), dtype=np.float64)
        other = self.floats(columns) if floats is None else floats
        dots = self.floats(rows) @ other.T
        keys: Keys = dots.astype(np.float64) * self.scales[columns][None, :]
        return keys


@dataclass
class Graph:
    """Every slot's neighbour list and probes (−1: none)."""

    lists: npt.NDArray[np.int32]
    probes: npt.NDArray[np.int32]

    @classmethod
    def empty(cls, count: int) -> Graph:
        return cls(np.full((count, K), -1, np.int32), np.full((count, PROBES), -1, np.int32))


def best(keys: Keys, columns: Ints, k: int) -> npt.NDArray[np.int32]:
    """For each row, the ``k`` columns of highest key (−inf: never), ties to the lower
    column slot (``columns`` ascending), as slots; −1 past the last one."""
    order = top(keys, k)
    if not len(columns):
        return np.full(order.shape, -1, dtype=np.int32)
    return np.where(order >= 0, columns[np.maximum(order, 0)], -1).astype(np.int32)


def top(keys: Keys, k: int) -> Ints:
    """``best`` as positions among the columns (−1 past the last one)."""
    out = np.full((keys.shape[0], k), -1, dtype=np.int64)
    width = min(k, keys.shape[1])
    if not width or not keys.shape[0]:
        return out
    if keys.shape[1] <= 4 * k:
        order = np.argsort(-keys, axis=1, kind="stable")[:, :width]
    else:
        order = _partitioned(keys, width)
    valid = np.take_along_axis(keys, order, axis=1) > -np.inf
    out[:, :width] = np.where(valid, order, -1)
    return out


def _partitioned(keys: Keys, width: int) -> Ints:
    """``top``'s order by partition: the ``width`` highest keys of each row, sorted; rows
    where a key ties with the last one taken are sorted whole (the lower slot wins)."""
    part = np.argpartition(-keys, width - 1, axis=1)[:, :width]
    taken = np.take_along_axis(keys, part, axis=1)
    order = np.take_along_axis(part, np.lexsort((part, -taken), axis=1), axis=1)
    last = taken.min(axis=1)
    tied = np.flatnonzero((keys >= last[:, None]).sum(axis=1) > width)
    if len(tied):
        order[tied] = np.argsort(-keys[tied], axis=1, kind="stable")[:, :width]
    return np.asarray(order, dtype=np.int64)


def pivots_of(members: Bools, pivotal: Bools) -> Ints:
    """The pivots: members whose id makes them one (``pivotal``, by slot)."""
    pivots: Ints = np.flatnonzero(members & pivotal)
    return pivots


def reslot(graph: Graph, new_of_old: Ints, count: int) -> Graph:
    """``graph`` with every slot ``s`` moved to ``new_of_old[s]`` (the lists and probes
    naming it too), among ``count`` slots; the slots no old one moves to have none."""
    moved = Graph.empty(count)
    lookup = np.append(new_of_old, -1).astype(np.int32)  # −1 names none: stays −1
    moved.lists[new_of_old] = lookup[graph.lists]
    moved.probes[new_of_old] = lookup[graph.probes]
    return moved


def probes_for(vecs: Vectors, rows: Ints, pivots: Ints) -> npt.NDArray[np.int32]:
    """The ``PROBES`` most similar pivots of each of ``rows``."""
    found = np.full((len(rows), PROBES), -1, dtype=np.int32)
    floats = vecs.floats(pivots)
    step = max(1, _WORK // max(len(pivots), 1))
    for start in range(0, len(rows), step):
        chunk = rows[start : start + step]
        keys = vecs.keys(chunk, pivots, floats)
        found[start : start + len(chunk)] = best(keys, pivots, PROBES)
    return found


def lists_for(vecs: Vectors, rows: Ints, members: Ints, cells: Ints | None,
              probes: npt.NDArray[np.int32] | None) -> npt.NDArray[np.int32]:  # fmt: skip
    """The neighbour lists of ``rows`` among ``members`` (ascending), each searching the
    cells of its probes (``cells``: each member's cell; None: every member): cell by cell,
    the best ``K`` of each cell for every row probing it, then the best of those."""
    if cells is None or probes is None:
        return _among(vecs, rows, members, None)
    found_keys = np.full((len(rows), PROBES * K), -np.inf, dtype=np.float64)
    found_slots = np.full((len(rows), PROBES * K), -1, dtype=np.int64)
    if len(rows) * 16 < len(members):  # a few rows: only the cells they probe
        wanted = np.unique(probes[probes >= 0]).astype(np.int64)
        size = max(int(cells.max(initial=0)), int(wanted.max(initial=0))) + 1
        near = _mask(wanted, size)[cells]
        members, cells = members[near], cells[near]
    by_cell = _grouped(cells)
    probing = _grouped(probes.ravel().astype(np.int64))
    for cell in probing.keys & by_cell.keys:
        inside = np.sort(members[by_cell.members(cell)])
        at = probing.members(cell)
        which, place = at // PROBES, at % PROBES  # the rows probing it, and where
        keys = _keys_without_self(vecs, rows[which], inside)
        order = top(keys, K)
        columns = place[:, None] * K + np.arange(K)[None, :]
        found_slots[which[:, None], columns] = np.where(order >= 0, inside[order], -1)
        found_keys[which[:, None], columns] = np.where(
            order >= 0, np.take_along_axis(keys, np.maximum(order, 0), axis=1), -np.inf
        )
    order2 = np.lexsort((found_slots, -found_keys), axis=1)[:, :K]
    chosen = np.take_along_axis(found_slots, order2, axis=1)
    kept = np.take_along_axis(found_keys, order2, axis=1) > -np.inf
    return np.where(kept, chosen, -1).astype(np.int32)


def _mask(slots: Ints, size: int) -> Bools:
    """True at ``slots`` among ``size`` places, and one False more at the end: indexed by a
    table whose −1 means none, it answers False for those."""
    mask = np.zeros(size + 1, dtype=bool)
    mask[slots] = True
    return mask


class _grouped:
    """The positions of ``values`` by value (one sort, then a range per value)."""

    def __init__(self, values: Ints) -> None:
        self.order = np.argsort(values, kind="stable")
        ordered = values[self.order]
        found, starts = np.unique(ordered, return_index=True)
        ends = np.append(starts[1:], len(ordered)).tolist() if len(starts) else []
        bounds = zip(found.tolist(), starts.tolist(), ends, strict=True)
        self.ranges = {v: (a, b) for v, a, b in bounds if v >= 0}
        self.keys = set(self.ranges)

    def members(self, value: int) -> Ints:
        start, end = self.ranges[value]
        found: Ints = self.order[start:end]
        return found


def _among(vecs: Vectors, rows: Ints, members: Ints, _: None) -> npt.NDArray[np.int32]:
    """Lists of ``rows`` among every member, blocked so a block stays small."""
    found = np.full((len(rows), K), -1, dtype=np.int32)
    step = max(1, _CELLS // max(len(members), 1))
    for start in range(0, len(rows), step):
        chunk = rows[start : start + step]
        found[start : start + len(chunk)] = best(
            _keys_without_self(vecs, chunk, members), members, K
        )
    return found


def _keys_without_self(vecs: Vectors, rows: Ints, columns: Ints) -> Keys:
    keys = vecs.keys(rows, columns)
    keys[columns[None, :] == rows[:, None]] = -np.inf
    return keys


def _keys_of(vecs: Vectors, rows: Ints, chosen: npt.NDArray[np.int32]) -> Keys:
    """The keys of each row's ``chosen`` slots (−inf where −1), as ``keys`` computes them."""
    valid = chosen >= 0
    safe = np.where(valid, chosen, 0).astype(np.int64)
    dots = np.einsum("rd,rkd->rk", vecs.floats(rows), vecs.floats(safe))
    return np.where(valid, dots.astype(np.float64) * vecs.scales[safe], -np.inf)


def compute(vecs: Vectors, member_mask: Bools, pivotal: Bools) -> Graph:
    """The whole graph from zero (``pivotal``: the slots whose entry is a pivot when a
    member)."""
    graph = Graph.empty(len(member_mask))
    members = np.flatnonzero(member_mask)
    pivots = pivots_of(member_mask, pivotal)
    graph.probes[members] = probes_for(vecs, members, pivots)
    exact = len(pivots) <= PROBES
    cells = None if exact else graph.probes[members, 0].astype(np.int64)
    graph.lists[members] = lists_for(vecs, members, members, cells, graph.probes[members])
    return graph


def update(vecs: Vectors, old: Graph, before: Bools, after: Bools, moved: Bools,
           pivotal: Bools) -> tuple[Graph, Ints]:  # fmt: skip
    """The graph after members came, went or changed (``moved``: the vector of a member
    before and after changed, or its place among the others), from ``old``; and the slots
    whose records changed."""
    count = len(after)
    graph = Graph.empty(count)
    graph.lists[: len(old.lists)], graph.probes[: len(old.probes)] = old.lists, old.probes
    old_pivots, pivots = pivots_of(before, pivotal), pivots_of(after, pivotal)
    if len(old_pivots) <= PROBES or len(pivots) <= PROBES:
        fresh = compute(vecs, after, pivotal)
        return fresh, _differing(old, fresh, np.arange(count))
    removed, added = (before & ~after) | moved, (after & ~before) | moved
    cells_before = np.where(before, graph.probes[:, 0], -1).astype(np.int64)
    reprobe = added | _probes_to_redo(vecs, graph, after & ~added, old_pivots, pivots,
                                      moved & pivotal)  # fmt: skip
    rows = np.flatnonzero(reprobe)
    new_probes = probes_for(vecs, rows, pivots)
    probes_changed = np.zeros(count, dtype=bool)
    probes_changed[rows] = ~_same_sets(graph.probes[rows], new_probes)
    graph.probes[rows] = new_probes
    dropped = np.flatnonzero(removed & ~after)
    graph.lists[dropped], graph.probes[dropped] = -1, -1
    cells = np.where(after, graph.probes[:, 0], -1).astype(np.int64)
    shifted = after & before & (cells != cells_before)
    lost, gained = removed | shifted, added | shifted
    redo = after & (added | probes_changed | _holding(graph.lists, lost))
    members = np.flatnonzero(after)
    redone = np.flatnonzero(redo)
    graph.lists[redone] = lists_for(vecs, redone, members, cells[members], graph.probes[redone])
    merged = _merge(vecs, graph, after & ~redo, np.flatnonzero(gained & after), cells)
    touched = np.unique(np.concatenate([rows, dropped, redone, merged]))
    return graph, _differing(Graph(old.lists, old.probes), graph, touched)


def _probes_to_redo(vecs: Vectors, graph: Graph, kept: Bools, old_pivots: Ints, pivots: Ints,
                    moved_pivots: Bools) -> Bools:  # fmt: skip
    """Members whose probes may change: a probed pivot went (or moved), or a new pivot is
    more similar than their last probe."""
    gone = np.union1d(np.setdiff1d(old_pivots, pivots), np.flatnonzero(moved_pivots))
    redo = np.zeros(len(kept), dtype=bool)
    if len(gone):
        redo = kept & _mask(gone, len(kept))[graph.probes].any(axis=1)
    came = np.union1d(np.setdiff1d(pivots, old_pivots), gone[np.isin(gone, pivots)])
    if not len(came):
        return redo
    rows = np.flatnonzero(kept & ~redo)
    for start in range(0, len(rows), _BLOCK):
        chunk = rows[start : start + _BLOCK]
        last = graph.probes[chunk, PROBES - 1].astype(np.int64)
        last_key = (vecs.floats(chunk) * vecs.floats(last)).sum(axis=1).astype(np.float64)
        last_key *= vecs.scales[last]
        keys = vecs.keys(chunk, came)
        beats = (keys > last_key[:, None]) | ((keys == last_key[:, None]) & (came < last[:, None]))
        redo[chunk] = beats.any(axis=1)
    return redo


def _same_sets(one: npt.NDArray[np.int32], other: npt.NDArray[np.int32]) -> Bools:
    return np.asarray((np.sort(one, axis=1) == np.sort(other, axis=1)).all(axis=1))


def _holding(lists: npt.NDArray[np.int32], lost: Bools) -> Bools:
    """Members whose list holds one of the ``lost`` slots."""
    gone = np.flatnonzero(lost)
    if not len(gone):
        return np.zeros(len(lists), dtype=bool)
    return np.asarray(_mask(gone, len(lists))[lists].any(axis=1))


def _merge(vecs: Vectors, graph: Graph, keep: Bools, gained: Ints, cells: Ints) -> Ints:
    """Merge the ``gained`` members into the lists of the ``keep`` members probing
    their cells; the rows merged into (those where one of them enters the list)."""
    if not len(gained):
        return np.zeros(0, dtype=np.int64)
    gained_cells = cells[gained]
    probing = _mask(np.unique(gained_cells), len(keep))[graph.probes].any(axis=1)
    rows = _entering(vecs, graph, np.flatnonzero(keep & probing), gained, gained_cells)
    step = max(1, _CELLS // max(len(gained), 1))
    for start in range(0, len(rows), step):
        chunk = rows[start : start + step]
        lists = graph.lists[chunk].astype(np.int64)
        safe = np.where(lists >= 0, lists, 0)
        list_keys = _keys_of(vecs, chunk, graph.lists[chunk])
        new_keys = _newcomer_keys(vecs, graph, chunk, gained, gained_cells)
        pool_keys = np.concatenate([list_keys, new_keys], axis=1)
        pool = np.concatenate([safe, np.broadcast_to(gained, new_keys.shape)], axis=1)
        order = np.lexsort((pool, -pool_keys), axis=1)[:, :K]
        chosen = np.take_along_axis(pool, order, axis=1)
        kept = np.take_along_axis(pool_keys, order, axis=1) > -np.inf
        graph.lists[chunk] = np.where(kept, chosen, -1).astype(np.int32)
    return rows


def _newcomer_keys(
    vecs: Vectors, graph: Graph, rows: Ints, gained: Ints, gained_cells: Ints
) -> Keys:
    """Each row's key of each newcomer it may take: one in a cell it probes, not itself and
    not already in its list (−inf otherwise)."""
    keys = vecs.keys(rows, gained)
    probed = (gained_cells[None, :, None] == graph.probes[rows][:, None, :]).any(axis=2)
    held = (gained[None, :, None] == graph.lists[rows][:, None, :]).any(axis=2)
    keys[~probed | held | (gained[None, :] == rows[:, None])] = -np.inf
    return keys


def _entering(vecs: Vectors, graph: Graph, rows: Ints, gained: Ints, gained_cells: Ints) -> Ints:
    """The ``rows`` into whose lists a newcomer enters: a list not full, or a newcomer
    ahead of its last member (a higher key, or the same and a lower slot)."""
    entering: list[Ints] = []
    step = max(1, _CELLS // max(len(gained), 1))
    for start in range(0, len(rows), step):
        chunk = rows[start : start + step]
        last = graph.lists[chunk, K - 1].astype(np.int64)
        full = last >= 0
        safe = np.where(full, last, 0)
        dots = (vecs.floats(chunk) * vecs.floats(safe)).sum(axis=1).astype(np.float64)
        last_keys = np.where(full, dots * vecs.scales[safe], -np.inf)[:, None]
        keys = _newcomer_keys(vecs, graph, chunk, gained, gained_cells)
        ahead = (keys > last_keys) | ((keys == last_keys) & (gained[None, :] < safe[:, None]))
        entering.append(chunk[~full | ahead.any(axis=1)])
    return np.concatenate(entering) if entering else np.zeros(0, dtype=np.int64)


def _differing(old: Graph, new: Graph, touched: Ints) -> Ints:
    """Which of the ``touched`` rows differ from ``old``, and every row it did not have."""
    size = len(old.lists)
    inside = touched[touched < size]
    same = (old.lists[inside] == new.lists[inside]).all(axis=1)
    same &= (old.probes[inside] == new.probes[inside]).all(axis=1)
    return np.concatenate([inside[~same], np.arange(size, len(new.lists))])
