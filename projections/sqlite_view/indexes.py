"""The ranking indexes beside the rows: the lexical index, the neighbour lists and the
packed columns ranking reads (``ranks``).

The runner calls ``refresh`` in the transaction of every catch-up, after the
rows are written, and ``rebuild`` when it builds the view from zero, both
inside ``index_files.preparing``; both leave the same files (see ``lexicon``
and ``neighbours``), and the runner sweeps the old ones once it committed.  Only what the
events changed is redone: the terms of touched entries whose text or
liveness changed, the neighbour lists around vectors that came or went.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path

from memlog.projections.fold import Entry
from memlog.projections.sqlite_view import index_files, ranks, store
from memlog.vocabulary import Space

LEXICON, NEIGHBOURS = "lex", "nbr"  # the kinds of lexicon.py and neighbours.py

Signature = dict[str, tuple[bool, bytes | None, tuple[str, ...]]]


def indexed_text(entry: Entry) -> tuple[str, ...]:
    """The fields of an entry the lexical index holds."""
    keywords = " ".join(entry.keywords)
    return (entry.name, entry.description, keywords, entry.reasoning, *entry.details)


def signature(entries: Iterable[Entry], space: Space) -> Signature:
    """What of each entry the indexes depend on: liveness, its vector, its indexed text."""
    found: Signature = {}
    for entry in entries:
        vector = entry.vectors.get(space.key)
        data = vector.data if vector is not None and vector.dimensions == space.dimensions else None
        found[entry.id] = (entry.live, data, indexed_text(entry))
    return found


def refresh(
    db: sqlite3.Connection, folder: Path, space: Space, touched: list[Entry], before: Signature
) -> None:
    """Update the indexes for the ``touched`` entries (``before``: their signature before)."""
    from memlog.projections.sqlite_view import lexicon, neighbours  # numpy: only when writing

    after = signature(touched, space)
    if index_files.pointer(db, LEXICON) is None:  # a new or migrated view: index everything
        lexicon.write_terms(db, store.load_entries(db).values())
        lexicon.build(db, folder)
    else:  # a recall or a count changes nothing indexed: no tokenising, no rebuild
        worded = [e for e in touched if _differs(before.get(e.id), after[e.id], 0, 2)]
        if worded and lexicon.write_terms(db, worded):
            lexicon.build(db, folder)
    changed = [i for i, sig in after.items() if _differs(before.get(i), sig, 0, 1)]
    regraphed = bool(changed) or _stale(db, space)
    if regraphed:
        neighbours.build(db, folder, space, changed)
    if touched or regraphed or index_files.pointer(db, ranks.KIND) is None:
        ranks.build(db, folder)  # counts, recalls, liveness, the neighbour lists


def _differs(
    old: tuple[bool, bytes | None, tuple[str, ...]] | None,
    new: tuple[bool, bytes | None, tuple[str, ...]],
    *parts: int,
) -> bool:
    """Whether the signature ``parts`` changed (an entry not there before has changed)."""
    return old is None or any(old[n] != new[n] for n in parts)


def _stale(db: sqlite3.Connection, space: Space) -> bool:
    from memlog.projections.sqlite_view import neighbours

    current = store.get_meta(db, "neighbour_space")
    return index_files.pointer(db, NEIGHBOURS) is None or current != neighbours.space_tag(space)


def rebuild(db: sqlite3.Connection, folder: Path, space: Space, entries: list[Entry]) -> None:
    """Build both indexes from zero for ``entries`` (the whole view)."""
    from memlog.projections.sqlite_view import lexicon, neighbours

    lexicon.write_terms(db, entries)
    lexicon.build(db, folder)
    db.execute("DELETE FROM _metadata WHERE key = 'neighbour_space'")
    neighbours.build(db, folder, space)
    ranks.build(db, folder)
