"""The lexical index: BM25 over stemmed, identifier-split terms, packed and patched.

Each live entry's terms (``projections.terms`` over its name, description,
keywords, reasoning and metadata lines) are posted in two files:

* the **base**, ``index/<generation>.lex``, written whole by a rebuild or a
  compaction and never changed (``lexfiles``: term hashes ascending, each
  term's postings as slots ascending with the term's count, each slot's
  document length);
* the **delta**, ``index/<generation>.lxd``: what catch-ups changed since
  (the base slots no longer read from the base, and the postings and lengths
  of the entries whose text or liveness changed, new ones included), written
  whole by each catch-up that changes an indexed entry.  Past ``DELTA_LIMIT``
  postings it is folded into a new base.

Weights are not stored: BM25 depends on the number of documents and their
mean length, which every new entry changes.  A query is scored from the
counts, df being the postings found for the term in both files, with k1 1.2,
b 0.75 and idf ln(1 + (N − df + 0.5) / (df + 0.5)):

    idf · tf · (k1 + 1) / (tf + k1 · ((1 − b) + b · length / mean length))

in float64, term by term in the query's order, so a base with a delta and
the base a rebuild writes give the same scores, bit for bit, and so does
``plain.View.lexical_list`` without numpy.  The cost follows the query's
terms, never the number of entries that match.
"""

from __future__ import annotations

import math
import sqlite3
from array import array
from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

from memlog.home import Home
from memlog.projections.fold import Entry
from memlog.projections.sqlite_view import index_files, packed
from memlog.projections.sqlite_view.indexed import indexed_text
from memlog.projections.sqlite_view.lexfiles import (
    BASE,
    BASE_HEAD,
    DELTA,
    DELTA_HEAD,
    K1,
    Files,
    load_files,
)
from memlog.projections.sqlite_view.lexfiles import B as _B
from memlog.projections.terms import Unit, term_counts, term_hash

#: postings a delta may hold before it is folded into a new base
DELTA_LIMIT = 32768
_TF_MAX = 255

Floats = npt.NDArray[np.float64]
Doc = tuple[int, list[tuple[int, int]]]  # length, (hash, count) ascending


def document(entry: Entry) -> Doc | None:
    """An entry's postings (None: not indexed, it is not live)."""
    if not entry.live:
        return None
    counts = term_counts(indexed_text(entry))
    postings = sorted((term_hash(t), min(n, _TF_MAX)) for t, n in counts.items())
    return sum(n for _, n in postings), postings


# -- writing -------------------------------------------------------------------------------------


def _base_bytes(slots: int, hashes: np.ndarray, at: np.ndarray, tf: np.ndarray,
                lengths: np.ndarray) -> bytes:  # fmt: skip
    """The base file of the postings ``(hashes, at, tf)`` (any order) and ``lengths``."""
    order = np.lexsort((at, hashes))
    hashes, at, tf = hashes[order], at[order], tf[order]
    terms, starts = np.unique(hashes, return_index=True)
    indexed = lengths >= 0
    head = BASE_HEAD.pack(BASE, slots, len(terms), len(hashes), int(indexed.sum()),
                          int(lengths[indexed].sum()))  # fmt: skip
    parts = [
        terms.astype("<u8"), np.append(starts, len(hashes)).astype("<u8"), at.astype("<u4"),
        tf.astype("<u1"), lengths.astype("<i4"),
    ]  # fmt: skip
    return head + b"".join(np.ascontiguousarray(p).tobytes() for p in parts)


def build(db: sqlite3.Connection, folder: Home, ordinal: int, ordered: list[Entry]) -> None:
    """Index every entry (``ordered``: in slot order) in a new base; no delta."""
    lengths = np.full(len(ordered), -1, dtype=np.int64)
    hashes, at, tf = array("Q"), array("q"), array("q")  # 8 bytes a posting, not 36
    for slot, entry in enumerate(ordered):
        doc = document(entry)
        if doc is None:
            continue
        lengths[slot] = doc[0]
        hashes.extend(h for h, _ in doc[1])
        tf.extend(n for _, n in doc[1])
        at.extend([slot] * len(doc[1]))
    postings = (
        np.frombuffer(hashes, np.uint64),
        np.frombuffer(at, np.int64),
        np.frombuffer(tf, np.int64),
    )
    data = _base_bytes(len(ordered), *postings, lengths)
    _point_base(db, folder, ordinal, data, len(ordered))


def _point_base(db: sqlite3.Connection, folder: Home, ordinal: int, data: bytes,
                slots: int) -> None:  # fmt: skip
    name = packed.generation_name(ordinal, ".lex")
    index_files.point(db, "lex", packed.write(folder.index, name, data), slots)
    index_files.point(db, "lxd", None, 0)


class _Delta:
    """A delta being changed: base slots dropped, and the documents it holds."""

    def __init__(self, files: Files) -> None:
        self.files = files
        self.dropped = set(files.dropped.tolist()) if files.dropped is not None else set()
        self.docs: dict[int, Doc] = {}
        if files.doc_slots is not None and files.doc_lengths is not None:
            postings = self._postings()
            lengths = zip(files.doc_slots.tolist(), files.doc_lengths.tolist(), strict=True)
            for slot, length in lengths:
                self.docs[slot] = (length, postings.get(slot, []))

    def _postings(self) -> dict[int, list[tuple[int, int]]]:
        found: dict[int, list[tuple[int, int]]] = {}
        files = self.files
        columns = (files.delta_hashes, files.delta_slots, files.delta_tf)
        listed = [c.tolist() if c is not None else [] for c in columns]
        for h, slot, n in zip(*listed, strict=True):
            found.setdefault(slot, []).append((h, n))
        return {slot: sorted(p) for slot, p in found.items()}

    def change(self, slot: int, doc: Doc | None) -> None:
        if slot < self.files.slots and self.files.lengths[slot] >= 0:
            self.dropped.add(slot)
        self.docs.pop(slot, None)
        if doc is not None:
            self.docs[slot] = doc

    def size(self) -> int:
        return sum(len(d[1]) for d in self.docs.values())

    def lengths(self, slots: int) -> np.ndarray:
        """Every slot's document length as the base and this delta say (−1: none)."""
        lengths = np.full(slots, -1, dtype=np.int64)
        base = np.asarray(self.files.lengths, dtype=np.int64)
        lengths[: len(base)] = base
        if self.dropped:
            lengths[np.fromiter(self.dropped, dtype=np.int64)] = -1
        for slot, (length, _) in self.docs.items():
            lengths[slot] = length
        return lengths

    def delta_bytes(self, slots: int) -> bytes:
        lengths = self.lengths(slots)
        indexed = lengths >= 0
        rows = sorted((h, slot, n) for slot, (_, p) in self.docs.items() for h, n in p)
        docs = sorted(self.docs.items())
        head = DELTA_HEAD.pack(DELTA, int(indexed.sum()), int(lengths[indexed].sum()),
                               len(self.dropped), len(rows), len(docs))  # fmt: skip
        parts = [
            np.array(sorted(self.dropped), dtype="<u4"),
            np.array([r[0] for r in rows], dtype="<u8"),
            np.array([r[1] for r in rows], dtype="<u4"),
            np.array([r[2] for r in rows], dtype="<u1"),
            np.array([s for s, _ in docs], dtype="<u4"),
            np.array([d[0] for _, d in docs], dtype="<i4"),
        ]
        return head + b"".join(p.tobytes() for p in parts)

    def compacted(self, slots: int) -> bytes:
        """The base a rebuild would write for the same postings."""
        return _base_bytes(slots, *self.postings(), self.lengths(slots))

    def postings(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every posting the base and this delta hold: hashes, slots, counts (any order)."""
        files = self.files
        per_term = np.diff(np.asarray(files.starts, dtype=np.int64)).astype(np.int64)
        hashes = np.repeat(np.asarray(files.hashes, dtype=np.uint64), per_term)
        at = np.asarray(files.slots_of_postings, dtype=np.int64)
        tf = np.asarray(files.tf, dtype=np.int64)
        keep = ~np.isin(at, np.fromiter(self.dropped | set(self.docs), dtype=np.int64))
        rows = [(h, slot, n) for slot, (_, p) in self.docs.items() for h, n in p]
        more = np.array(rows, dtype=np.uint64).reshape(-1, 3)
        return (
            np.concatenate([hashes[keep], more[:, 0]]),
            np.concatenate([at[keep], more[:, 1].astype(np.int64)]),
            np.concatenate([tf[keep], more[:, 2].astype(np.int64)]),
        )


def patch(db: sqlite3.Connection, folder: Home, ordinal: int, slots: int,
          changed: Iterable[tuple[int, Doc | None]]) -> bool:  # fmt: skip
    """Record the new documents of ``changed`` slots (None: no longer indexed) in a new
    delta, or in a new base past ``DELTA_LIMIT``; False without a base to patch."""
    files = load_files(db, folder)
    if files is None:
        return False
    delta = _Delta(files)
    for slot, doc in changed:
        delta.change(slot, doc)
    count = max(slots, files.slots)
    if delta.size() > DELTA_LIMIT:
        _point_base(db, folder, ordinal, delta.compacted(count), count)
        return True
    name = packed.generation_name(ordinal, ".lxd")
    data = delta.delta_bytes(count)
    index_files.point(db, "lxd", packed.write(folder.index, name, data), count)
    base = index_files.pointer(db, "lex")
    assert base is not None
    index_files.point(db, "lex", base[0], count)
    return True


def reslot(db: sqlite3.Connection, folder: Home, ordinal: int, new_of_old: np.ndarray,
           slots: int) -> bool:  # fmt: skip
    """Move every slot ``s`` to ``new_of_old[s]`` among ``slots``: a new base of the same
    postings, no delta (the slots no old one moves to are not indexed); False without an
    index to move."""
    files = load_files(db, folder)
    if files is None or len(new_of_old) != max(files.slots, _count(db)):
        return False
    delta = _Delta(files)
    hashes, at, tf = delta.postings()
    lengths = np.full(slots, -1, dtype=np.int64)
    lengths[new_of_old] = delta.lengths(len(new_of_old))
    _point_base(db, folder, ordinal, _base_bytes(slots, hashes, new_of_old[at], tf, lengths), slots)
    return True


def _count(db: sqlite3.Connection) -> int:
    found = index_files.pointer(db, "lex")
    return found[1] if found else 0


def canonical(db: sqlite3.Connection, folder: Home) -> bytes | None:
    """The base a rebuild would write for what this snapshot's files hold (audits compare
    it); None without an index."""
    files = load_files(db, folder)
    if files is None:
        return None
    return _Delta(files).compacted(max(_count(db), files.slots))


# -- reading -------------------------------------------------------------------------------------


class Lexicon:
    """A mapped lexical index (a base and perhaps a delta), scored with numpy."""

    def __init__(self, files: Files) -> None:
        self.files = files
        self.hashes = np.frombuffer(files.hashes, dtype="<u8")
        self.starts = np.frombuffer(files.starts, dtype="<u8")
        self.at = np.frombuffer(files.slots_of_postings, dtype="<u4")
        self.tf = np.frombuffer(files.tf, dtype="<u1")
        self.lengths = np.frombuffer(files.lengths, dtype="<i4")
        self.dropped = _array(files.dropped, "<u4")
        self.delta_hashes = _array(files.delta_hashes, "<u8")
        self.delta_slots = _array(files.delta_slots, "<u4")
        self.delta_tf = _array(files.delta_tf, "<u1")
        self.doc_slots = _array(files.doc_slots, "<u4")
        self.doc_lengths = _array(files.doc_lengths, "<i4")

    def score(self, units: Sequence[Unit], size: int) -> Floats:
        """BM25 of every slot below ``size`` for a query's units (``terms.query_units``): a
        unit of several terms adds their weights in the slots that hold all of them (the
        sums ``lexfiles.scores`` adds, in the same order)."""
        scores = np.zeros(max(size, self.files.slots), dtype=np.float64)
        for unit in units:
            found = [self._weights(term) for term in unit.terms]
            if not found or any(not groups for groups in found):
                continue
            if len(found) == 1:
                for slots, weights in found[0]:  # slots unique within and across groups
                    scores[slots] += unit.weight * weights
                continue
            part = np.zeros(len(scores), dtype=np.float64)
            held = np.zeros(len(scores), dtype=np.int64)
            for groups in found:
                for slots, weights in groups:
                    part[slots] += weights
                    held[slots] += 1
            every = held == len(found)
            scores[every] += unit.weight * part[every]
        return scores[:size]

    def _weights(self, term: str) -> list[tuple[np.ndarray, Floats]]:
        """The slots holding ``term`` (the base's, then the delta's) and its BM25 weight in
        each; empty when none does."""
        found = self._postings(term_hash(term))
        df = sum(len(slots) for slots, _, _ in found)
        if not df:
            return []
        documents, mean = self.files.documents, self.files.mean_length
        idf = math.log1p((documents - df + 0.5) / (df + 0.5))
        weights = []
        for slots, tf, lengths in found:
            norm = K1 * ((1.0 - _B) + _B * lengths / mean)
            weights.append((slots, idf * tf * (K1 + 1.0) / (tf + norm)))
        return weights

    def _postings(self, wanted: int) -> list[tuple[np.ndarray, Floats, Floats]]:
        found = []
        at = int(np.searchsorted(self.hashes, wanted))
        if at < len(self.hashes) and int(self.hashes[at]) == wanted:
            begin, end = int(self.starts[at]), int(self.starts[at + 1])
            slots = self.at[begin:end].astype(np.int64)
            keep = ~np.isin(slots, self.dropped) if len(self.dropped) else slots >= 0
            slots = slots[keep]
            tf = self.tf[begin:end][keep].astype(np.float64)
            found.append((slots, tf, self.lengths[slots].astype(np.float64)))
        begin = int(np.searchsorted(self.delta_hashes, wanted, "left"))
        end = int(np.searchsorted(self.delta_hashes, wanted, "right"))
        if end > begin:
            slots = self.delta_slots[begin:end].astype(np.int64)
            lengths = self.doc_lengths[np.searchsorted(self.doc_slots, slots)]
            tf = self.delta_tf[begin:end].astype(np.float64)
            found.append((slots, tf, lengths.astype(np.float64)))
        return found


def _array(view: memoryview | None, dtype: str) -> np.ndarray:
    return np.frombuffer(view, dtype=dtype) if view is not None else np.zeros(0, dtype=dtype)


def load(db: sqlite3.Connection, folder: Home) -> Lexicon | None:
    """The index this snapshot points at, mapped; None when there is none or it is unusable."""
    files = load_files(db, folder)
    return Lexicon(files) if files is not None else None
