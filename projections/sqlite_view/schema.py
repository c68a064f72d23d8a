"""The schema of ``memory.db`` as named, ordered, atomic migrations.

Each migration runs in its own transaction and is recorded in
``_migrations``; ``_metadata.schema_version`` is the number applied.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable

Migration = Callable[[sqlite3.Connection], None]


def m001_initial(db: sqlite3.Connection) -> None:
    db.execute(
        """
        CREATE TABLE entries (
            id TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            description TEXT NOT NULL,
            reasoning TEXT,
            category TEXT NOT NULL,
            keywords TEXT NOT NULL DEFAULT '[]',
            "references" TEXT NOT NULL DEFAULT '[]',
            observation_count INTEGER NOT NULL DEFAULT 1,
            confidence TEXT NOT NULL DEFAULT 'medium',
            recall_count INTEGER NOT NULL DEFAULT 0,
            last_recalled_at TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            created_seq INTEGER NOT NULL DEFAULT 0,
            source TEXT NOT NULL,
            source_project TEXT,
            embedding BLOB,
            projects TEXT NOT NULL DEFAULT '[]',
            features TEXT NOT NULL DEFAULT '[]',
            sources TEXT NOT NULL DEFAULT '[]',
            origins TEXT NOT NULL DEFAULT '[]',
            provenance TEXT NOT NULL DEFAULT '[]',
            details TEXT NOT NULL DEFAULT '[]',
            last_observed TEXT NOT NULL DEFAULT '',
            promoted INTEGER NOT NULL DEFAULT 0,
            promotion_reason TEXT NOT NULL DEFAULT '',
            status TEXT NOT NULL DEFAULT 'live',
            status_reason TEXT NOT NULL DEFAULT '',
            superseded_by TEXT NOT NULL DEFAULT ''
        )
        """
    )
    db.execute("CREATE INDEX entries_live ON entries(status, category)")
    db.execute(
        """
        CREATE TABLE vectors (
            entry_id TEXT NOT NULL,
            provider TEXT NOT NULL,
            model TEXT NOT NULL,
            dimensions INTEGER NOT NULL,
            vector BLOB NOT NULL,
            PRIMARY KEY (provider, model, entry_id)
        ) WITHOUT ROWID
        """
    )
    db.execute("CREATE INDEX vectors_entry ON vectors(entry_id)")
    db.execute(
        """
        CREATE TABLE vector_sets (
            provider TEXT NOT NULL,
            model TEXT NOT NULL,
            dimensions INTEGER NOT NULL,
            count INTEGER NOT NULL,
            file TEXT NOT NULL,
            PRIMARY KEY (provider, model)
        )
        """
    )
    _create_fts(db)


def _create_fts(db: sqlite3.Connection) -> None:
    db.execute(
        """
        CREATE VIRTUAL TABLE entries_fts USING fts5(
            name, description, keywords, reasoning,
            content='entries', content_rowid='rowid',
            tokenize='porter unicode61 remove_diacritics 2'
        )
        """
    )
    cols = "name, description, keywords, reasoning"
    watched = cols + ", details"
    # imported metadata lines (Cost:, Instead:, …) are searched with the reasoning
    new = "new.name, new.description, new.keywords, new.reasoning || ' ' || new.details"
    old = "old.name, old.description, old.keywords, old.reasoning || ' ' || old.details"
    delete = (
        f"INSERT INTO entries_fts(entries_fts, rowid, {cols}) VALUES('delete', old.rowid, {old});"
    )
    insert = f"INSERT INTO entries_fts(rowid, {cols}) VALUES (new.rowid, {new});"
    db.execute(f"CREATE TRIGGER entries_ai AFTER INSERT ON entries BEGIN {insert} END")
    db.execute(f"CREATE TRIGGER entries_ad AFTER DELETE ON entries BEGIN {delete} END")
    db.execute(
        f"CREATE TRIGGER entries_au AFTER UPDATE OF {watched} ON entries "
        f"BEGIN {delete} {insert} END"
    )


def m002_rank_index(db: sqlite3.Connection) -> None:
    """A covering index for ranking: candidates are read without touching the wide rows
    (each carries its embedding inline), which the hook does on every start."""
    db.execute(
        "CREATE INDEX entries_rank ON entries(status, category, id, name, observation_count, "
        "confidence, updated_at, recall_count)"
    )


def m003_lexicon_and_neighbours(db: sqlite3.Connection) -> None:
    """Each live entry's terms for the packed lexical index, and the pointers to the
    content-named packed files (``packed``: the lexical index, the neighbour lists)."""
    db.execute(
        "CREATE TABLE lexical_terms (entry_id TEXT PRIMARY KEY, terms BLOB NOT NULL) WITHOUT ROWID"
    )
    db.execute(
        "CREATE TABLE packed_sets (kind TEXT PRIMARY KEY, file TEXT NOT NULL, "
        "count INTEGER NOT NULL)"
    )


def m004_branch_memory(db: sqlite3.Connection) -> None:
    """Extracted entries keep their section and branch memories; sessions of Claude Code
    and the spend of model calls by day."""
    db.execute("ALTER TABLE entries ADD COLUMN section TEXT NOT NULL DEFAULT ''")
    db.execute("ALTER TABLE entries ADD COLUMN branches TEXT NOT NULL DEFAULT '[]'")
    db.execute("ALTER TABLE entries ADD COLUMN branch_stamps TEXT NOT NULL DEFAULT '[]'")
    db.execute(
        """
        CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            project TEXT NOT NULL DEFAULT '',
            branch TEXT NOT NULL DEFAULT '',
            cwd TEXT NOT NULL DEFAULT '',
            transcript TEXT NOT NULL DEFAULT '',
            status TEXT NOT NULL,
            done TEXT NOT NULL DEFAULT '',
            trigger TEXT NOT NULL DEFAULT '',
            reason TEXT NOT NULL DEFAULT '',
            size INTEGER NOT NULL DEFAULT 0,
            "offset" INTEGER NOT NULL DEFAULT 0,
            attempts INTEGER NOT NULL DEFAULT 0,
            turns INTEGER NOT NULL DEFAULT 0,
            calls INTEGER NOT NULL DEFAULT 0,
            tokens_in INTEGER NOT NULL DEFAULT 0,
            tokens_out INTEGER NOT NULL DEFAULT 0,
            cost_micros INTEGER NOT NULL DEFAULT 0,
            first_seen TEXT NOT NULL DEFAULT '',
            updated_at TEXT NOT NULL DEFAULT ''
        )
        """
    )
    db.execute("CREATE INDEX sessions_status ON sessions(status, first_seen)")
    db.execute(
        """
        CREATE TABLE spend (
            day TEXT PRIMARY KEY,
            calls INTEGER NOT NULL DEFAULT 0,
            tokens_in INTEGER NOT NULL DEFAULT 0,
            tokens_out INTEGER NOT NULL DEFAULT 0,
            cost_micros INTEGER NOT NULL DEFAULT 0
        )
        """
    )


def m005_rank_index_recency(db: sqlite3.Connection) -> None:
    """The ranking index also covers what recency reads (an imported entry's sources and
    ``Last observed``): those columns lie past the inline embedding, so without them every
    candidate's whole row, overflow pages and all, was read on every start."""
    db.execute("DROP INDEX entries_rank")
    db.execute(
        "CREATE INDEX entries_rank ON entries(status, category, id, name, observation_count, "
        "confidence, updated_at, recall_count, sources, last_observed)"
    )


def m006_branch_index(db: sqlite3.Connection) -> None:
    """The entries that belong to a branch memory, indexed apart: the hook looks them up
    on every start, and ``branches`` lies past the inline embedding, so the lookup read
    every row, overflow pages and all (a partial index holds only those entries)."""
    db.execute("CREATE INDEX entries_branched ON entries(status, id) WHERE branches != '[]'")


def m007_entry_layout(db: sqlite3.Connection) -> None:
    """Entries of an iflow global store keep the header and metadata lines they were
    written with, so the store's files are written back as they were."""
    db.execute("ALTER TABLE entries ADD COLUMN layout TEXT NOT NULL DEFAULT '[]'")


def m008_packed_slots(db: sqlite3.Connection) -> None:
    """Each vector stored once, text indexed once, and every packed file patched in place:
    the vectors of the space in force live only in their packed file (the table keeps
    other spaces'), the inline ``embedding`` and the term rows go (the packed lexical
    index holds the terms; the covering index only kept ranking off the wide rows), so
    does FTS5 (a second index of the same text, read only by ``memory_ranking: d3``,
    which now indexes the rows in memory when it ranks: ``reading.Snapshot.bm25``), and
    every entry gets its ``slot``, its record in each packed file.  The next catch-up
    rebuilds the view from the log (``VIEW_FORMAT``)."""
    for trigger in ("entries_ai", "entries_ad", "entries_au"):
        db.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    for table in ("entries_fts", "lexical_terms", "vector_sets"):
        db.execute(f"DROP TABLE IF EXISTS {table}")
    db.execute("DROP INDEX IF EXISTS entries_rank")
    columns = {row[1] for row in db.execute("PRAGMA table_info(entries)")}
    if "embedding" in columns:
        db.execute("ALTER TABLE entries DROP COLUMN embedding")
    if "slot" not in columns:
        db.execute("ALTER TABLE entries ADD COLUMN slot INTEGER NOT NULL DEFAULT -1")
    db.execute("DELETE FROM packed_sets")


def m009_event_lines(db: sqlite3.Connection) -> None:
    """Where the events about each entry, session, day and the maintenance times are in
    the log (``lines``), so an event that arrives late is folded again with those events
    read alone, not the whole log.  The next catch-up rebuilds the view (``VIEW_FORMAT``),
    which fills it."""
    db.execute(
        "CREATE TABLE IF NOT EXISTS lines (key TEXT PRIMARY KEY, data BLOB NOT NULL) WITHOUT ROWID"
    )
    db.execute(
        "CREATE TABLE IF NOT EXISTS line_segments "
        "(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)"
    )


def m010_use(db: sqlite3.Connection) -> None:
    """What sessions did with each entry (the judgments of ``entry.influenced`` and their
    counts), the maintenance proposal awaiting a person, and what each session received
    (``entry.recalled``) and how many of those are not judged yet.  Ranking reads the
    judged entries through a partial index (most entries never are).  The next catch-up
    rebuilds the view (``VIEW_FORMAT``)."""
    for column, kind in (
        ("verdicts", "TEXT NOT NULL DEFAULT '{}'"),
        ("judged_count", "INTEGER NOT NULL DEFAULT 0"),
        ("applied_count", "INTEGER NOT NULL DEFAULT 0"),
        ("contradicted_count", "INTEGER NOT NULL DEFAULT 0"),
        ("proposal", "TEXT NOT NULL DEFAULT ''"),
        ("declined", "TEXT NOT NULL DEFAULT '[]'"),
    ):
        db.execute(f"ALTER TABLE entries ADD COLUMN {column} {kind}")
    db.execute("ALTER TABLE sessions ADD COLUMN received TEXT NOT NULL DEFAULT '[]'")
    db.execute("ALTER TABLE sessions ADD COLUMN judged TEXT NOT NULL DEFAULT '[]'")
    db.execute("ALTER TABLE sessions ADD COLUMN unjudged INTEGER NOT NULL DEFAULT 0")
    db.execute("CREATE INDEX sessions_unjudged ON sessions(first_seen) WHERE unjudged > 0")
    db.execute(
        "CREATE INDEX entries_judged ON entries(status, id, applied_count, judged_count) "
        "WHERE judged_count > 0"
    )


def m011_provenance_and_holds(db: sqlite3.Connection) -> None:
    """Where each entry came from (its doors, the devices whose folders hold its
    observations) and what the scan of lessons held of it, as reviewed.  The next catch-up
    rebuilds the view (``VIEW_FORMAT``), which fills them."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(entries)")}
    for name in ("doors", "devices", "held", "holds", "accepted"):
        if name not in columns:
            db.execute(f"ALTER TABLE entries ADD COLUMN {name} TEXT NOT NULL DEFAULT '[]'")
    if "review" not in columns:
        db.execute("ALTER TABLE entries ADD COLUMN review TEXT NOT NULL DEFAULT ''")


MIGRATIONS: list[tuple[str, Migration]] = [
    ("m001_initial", m001_initial),
    ("m002_rank_index", m002_rank_index),
    ("m003_lexicon_and_neighbours", m003_lexicon_and_neighbours),
    ("m004_branch_memory", m004_branch_memory),
    ("m005_rank_index_recency", m005_rank_index_recency),
    ("m006_branch_index", m006_branch_index),
    ("m007_entry_layout", m007_entry_layout),
    ("m008_packed_slots", m008_packed_slots),
    ("m009_event_lines", m009_event_lines),
    ("m010_use", m010_use),
    ("m011_provenance_and_holds", m011_provenance_and_holds),
]
#: the format of the rows and packed files the code writes; a view recorded with another
#: (``_metadata.view_format``) is rebuilt from the log before it is caught up
VIEW_FORMAT = "5"
SCHEMA_VERSION = len(MIGRATIONS)


def applied(db: sqlite3.Connection) -> list[str]:
    db.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, ord INTEGER)")
    db.execute("CREATE TABLE IF NOT EXISTS _metadata (key TEXT PRIMARY KEY, value TEXT)")
    return [r[0] for r in db.execute("SELECT name FROM _migrations ORDER BY ord")]


def migrate(db: sqlite3.Connection) -> list[str]:
    """Apply every pending migration, each atomically; return the names applied."""
    done = set(applied(db))
    ran: list[str] = []
    for order, (name, migration) in enumerate(MIGRATIONS, 1):
        if name in done:
            continue
        db.execute("BEGIN IMMEDIATE")
        try:
            if db.execute("SELECT 1 FROM _migrations WHERE name = ?", (name,)).fetchone():
                db.execute("COMMIT")  # another process applied it meanwhile
                continue
            migration(db)
            db.execute("INSERT INTO _migrations(name, ord) VALUES (?, ?)", (name, order))
            db.execute(
                "INSERT OR REPLACE INTO _metadata(key, value) VALUES ('schema_version', ?)",
                (str(order),),
            )
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:  # SQLite may have rolled back already (a full disk)
                with contextlib.suppress(sqlite3.Error):  # the error that stopped it is told
                    db.execute("ROLLBACK")
            raise
        ran.append(name)
    return ran
