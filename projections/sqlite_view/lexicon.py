"""The lexical index: BM25 over stemmed, identifier-split terms, packed for numpy.

Each live entry's terms (``projections.terms`` over its name, description,
keywords, reasoning and metadata lines) are kept in ``lexical_terms`` as
sorted 64-bit term hashes with their counts; only entries an event touched
are tokenised again.  From those rows the packed file
``index/<sha256>.lex`` is built whenever an indexed entry changed:

    header  b"MLLEX001", documents n, terms t, postings p
    ids     n × 16 ASCII bytes, in id order
    hashes  t × uint64, ascending (blake2b-64 of the term)
    starts  (t + 1) × uint64: term i's postings are [starts[i], starts[i+1])
    docs    p × uint32, ascending within a term
    weights p × float32: the BM25 weight of the term in the document,
            idf · tf (k1 + 1) / (tf + k1 (1 − b + b · len / avglen)), k1 1.2, b 0.75,
            idf ln(1 + (n − df + 0.5) / (df + 0.5))

A query is scored by looking its term hashes up with a binary search and
adding the postings of those terms only, so the cost follows the query's
terms, never the number of entries that match; an identifier's terms
(``terms.query_units``) count in the entries that hold all of them.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from memlog.projections.fold import Entry
from memlog.projections.sqlite_view import index_files
from memlog.projections.sqlite_view.indexes import indexed_text
from memlog.projections.sqlite_view.plain import LEXICON, lexicon_parts
from memlog.projections.terms import Unit, term_counts, term_hash

KIND, MAGIC = LEXICON
K1 = 1.2
B = 0.75
_TERM = np.dtype([("hash", "<u8"), ("count", "<f4")])

Floats = npt.NDArray[np.float64]


def term_row(counts: Counter[str]) -> bytes:
    """Term hashes ascending with their counts, as stored in ``lexical_terms``."""
    row = np.array(sorted((term_hash(t), n) for t, n in counts.items()), dtype=_TERM)
    return row.tobytes()


def write_terms(db: sqlite3.Connection, entries: Iterable[Entry]) -> bool:
    """Keep ``lexical_terms`` in step with ``entries``; whether any row changed."""
    batch = list(entries)
    ids = [e.id for e in batch]
    old = dict(_select_terms(db, ids))
    rows = {e.id: term_row(term_counts(indexed_text(e))) for e in batch if e.live}
    gone = [(i,) for i in ids if i in old and i not in rows]
    new = [(i, blob) for i, blob in rows.items() if old.get(i) != blob]
    db.executemany("DELETE FROM lexical_terms WHERE entry_id = ?", gone)
    db.executemany(
        "INSERT INTO lexical_terms(entry_id, terms) VALUES (?, ?) "
        "ON CONFLICT(entry_id) DO UPDATE SET terms = excluded.terms",
        new,
    )
    return bool(gone or new)


def _select_terms(db: sqlite3.Connection, ids: list[str]) -> list[tuple[str, bytes]]:
    found: list[tuple[str, bytes]] = []
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ",".join("?" * len(chunk))
        sql = f"SELECT entry_id, terms FROM lexical_terms WHERE entry_id IN ({marks})"
        found += db.execute(sql, chunk).fetchall()
    return found


def build(db: sqlite3.Connection, folder: Path) -> None:
    """Pack ``lexical_terms`` into a new index file and point ``packed_sets`` at it."""
    rows = db.execute("SELECT entry_id, terms FROM lexical_terms ORDER BY entry_id").fetchall()
    data = encode([r[0] for r in rows], [np.frombuffer(r[1], dtype=_TERM) for r in rows])
    index_files.point(db, KIND, index_files.write(folder, KIND, data), len(rows))


def encode(ids: list[str], docs: list[npt.NDArray[np.void]]) -> bytes:
    """The packed file for documents ``docs`` (term rows) named ``ids`` (ascending)."""
    sizes = np.array([len(d) for d in docs], dtype=np.int64)
    flat = np.concatenate(docs) if docs else np.zeros(0, dtype=_TERM)
    doc = np.repeat(np.arange(len(docs), dtype=np.uint32), sizes)
    order = np.lexsort((doc, flat["hash"]))
    hashes, doc, tf = flat["hash"][order], doc[order], flat["count"][order].astype(np.float64)
    terms, starts, df = np.unique(hashes, return_index=True, return_counts=True)
    lengths = np.array([float(d["count"].sum()) for d in docs])
    n = max(len(docs), 1)
    idf = np.log1p((n - df + 0.5) / (df + 0.5))
    norm = K1 * (1 - B + B * lengths / max(float(lengths.mean()) if docs else 1.0, 1e-9))
    weights = np.repeat(idf, df) * tf * (K1 + 1) / (tf + norm[doc]) if doc.size else tf
    bounds = np.append(starts, len(hashes)).astype("<u8")
    counts = (len(ids), len(terms), len(hashes))
    return index_files.pack(
        MAGIC, counts, ids, terms.astype("<u8"), bounds, doc.astype("<u4"),
        weights.astype("<f4"),
    )  # fmt: skip


@dataclass(frozen=True)
class Lexicon:
    """A mapped lexical index."""

    ids: npt.NDArray[np.bytes_]
    hashes: npt.NDArray[np.uint64]
    starts: npt.NDArray[np.uint64]
    docs: npt.NDArray[np.uint32]
    weights: npt.NDArray[np.float32]

    def score(self, units: Sequence[Unit]) -> Floats:
        """BM25 of every document for a query's units (``terms.query_units``): a unit of
        several terms adds their weights in the documents that hold all of them."""
        scores = np.zeros(len(self.ids), dtype=np.float64)
        if not units or not len(self.hashes):
            return scores
        for unit in units:
            found = [self.postings(term) for term in unit.terms]
            if any(p is None for p in found):
                continue
            if len(found) == 1:
                docs, weights = found[0]  # type: ignore[misc]
                # docs unique; float64 products, as ``plain.View.lexical_list`` adds them
                scores[docs] += unit.weight * weights.astype(np.float64)
                continue
            part = np.zeros(len(self.ids), dtype=np.float64)
            held = np.zeros(len(self.ids), dtype=np.int64)
            for docs, weights in found:  # type: ignore[misc]
                part[docs] += weights.astype(np.float64)
                held[docs] += 1
            every = held == len(found)
            scores[every] += unit.weight * part[every]
        return scores

    def postings(self, term: str) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.float32]] | None:
        """The documents holding ``term`` and its weight in each; None if none does."""
        wanted = term_hash(term)
        at = int(np.searchsorted(self.hashes, np.uint64(wanted)))
        if at >= len(self.hashes) or int(self.hashes[at]) != wanted:
            return None
        begin, end = int(self.starts[at]), int(self.starts[at + 1])
        return self.docs[begin:end], self.weights[begin:end]


def load(db: sqlite3.Connection, folder: Path) -> Lexicon | None:
    """The index this snapshot points at, mapped; None when there is none or it is unusable."""
    found = index_files.load(db, folder, KIND, MAGIC, lexicon_parts)
    if found is None:
        return None
    _, ids, (hashes, starts, docs, weights) = found
    return Lexicon(ids, hashes, starts, docs, weights)
