"""Reading and writing entry rows of ``memory.db``.

Connections run in autocommit mode: writers open ``BEGIN IMMEDIATE``
themselves, so a catch-up's rows and its log position commit together.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import msgspec

from memlog.eventlog.log import Position
from memlog.files import is_link, nearly_full, refuse_link
from memlog.home import Home, ensure_dir
from memlog.projections.fold import Entry, Vector, space_key
from memlog.projections.sqlite_view.schema import migrate
from memlog.vocabulary import Space

#: the files SQLite keeps beside a database
SIDE_FILES = ("-wal", "-shm", "-journal")
BUSY_TIMEOUT_MS = 5000

_LIST_COLUMNS = (
    "keywords", "references", "projects", "features", "sources", "origins", "provenance", "details",
    "branches", "branch_stamps", "layout", "declined", "doors", "devices", "held", "holds",
    "accepted",
)  # fmt: skip
ENTRY_COLUMNS = (
    "id", "name", "description", "reasoning", "category", "keywords", "references",
    "observation_count", "confidence", "recall_count", "last_recalled_at", "created_at",
    "updated_at", "created_seq", "source", "source_project", "projects", "features",
    "sources", "origins", "provenance", "details", "last_observed", "promoted",
    "promotion_reason", "status", "status_reason", "superseded_by", "section", "branches",
    "branch_stamps", "layout", "verdicts", "judged_count", "applied_count",
    "contradicted_count", "proposal", "declined", "doors", "devices", "held", "holds",
    "accepted", "review",
)  # fmt: skip
QUOTED_COLUMNS = _QUOTED = ", ".join(f'"{c}"' for c in ENTRY_COLUMNS)
_UPSERT = (
    f"INSERT INTO entries ({_QUOTED}, slot) VALUES ({', '.join('?' * len(ENTRY_COLUMNS))}, ?) "
    f"ON CONFLICT(id) DO UPDATE SET "
    + ", ".join(f'"{c}" = excluded."{c}"' for c in ENTRY_COLUMNS[1:])
)
_SELECT = f"SELECT {_QUOTED} FROM entries"
#: bytes per page of a new ``memory.db``
PAGE_SIZE = 8192
_JSON = msgspec.json.Encoder()
_LIST = msgspec.json.Decoder(list[str])
_MAP = msgspec.json.Decoder(dict[str, str])


def connect(
    path: Path, readonly: bool = False, busy_ms: int = BUSY_TIMEOUT_MS
) -> sqlite3.Connection:
    """Open ``memory.db`` (WAL, busy timeout, autocommit); writers also migrate it.

    Neither the database nor a file SQLite keeps beside it may be a link: SQLite
    would follow it and write there (refused, naming it).
    """
    checked(path)
    if readonly:
        db = _connect_readonly(path)
    else:
        ensure_dir(path.parent)
        db = sqlite3.connect(path, isolation_level=None, timeout=busy_ms / 1000)
    db.execute(f"PRAGMA busy_timeout = {int(busy_ms)}")
    if not readonly:
        # a new database's pages: 8 KiB hold a dozen rows, so less of each is left empty
        # (4 KiB, SQLite's default, leave about a tenth of the rows' bytes); no effect
        # on a database already written
        db.execute(f"PRAGMA page_size = {PAGE_SIZE}")
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = NORMAL")
        migrate(db)
    return db


_UNTOUCHED: ContextVar[bool] = ContextVar("memlog_untouched", default=False)


@contextmanager
def untouched() -> Iterator[None]:
    """Reads inside leave the folder of ``memory.db`` as it was (``memlog doctor``).

    A read-only connection to a database in WAL mode makes ``-wal`` and ``-shm``
    files beside it and, being read-only, cannot remove them.  Inside this
    block, a database with no write-ahead log beside it (no writer is connected:
    the last one to close removes it) is opened as immutable, which reads the
    file alone and makes nothing.
    """
    token = _UNTOUCHED.set(True)
    try:
        yield
    finally:
        _UNTOUCHED.reset(token)


def checked(path: Path) -> Path:
    """``path`` once neither it nor its ``-wal``, ``-shm`` or ``-journal`` is a link."""
    for name in [str(path), *(f"{path}{suffix}" for suffix in SIDE_FILES)]:
        if is_link(name):
            raise refuse_link(name)
    return path


def _connect_readonly(path: Path) -> sqlite3.Connection:
    """A read-only connection; on a read-only filesystem or a full disk (no ``-shm`` can be
    made) the file is opened as immutable, which is safe there because nothing can
    change it (a writer fails for want of room as well)."""
    if not path.exists():
        raise sqlite3.OperationalError(f"unable to open database file {path}")
    if _UNTOUCHED.get() and not path.with_name(path.name + "-wal").exists():
        return sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True, isolation_level=None)
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
    try:
        db.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        return db
    except sqlite3.OperationalError:
        db.close()
        if os.access(path.parent, os.W_OK) and not nearly_full(path.parent):
            raise
    return sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True, isolation_level=None)


@contextmanager
def opened(
    path: Path, readonly: bool = False, busy_ms: int = BUSY_TIMEOUT_MS
) -> Iterator[sqlite3.Connection]:
    """``connect`` for the length of a ``with`` block; closed whatever happens."""
    db = connect(path, readonly, busy_ms)
    try:
        yield db
    finally:
        db.close()


@contextmanager
def snapshot(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """A read transaction: every read inside sees one state of the database."""
    db.execute("BEGIN")
    try:
        yield db
    finally:
        if db.in_transaction:
            db.execute("ROLLBACK")  # nothing was written: ending it is all


@contextmanager
def transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` … ``COMMIT``, rolled back on any error."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:  # SQLite may have rolled back already (a full disk)
            with suppress(sqlite3.Error):  # the error that stopped it is the one to report
                db.execute("ROLLBACK")
        raise


def get_meta(db: sqlite3.Connection, key: str, default: str = "") -> str:
    row = db.execute("SELECT value FROM _metadata WHERE key = ?", (key,)).fetchone()
    return str(row[0]) if row and row[0] is not None else default


def set_meta(db: sqlite3.Connection, values: dict[str, str]) -> None:
    db.executemany(
        "INSERT INTO _metadata(key, value) VALUES (?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        sorted(values.items()),
    )


class Stored(msgspec.Struct, frozen=True):
    """Where the view stands in the log: the next byte to read, the last seq applied, and
    how many bytes of log the fold up to there read (-1: not known, a view written before
    it was kept), which every command checks the log still holds before that place."""

    position: Position
    seq: int
    folded: int = -1

    @classmethod
    def measured(cls, home: Home, position: Position, seq: int) -> Stored:
        """The place ``position`` (event ``seq``), with the bytes of log before it now."""
        from memlog.eventlog.merged import folded_bytes

        return cls(position, seq, folded_bytes(home, position))


def get_position(db: sqlite3.Connection) -> Stored:
    segment = get_meta(db, "log_segment")
    offset = int(get_meta(db, "log_offset", "0"))
    folded = int(get_meta(db, "log_bytes", "-1") or -1)
    return Stored(Position(segment, offset), int(get_meta(db, "log_seq", "0")), folded)


def position_meta(stored: Stored) -> dict[str, str]:
    return {
        "log_segment": stored.position.segment,
        "log_offset": str(stored.position.offset),
        "log_seq": str(stored.seq),
        "log_bytes": str(stored.folded),
    }


def entry_row(entry: Entry, slot: int) -> tuple[Any, ...]:
    values: dict[str, Any] = {c: getattr(entry, c, None) for c in ENTRY_COLUMNS}
    for column in (*_LIST_COLUMNS, "verdicts"):
        values[column] = _JSON.encode(values[column]).decode("utf-8")
    values["promoted"] = int(entry.promoted)
    return (*(values[c] for c in ENTRY_COLUMNS), slot)


def vector_rows(entry: Entry, space: Space) -> list[tuple[str, str, str, int, bytes]]:
    """The rows of an entry's vectors in other spaces than ``space`` (whose vectors the
    packed file holds: ``vectors``)."""
    rows = []
    for key, vector in sorted(entry.vectors.items()):
        provider, model = key.split("/", 1)
        if (provider, model, vector.dimensions) != tuple(space):
            rows.append((entry.id, provider, model, vector.dimensions, vector.data))
    return rows


def write_entries(
    db: sqlite3.Connection, entries: Iterable[Entry], space: Space, slots: Mapping[str, int]
) -> None:
    """Upsert ``entries`` (a new one at its slot in ``slots``; an entry keeps its slot) and
    replace their vectors of other spaces (inside the caller's transaction)."""
    batch = list(entries)
    db.executemany(_UPSERT, [entry_row(e, slots.get(e.id, -1)) for e in batch])
    db.executemany("DELETE FROM vectors WHERE entry_id = ?", [(e.id,) for e in batch])
    db.executemany(
        "INSERT INTO vectors(entry_id, provider, model, dimensions, vector) VALUES (?,?,?,?,?)",
        [row for e in batch for row in vector_rows(e, space)],
    )


def slots_of(db: sqlite3.Connection, ids: Iterable[str]) -> dict[str, int]:
    """The slot of each of ``ids`` that has a row."""
    wanted, select = sorted(set(ids)), "SELECT id, slot FROM entries"
    rows = (r for chunk in _chunks(wanted) for r in _select_in(db, select, "id", chunk))
    return {r[0]: int(r[1]) for r in rows}


def all_slots(db: sqlite3.Connection) -> dict[str, int]:
    """Every row's slot, by id."""
    return {str(i): int(s) for i, s in db.execute("SELECT id, slot FROM entries")}


def slot_count(db: sqlite3.Connection) -> int:
    """How many slots the entries hold (one per entry ever created): the count the packed
    ranking records cover, else the rows'."""
    row = db.execute("SELECT count FROM packed_sets WHERE kind = 'rnk'").fetchone()
    if row is None:
        row = db.execute("SELECT max(slot) + 1 FROM entries").fetchone()
    return int(row[0]) if row is not None and row[0] is not None else 0


def space_in_force(db: sqlite3.Connection, wanted: Space) -> Space | None:
    """The space the view stays in when a caller configured with ``wanted`` catches it up:
    ``wanted`` itself when it is the view's; the view's own while not one vector of
    ``wanted`` exists (a process that runs with another configuration, a background
    sweep, a provider chosen but nothing embedded with it yet, would otherwise rebuild
    the whole view, and the next one back); None when the view must move to ``wanted``
    (a rebuild)."""
    current = space_of(db)
    if current == wanted:
        return wanted
    row = db.execute(
        "SELECT 1 FROM vectors WHERE provider = ? AND model = ? AND dimensions = ? LIMIT 1",
        wanted,
    ).fetchone()
    return current if current is not None and row is None else None


def space_of(db: sqlite3.Connection) -> Space | None:
    """The space in force the view was built for (None before any)."""
    provider, model = get_meta(db, "embedding_provider"), get_meta(db, "embedding_model")
    dimensions = get_meta(db, "embedding_dimensions")
    if not provider or not dimensions.isdigit():
        return None
    return Space(provider, model, int(dimensions))


def row_entry(row: sqlite3.Row | tuple[Any, ...]) -> Entry:
    values = dict(zip(ENTRY_COLUMNS, row, strict=True))
    for column in _LIST_COLUMNS:
        values[column] = _LIST.decode(values[column])
    values["verdicts"] = _MAP.decode(values["verdicts"])
    values["promoted"] = bool(values["promoted"])
    values["reasoning"] = values["reasoning"] or ""
    values["source_project"] = values["source_project"] or ""
    return Entry(**values)


def load_entries(db: sqlite3.Connection, ids: Iterable[str] | None = None) -> dict[str, Entry]:
    """Entries (all, or those of ``ids``) with their vectors of other spaces than the one in
    force (``vectors.attach`` adds that one's, from the packed file)."""
    if ids is None:
        rows = db.execute(_SELECT + " ORDER BY id").fetchall()
    else:
        wanted = sorted(set(ids))
        rows = [r for chunk in _chunks(wanted) for r in _select_in(db, _SELECT, "id", chunk)]
    entries = {row[0]: row_entry(row) for row in rows}
    _attach_vectors(db, entries)
    return entries


def load_where(
    db: sqlite3.Connection, where: str, params: Iterable[object], vectors: bool = True
) -> list[Entry]:
    """Entries matching a WHERE clause (with their vectors unless not wanted), in id order."""
    rows = db.execute(f"{_SELECT} WHERE {where} ORDER BY id", list(params))
    entries = {row[0]: row_entry(row) for row in rows}
    if vectors:
        _attach_vectors(db, entries)
    return list(entries.values())


def load_ids(db: sqlite3.Connection, ids: Iterable[str], vectors: bool = False) -> list[Entry]:
    """The entries of ``ids`` that exist, in id order."""
    wanted = sorted(set(ids))
    rows = [r for chunk in _chunks(wanted) for r in _select_in(db, _SELECT, "id", chunk)]
    entries = {row[0]: row_entry(row) for row in sorted(rows)}
    if vectors:
        _attach_vectors(db, entries)
    return list(entries.values())


def _attach_vectors(db: sqlite3.Connection, entries: dict[str, Entry]) -> None:
    select = "SELECT entry_id, provider, model, dimensions, vector FROM vectors"
    for chunk in _chunks(sorted(entries)):
        for entry_id, provider, model, dims, data in _select_in(db, select, "entry_id", chunk):
            entries[entry_id].vectors[space_key(provider, model)] = Vector(dims, data)


def _chunks(items: list[str], size: int = 500) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _select_in(db: sqlite3.Connection, select: str, column: str, ids: list[str]) -> list[Any]:
    marks = ",".join("?" * len(ids))
    return db.execute(f"{select} WHERE {column} IN ({marks})", ids).fetchall()
