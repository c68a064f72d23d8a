"""What ranking reads of every live entry, packed: ``index/<sha256>.rnk``.

Every start ranks all live entries, and reading their columns row by row
from SQLite costs more than the rest of the ranking.  So every catch-up that
touches an entry packs them again (at 10k entries, a few hundred kilobytes
written by the recorder, after the start):

    header  b"MLRNK001", entries n, neighbours per entry k, 0
    ids     n × 16 ASCII bytes, in id order
    since   n × float64: julianday of the time recency counts from (``SINCE``),
            +inf when it cannot be read (then the days are 0)
    counts  n × uint32: observation count
    recalls n × uint32: recall count
    codes   n × uint8: category, its place in ``CATEGORIES`` (4: another)
    levels  n × uint8: confidence, its place in ``LEVELS`` (2: another, as medium)
    around  n × k int32: the entry's neighbours (``neighbours``' lists, best first) as
            places in this file (−1: none), so a ranking maps no id to find them

The file is named by its content, so a rebuild from the log writes the same
bytes; readers map it (``plain.View.columns``).
"""

from __future__ import annotations

import sqlite3
import sys
from array import array
from pathlib import Path

from memlog.projections.sqlite_view import index_files
from memlog.vocabulary import CATEGORIES

KIND = "rnk"
MAGIC = b"MLRNK001"
#: confidence levels by code; anything else ranks as medium
LEVELS = ("high", "low", "medium")
#: the ``Last observed`` date of an entry known only from imported files, else NULL
IMPORTED_OBSERVED = (
    "CASE WHEN sources = '[\"import\"]' AND last_observed GLOB "
    "'[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*' THEN last_observed END"
)
#: julianday of the time recency counts from: an imported entry's ``Last observed`` (an
#: ISO date or time, UTC unless it says otherwise), else ``updated_at`` (the import itself
#: would make every lesson new); julianday has millisecond steps, far below a day's
SINCE = f"coalesce(julianday({IMPORTED_OBSERVED}), julianday(updated_at))"
_CODES = " ".join(f"WHEN '{c}' THEN {n}" for n, c in enumerate(CATEGORIES))
_LEVELS = " ".join(f"WHEN '{c}' THEN {n}" for n, c in enumerate(LEVELS[:2]))


def build(db: sqlite3.Connection, folder: Path) -> None:
    """Pack every live entry into a new file and point ``packed_sets`` at it (after the
    neighbour lists are built: it carries them too)."""
    rows = db.execute(
        f"SELECT id, {SINCE}, observation_count, recall_count, "
        f"CASE category {_CODES} ELSE {len(CATEGORIES)} END, CASE confidence {_LEVELS} ELSE 2 END "
        "FROM entries WHERE status = 'live' ORDER BY id"
    ).fetchall()
    columns = list(zip(*rows, strict=True)) if rows else [()] * 6
    since = [float("inf") if s is None else s for s in columns[1]]
    k, around = _around(db, folder, list(columns[0]))
    arrays = [
        array("d", since), array("I", columns[2]), array("I", columns[3]),
        array("B", columns[4]), array("B", columns[5]), array("i", around),
    ]  # fmt: skip
    if sys.byteorder != "little":
        for packed in arrays:
            packed.byteswap()
    data = b"".join(
        [index_files.HEADER.pack(MAGIC, len(rows), k, 0), "".join(columns[0]).encode("ascii")]
        + [a.tobytes() for a in arrays]
    )
    index_files.point(db, KIND, index_files.write(folder, KIND, data), len(rows))


def _around(db: sqlite3.Connection, folder: Path, ids: list[str]) -> tuple[int, list[int]]:
    """The neighbour lists as places among ``ids`` (ascending), and their length."""
    import numpy as np

    from memlog.projections.sqlite_view import neighbours

    graph = neighbours.load(db, folder)
    if graph is None or not ids or not len(graph.ids):
        return 0, []
    keys = np.asarray(ids, dtype="S16")
    at = np.minimum(np.searchsorted(graph.ids, keys), len(graph.ids) - 1)
    rows = np.where(graph.ids[at] == keys, at, -1)  # each entry's row in the graph
    back = np.minimum(np.searchsorted(keys, graph.ids), len(keys) - 1)
    places = np.append(np.where(keys[back] == graph.ids, back, -1), -1)  # graph row → place
    found = np.full((len(ids), graph.index.shape[1]), -1, dtype=np.int64)
    have = rows >= 0
    found[have] = places[graph.index[rows[have]]]
    return graph.index.shape[1], found.ravel().tolist()


def parts(counts: index_files.Counts) -> list[tuple[str, int]]:
    n, k = counts[0], counts[1]
    return [("<f8", n), ("<u4", n), ("<u4", n), ("<u1", n), ("<u1", n), ("<i4", n * k)]
