"""The packed files beside the rows: vectors, what ranking reads, the lexical index, the
neighbour lists.

The runner calls ``refresh`` in the transaction of every catch-up, after the
rows are written, and ``rebuild`` when it builds the view from zero, both
inside ``index_files.preparing``; both leave the same records (``packed``),
and the runner sweeps files no longer named once it committed.  Only what the
events changed is written: the records of the entries they touched (and of
new ones), the lexical postings of entries whose text or liveness changed,
the neighbour lists around vectors that came, went or moved.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from memlog.home import Home
from memlog.projections.fold import Entry
from memlog.projections.sqlite_view import index_files, ranks, vectors
from memlog.projections.sqlite_view.indexed import indexed_text
from memlog.vocabulary import Space

Signature = dict[str, tuple[bool, bytes | None, tuple[str, ...]]]


class Unpatchable(Exception):
    """A packed file the view names is missing or damaged: only a rebuild writes it again."""


def signature(entries: Iterable[Entry], space: Space) -> Signature:
    """What of each entry the indexes depend on: liveness, its vector, its indexed text."""
    return {e.id: (e.live, vectors.in_space(e.vectors, space), indexed_text(e)) for e in entries}


def refresh(
    db: sqlite3.Connection,
    folder: Home,
    space: Space,
    touched: list[Entry],
    before: Signature,
    slots: dict[str, int],
    count: int,
    ordinal: int,
    reslotted: frozenset[str] = frozenset(),
) -> None:
    """Update the packed files for the ``touched`` entries (``before``: their signature
    before the events; ``slots``: theirs, new ones included; ``count``: slots in all;
    ``reslotted``: those that took a slot out of their order among the others, whose
    records ``reslot`` moved); ``Unpatchable`` when a file cannot be patched."""
    from memlog.projections.sqlite_view import lexicon, neighbours  # numpy: only when writing

    after = signature(touched, space)
    old = {e.id: before.get(e.id) for e in touched}
    grown = count > (index_files.pointer(db, ranks.KIND) or ("", 0))[1]
    recorded = [e for e in touched if _differs(old[e.id], after[e.id], 1)]
    vector_rows = [(slots[e.id], e) for e in recorded]
    if (vector_rows or grown) and not vectors.patch(db, folder, space, vector_rows, count):
        raise Unpatchable("vectors")
    if touched and not ranks.patch(db, folder, [e.id for e in touched], count, _vectored(after)):
        raise Unpatchable("ranks")
    if touched or grown:  # counted from the records whenever they are written: a count
        vectors.recount(db, folder)  # that missed a writer is made right by the next one
    worded = [e for e in touched if _differs(old[e.id], after[e.id], 0, 2)]
    documents = [(slots[e.id], lexicon.document(e)) for e in worded]
    if (documents or grown) and not lexicon.patch(db, folder, ordinal, count, documents):
        raise Unpatchable("lexicon")
    graphed = [e for e in touched if _differs(old[e.id], after[e.id], 0, 1) or e.id in reslotted]
    was = {slots[e.id]: _member(old[e.id]) for e in graphed}
    moved = [slots[e.id] for e in graphed if _member(old[e.id]) and _member(after[e.id])]
    if (graphed or grown) and not neighbours.patch(db, folder, space, was, moved):
        raise Unpatchable("neighbours")


def rebuild(
    db: sqlite3.Connection, folder: Home, space: Space, ordered: list[Entry], ordinal: int
) -> None:
    """Write every packed file from zero for ``ordered`` (every entry, in slot order)."""
    from memlog.projections.sqlite_view import lexicon, neighbours

    vectors.build(db, folder, ordinal, space, ordered)
    ranks.build(db, folder, ordinal, _vectored(signature(ordered, space)))
    lexicon.build(db, folder, ordinal, ordered)
    neighbours.build(db, folder, ordinal, space)


def _vectored(found: Signature) -> ranks.Vectored:
    return lambda entry_id: _has(found.get(entry_id)) == 1


def _has(sig: tuple[bool, bytes | None, tuple[str, ...]] | None) -> int:
    return int(sig is not None and sig[1] is not None)


def _member(sig: tuple[bool, bytes | None, tuple[str, ...]] | None) -> bool:
    return sig is not None and sig[0] and sig[1] is not None


def _differs(
    old: tuple[bool, bytes | None, tuple[str, ...]] | None,
    new: tuple[bool, bytes | None, tuple[str, ...]],
    *parts: int,
) -> bool:
    """Whether the signature ``parts`` changed (an entry not there before has changed)."""
    return old is None or any(old[n] != new[n] for n in parts)
