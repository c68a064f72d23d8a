"""The lexical index's files, mapped and read without numpy (``lexicon`` writes them).

The base (``.lex``), after its header (magic, slots, terms t, postings p,
documents, total length):

    hashes   t × uint64, ascending (blake2b-64 of the term)
    starts   (t + 1) × uint64: term i's postings are [starts[i], starts[i+1])
    slots    p × uint32, ascending within a term
    counts   p × uint8: how often the term occurs in the entry (at most 255)
    lengths  slots × int32: each entry's number of terms (−1: not indexed)

The delta (``.lxd``), after its header (magic, documents and total length
now, dropped d, postings a, documents e):

    dropped  d × uint32: base slots no longer read from the base
    hashes   a × uint64, slots a × uint32, counts a × uint8: sorted by hash, then slot
    docs     e × uint32 slots ascending, then e × int32 their lengths
"""

from __future__ import annotations

import bisect
import math
import sqlite3
import struct
from collections.abc import Sequence
from typing import Any, NamedTuple

from memlog.home import Home
from memlog.projections.sqlite_view import index_files
from memlog.projections.terms import Unit, term_hash

BASE, DELTA = b"MLLEX002", b"MLLXD002"
BASE_HEAD = struct.Struct("<8sQQQQQ")
DELTA_HEAD = struct.Struct("<8sQQQQQ")
K1 = 1.2
B = 0.75


class Files(NamedTuple):
    """A base and perhaps a delta, mapped; the arrays as typed memoryviews."""

    slots: int
    documents: int
    mean_length: float
    hashes: memoryview[Any]
    starts: memoryview[Any]
    slots_of_postings: memoryview[Any]
    tf: memoryview[Any]
    lengths: memoryview[Any]
    dropped: memoryview[Any] | None = None
    delta_hashes: memoryview[Any] | None = None
    delta_slots: memoryview[Any] | None = None
    delta_tf: memoryview[Any] | None = None
    doc_slots: memoryview[Any] | None = None
    doc_lengths: memoryview[Any] | None = None


def load_files(db: sqlite3.Connection, folder: Home) -> Files | None:
    """The index this snapshot points at; None when there is none, it is unusable, or the
    machine is big-endian (the files are little-endian)."""
    base = index_files.pointer(db, "lex")
    raw = index_files.mapped(folder, base[0]) if base else None
    if raw is None or not index_files.little_endian() or len(raw) < BASE_HEAD.size:
        return None
    magic, slots, terms, postings, documents, total = BASE_HEAD.unpack(raw[: BASE_HEAD.size])
    parts = [("<u8", terms), ("<u8", terms + 1), ("<u4", postings), ("<u1", postings),
             ("<i4", slots)]  # fmt: skip
    arrays = index_files.arrays(raw, BASE_HEAD.size, parts) if magic == BASE else None
    if arrays is None:
        return None
    typed = [index_files.typed(data, dtype) for dtype, data in arrays]
    files = Files(slots, documents, _mean(documents, total), *typed)
    delta = index_files.pointer(db, "lxd")
    return _with_delta(files, folder, delta[0]) if delta else files


def _with_delta(files: Files, folder: Home, name: str) -> Files | None:
    raw = index_files.mapped(folder, name)
    if raw is None or len(raw) < DELTA_HEAD.size:
        return None
    magic, documents, total, dropped, postings, docs = DELTA_HEAD.unpack(raw[: DELTA_HEAD.size])
    parts = [("<u4", dropped), ("<u8", postings), ("<u4", postings), ("<u1", postings),
             ("<u4", docs), ("<i4", docs)]  # fmt: skip
    arrays = index_files.arrays(raw, DELTA_HEAD.size, parts) if magic == DELTA else None
    if arrays is None:
        return None
    typed = [index_files.typed(data, dtype) for dtype, data in arrays]
    return files._replace(documents=documents, mean_length=_mean(documents, total))._replace(
        dropped=typed[0], delta_hashes=typed[1], delta_slots=typed[2], delta_tf=typed[3],
        doc_slots=typed[4], doc_lengths=typed[5],
    )  # fmt: skip


def _mean(documents: int, total: int) -> float:
    return max(total / documents, 1e-9) if documents else 1.0


def scores(files: Files, units: Sequence[Unit], size: int) -> list[float]:
    """BM25 of every slot below ``size`` for a query's units (``terms.query_units``): a unit
    of several terms adds their weights in the slots that hold all of them
    (``lexicon.Lexicon.score``'s numbers, bit for bit)."""
    sums = [0.0] * max(size, files.slots)
    dropped = set(files.dropped.tolist()) if files.dropped is not None else set()
    for unit in units:
        add_unit(sums, unit.weight, [_weights(files, term, dropped) for term in unit.terms])
    return sums[:size]


def _weights(files: Files, term: str, dropped: set[int]) -> list[tuple[int, float]] | None:
    """The slots holding ``term`` (the base's, then the delta's) and its BM25 weight in
    each; None when none does."""
    found = _postings(files, term_hash(term), dropped)
    df = sum(len(p) for p in found)
    if not df:
        return None
    documents, mean = files.documents, files.mean_length
    idf = math.log1p((documents - df + 0.5) / (df + 0.5))
    weights = []
    for postings in found:
        for slot, tf, length in postings:
            norm = K1 * ((1.0 - B) + B * length / mean)
            weights.append((slot, idf * tf * (K1 + 1.0) / (tf + norm)))
    return weights


def add_unit(sums: list[float], weight: float, found: list[list[tuple[int, float]] | None]) -> None:
    """Add a query unit's weight times its terms' BM25 weights to ``sums``, in the slots
    that hold every one of its terms (term by term, the order ``lexicon`` adds in)."""
    if not found or any(p is None for p in found):
        return
    if len(found) == 1:
        for slot, value in found[0]:  # type: ignore[union-attr]
            sums[slot] += value if weight == 1.0 else weight * value
        return
    part: dict[int, float] = {}
    held: dict[int, int] = {}
    for postings in found:
        for slot, value in postings:  # type: ignore[union-attr]
            part[slot] = part.get(slot, 0.0) + value
            held[slot] = held.get(slot, 0) + 1
    for slot, total in part.items():
        if held[slot] == len(found):
            sums[slot] += weight * total


def document_frequency(files: Files, term: str) -> int:
    """How many indexed entries hold ``term`` (stemmed): its postings in the base but those
    of dropped slots (found by bisection among the term's), and its postings in the delta."""
    wanted, found = term_hash(term), 0
    at = bisect.bisect_left(files.hashes, wanted)
    if at < len(files.hashes) and files.hashes[at] == wanted:
        begin, end = files.starts[at], files.starts[at + 1]
        slots: Sequence[int] = files.slots_of_postings[begin:end]
        gone = files.dropped.tolist() if files.dropped is not None else []
        found = end - begin - sum(1 for slot in gone if _holds(slots, slot))
    if files.delta_hashes is not None:
        found += bisect.bisect_right(files.delta_hashes, wanted)
        found -= bisect.bisect_left(files.delta_hashes, wanted)
    return found


def _holds(ascending: Sequence[int], value: int) -> bool:
    at = bisect.bisect_left(ascending, value)
    return at < len(ascending) and ascending[at] == value


def _postings(files: Files, wanted: int, dropped: set[int]) -> list[list[tuple[int, float, float]]]:
    found = []
    at = bisect.bisect_left(files.hashes, wanted)
    if at < len(files.hashes) and files.hashes[at] == wanted:
        begin, end = files.starts[at], files.starts[at + 1]
        lengths = files.lengths
        found.append([
            (slot, float(tf), float(lengths[slot]))
            for slot, tf in zip(files.slots_of_postings[begin:end].tolist(),
                                files.tf[begin:end].tolist(), strict=True)
            if slot not in dropped
        ])  # fmt: skip
    if files.delta_hashes is not None:
        found.append(_delta_postings(files, wanted))
    return [p for p in found if p]


def _delta_postings(files: Files, wanted: int) -> list[tuple[int, float, float]]:
    assert files.delta_hashes is not None and files.delta_slots is not None
    assert files.delta_tf is not None and files.doc_slots is not None
    assert files.doc_lengths is not None
    begin = bisect.bisect_left(files.delta_hashes, wanted)
    end = bisect.bisect_right(files.delta_hashes, wanted)
    docs: Sequence[int] = files.doc_slots
    return [
        (slot, float(files.delta_tf[n]),
         float(files.doc_lengths[bisect.bisect_left(docs, slot)]))
        for n, slot in zip(range(begin, end), files.delta_slots[begin:end].tolist(), strict=True)
    ]  # fmt: skip
