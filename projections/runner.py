"""Keeping the views in step with the log: catch-up, full rebuild, digests.

* ``catch_up`` applies the events after the view's stored position in one
  SQLite transaction (rows and position commit together), then rewrites
  only the markdown files whose content those events changed.
* ``rebuild`` folds the whole log (or a prefix of it, for time travel) into
  a database built aside, then switches it in with SQLite's backup API, so
  an open reader keeps a complete snapshot throughout.
* ``digests`` fingerprint each view, for replay reports and audits.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

import msgspec

from memlog.errors import ViewError
from memlog.eventlog.events import Reembedded
from memlog.eventlog.log import START, DamageHandler, EventLog, Record
from memlog.projections.fold import Entry, State, apply
from memlog.projections.markdown_view import render
from memlog.projections.markdown_view.writer import (
    MarkdownState,
    digest,
    load_state,
    save_state,
    write_files,
)
from memlog.projections.sqlite_view import store
from memlog.projections.sqlite_view.schema import SCHEMA_VERSION
from memlog.projections.sqlite_view.vectors import (
    VECTOR_DIR,
    Space,
    collect_garbage,
    write_packed,
)
from memlog.timefilter import Bound, within

DEFAULT_SPACE = Space("local", "all-MiniLM-L6-v2", 384)
_MD_LOCK = ".markdown.lock"
_CORRUPT_CODES = {11, 26}  # SQLITE_CORRUPT, SQLITE_NOTADB
_SPACE_KEYS = ("embedding_provider", "embedding_model", "embedding_dimensions")
Progress = Callable[[int], None]


class CatchUp(NamedTuple):
    applied: int
    rebuilt: bool
    seq: int
    notes: list[str]


class Rebuilt(NamedTuple):
    applied: int
    live_entries: int
    seq: int
    notes: list[str]


class _NeedsRebuild(Exception):
    """The stored position no longer matches the log."""


def is_corrupt(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in _CORRUPT_CODES
    return "malformed" in str(exc) or "not a database" in str(exc)


def db_path(folder: Path) -> Path:
    return folder / store.DB_NAME


# -- catch-up -----------------------------------------------------------------


def catch_up(
    home: Path, space: Space = DEFAULT_SPACE, on_damage: DamageHandler | None = None
) -> CatchUp:
    """Bring both views up to the end of the log; rebuild them when they cannot follow."""
    log = EventLog(home)
    if not log.segments() and not db_path(home).exists():
        return CatchUp(0, False, 0, [])
    current = _current_seq(home, space)
    if current is not None:
        return CatchUp(0, False, current, [])
    _remove_stale_asides(home)
    try:
        return _incremental(home, log, space, on_damage)
    except _NeedsRebuild:
        pass
    except sqlite3.DatabaseError as exc:
        if not is_corrupt(exc):
            raise ViewError(f"cannot update {db_path(home)}: {exc}") from None
    done = rebuild(home, space)
    return CatchUp(done.applied, True, done.seq, done.notes)


def _current_seq(home: Path, space: Space) -> int | None:
    """The views' sequence when they already reflect the whole log in ``space``, else None.

    A read-only check: an up-to-date view is never opened for writing, so
    reading commands also work on a read-only home.
    """
    if not db_path(home).exists() or lag_bytes(home) != 0:
        return None
    try:
        db = store.connect(db_path(home), readonly=True)
        try:
            stored_space = tuple(store.get_meta(db, k) for k in _SPACE_KEYS)
            version = store.get_meta(db, "schema_version")
            seq = store.get_position(db).seq
        finally:
            db.close()
    except sqlite3.DatabaseError:
        return None
    in_space = stored_space == (space.provider, space.model, str(space.dimensions))
    current = in_space and version == str(SCHEMA_VERSION) and _markdown_current(home)
    return seq if current else None


def _markdown_current(folder: Path) -> bool:
    state = load_state(folder)
    return (state.segment, state.offset) == _log_end(folder)


def _log_end(home: Path) -> tuple[str, int]:
    segments = EventLog(home).segments()
    return (segments[-1].name, segments[-1].stat().st_size) if segments else ("", 0)


def lag_bytes(home: Path) -> int:
    """How many bytes of log the SQLite view has not applied yet (all of it without a view)."""
    log = EventLog(home)
    sizes = {p.name: p.stat().st_size for p in log.segments()}
    if not db_path(home).exists():
        return sum(sizes.values())
    try:
        db = store.connect(db_path(home), readonly=True)
        try:
            stored = store.get_position(db)
        finally:
            db.close()
    except sqlite3.DatabaseError:
        return 0  # unreadable: catch_up rebuilds it, whatever the size
    segment, offset = stored.position
    if segment and segment not in sizes:
        return sum(sizes.values())
    return sum(size - (offset if name == segment else 0) for name, size in sizes.items()
               if name >= segment)  # fmt: skip


def _incremental(
    home: Path, log: EventLog, space: Space, on_damage: DamageHandler | None
) -> CatchUp:
    db = store.connect(db_path(home))
    try:
        with store.transaction(db):
            before = store.get_position(db)
            space_changed = _ensure_space(db, home, space)
            records = _records_after(log, before, on_damage)
            changed = _apply(db, home, space, records, space_changed)
            after = store.get_position(db)
    finally:
        db.close()
    notes = _markdown_catch_up(home, changed, before, after)
    return CatchUp(len(records), False, after.seq, notes)


def _records_after(
    log: EventLog, stored: store.Stored, on_damage: DamageHandler | None
) -> list[Record]:
    segment = stored.position.segment
    if segment:
        path = log.events_dir / segment
        if not path.exists() or path.stat().st_size < stored.position.offset:
            raise _NeedsRebuild
    elif stored.seq:
        raise _NeedsRebuild
    records = list(log.read(stored.position, on_damage))
    if records and records[0].event.seq <= stored.seq:
        raise _NeedsRebuild
    return records


def _apply(
    db: sqlite3.Connection, folder: Path, space: Space, records: list[Record], repack: bool
) -> dict[str, set[str]]:
    """Fold ``records`` into the stored entries they touch; return the markdown files changed."""
    if not records:
        if repack:
            write_packed(db, folder / VECTOR_DIR, space)
        return {}
    ids = {i for r in records for i in r.event.entry_ids}
    state = State(entries=store.load_entries(db, ids))
    before = {i: render.signature(e) for i, e in state.entries.items()}
    for record in records:
        apply(state, record.event)
    touched = [state.entries[i] for i in sorted(state.touched)]
    store.write_entries(db, touched, space.key)
    if repack or any(_in_space(r, space) for r in records):
        write_packed(db, folder / VECTOR_DIR, space)
    last = records[-1]
    store.set_meta(db, store.position_meta(store.Stored(last.after, last.event.seq)))
    return _changed_files(touched, before)


def _in_space(record: Record, space: Space) -> bool:
    event = record.event
    return isinstance(event, Reembedded) and (event.provider, event.model) == space[:2]


Signature = tuple[tuple[str, ...], str]


def _changed_files(touched: list[Entry], before: dict[str, Signature]) -> dict[str, set[str]]:
    changed: dict[str, set[str]] = {}
    for entry in touched:
        old, new = before.get(entry.id), render.signature(entry)
        if old == new:
            continue
        paths = set(new[0]) | (set(old[0]) if old is not None else set())
        for path in paths:
            changed.setdefault(path, set()).add(entry.source_project)
    return changed


def _ensure_space(db: sqlite3.Connection, folder: Path, space: Space) -> bool:
    """Record ``space`` as the one in force; refill ``embedding`` when it changed."""
    current = (
        store.get_meta(db, "embedding_provider"),
        store.get_meta(db, "embedding_model"),
        store.get_meta(db, "embedding_dimensions"),
    )
    if current == (space.provider, space.model, str(space.dimensions)):
        return False
    db.execute(
        "UPDATE entries SET embedding = (SELECT vector FROM vectors v WHERE v.entry_id = "
        "entries.id AND v.provider = ? AND v.model = ? AND v.dimensions = ?)",
        space,
    )
    store.set_meta(db, _space_meta(space))
    return True


def _space_meta(space: Space) -> dict[str, str]:
    return {
        "embedding_provider": space.provider,
        "embedding_model": space.model,
        "embedding_dimensions": str(space.dimensions),
    }


# -- markdown ------------------------------------------------------------------


@contextlib.contextmanager
def _md_lock(folder: Path) -> Iterator[None]:
    fd = os.open(folder / _MD_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _markdown_catch_up(
    folder: Path, changed: dict[str, set[str]], before: store.Stored, after: store.Stored
) -> list[str]:
    with _md_lock(folder):
        state = load_state(folder)
        db = store.connect(db_path(folder))
        try:
            db.execute("BEGIN")
            now = store.get_position(db)
            if (state.seq, state.segment, state.offset) == (now.seq, *now.position):
                return []
            if (state.seq, state.segment) == (before.seq, before.position.segment) and (
                state.offset == before.position.offset and now == after
            ):
                files = _render_changed(db, changed)
            else:
                files = render.plan(store.load_entries(db).values())
            db.execute("COMMIT")
        finally:
            db.close()
        return _write_markdown(folder, files, state, now)


def _render_changed(db: sqlite3.Connection, changed: dict[str, set[str]]) -> dict[str, str]:
    files = {}
    for path, projects in sorted(changed.items()):
        files[path] = render.render_file(path, _members(db, path, projects))
    return files


def _members(db: sqlite3.Connection, path: str, projects: set[str]) -> list[Entry]:
    """The entries ``path`` shows (only live ones are rendered, so only they are read).

    ``status = 'live'`` lets the ``(status, category)`` index narrow the search
    instead of scanning every row; rendering needs no vectors.
    """
    category = path.rsplit("/", 1)[-1].removesuffix(".md")
    if path.startswith("projects/"):
        marks = ",".join("?" * len(projects))
        where = f"status = 'live' AND category = ? AND coalesce(source_project, '') IN ({marks})"
        params: list[str] = [category, *sorted(projects)]
    else:
        where, params = "status = 'live' AND category = ? AND promoted = 1", [category]
    entries = store.load_where(db, where, params, vectors=False)
    return [e for e in entries if path in render.paths_of(e)]


def _write_markdown(
    folder: Path, files: dict[str, str], state: MarkdownState, now: store.Stored
) -> list[str]:
    notes = write_files(folder, files, state)
    state.segment, state.offset, state.seq = now.position.segment, now.position.offset, now.seq
    save_state(folder, state)
    return notes


# -- full rebuild ----------------------------------------------------------------


def fold_log(
    log: EventLog, until: Bound | None = None, progress: Progress | None = None
) -> tuple[State, store.Stored, int]:
    """Fold the log (up to ``until``, inclusive) from zero."""
    state, last, applied = State(), None, 0
    for record in log.read():
        event = record.event
        if until is not None and not within(event.seq, event.ts, None, until):
            break
        apply(state, event)
        last, applied = record, applied + 1
        if progress is not None and applied % 1000 == 0:
            progress(1000)
    if progress is not None:
        progress(applied % 1000)
    stored = store.Stored(last.after, last.event.seq) if last else store.Stored(START, 0)
    return state, stored, applied


def rebuild(
    home: Path,
    space: Space = DEFAULT_SPACE,
    until: Bound | None = None,
    target: Path | None = None,
    progress: Progress | None = None,
) -> Rebuilt:
    """Rebuild both views from zero into ``target`` (the home by default)."""
    folder = target or home
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    state, stored, applied = fold_log(EventLog(home), until, progress)
    _build_database(folder, state.entries.values(), space, stored)
    with _md_lock(folder):
        notes = _write_markdown(
            folder, render.plan(state.entries.values()), load_state(folder), stored
        )
    live = sum(1 for e in state.entries.values() if e.live)
    return Rebuilt(applied, live, stored.seq, notes)


def _build_database(
    folder: Path, entries: Iterable[Entry], space: Space, stored: store.Stored
) -> None:
    _remove_stale_asides(folder)
    aside = folder / f".{store.DB_NAME}.rebuild-{os.getpid()}"
    _remove_db_files(aside)
    db = store.connect(aside)
    try:
        with store.transaction(db):
            store.write_entries(db, sorted(entries, key=lambda e: e.id), space.key)
            write_packed(db, folder / VECTOR_DIR, space)
            store.set_meta(db, {**_space_meta(space), **store.position_meta(stored)})
    finally:
        db.close()
    _switch_in(aside, db_path(folder))


def _switch_in(aside: Path, live_path: Path) -> None:
    """Copy the aside database into the live one (readers keep their snapshot)."""
    try:
        _backup_into(aside, live_path)
    except sqlite3.DatabaseError as exc:
        if not is_corrupt(exc):
            raise ViewError(f"cannot replace {live_path}: {exc}") from None
        _remove_db_files(live_path)  # unreadable: no reader can be using it
        os.replace(aside, live_path)
    else:
        _remove_db_files(aside)
    db = store.connect(live_path)
    try:
        collect_garbage(db, live_path.parent / VECTOR_DIR)
    finally:
        db.close()


def _backup_into(aside: Path, live_path: Path) -> None:
    source = sqlite3.connect(aside)
    try:
        live = store.connect(live_path)
        try:
            source.backup(live)
        finally:
            live.close()
    finally:
        source.close()


def _remove_db_files(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{path}{suffix}")


def _remove_stale_asides(folder: Path) -> None:
    """Asides left by a rebuild that was killed midway."""
    for path in folder.glob(f".{store.DB_NAME}.rebuild-*"):
        pid = path.name.split("rebuild-", 1)[1].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            path.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# -- digests -------------------------------------------------------------------

_ENC = msgspec.json.Encoder()
_DIGEST_TABLES = (
    ("_metadata", "key"),
    ("entries", "id"),
    ("vectors", "provider, model, entry_id"),
    ("vector_sets", "provider, model"),
)


def sqlite_digest(path: Path) -> str:
    """sha256 of the database's content in a canonical order (packed file names left out)."""
    db = store.connect(path, readonly=True)
    try:
        hasher = hashlib.sha256()
        for table, order in _DIGEST_TABLES:
            columns = "provider, model, dimensions, count" if table == "vector_sets" else "*"
            for row in db.execute(f"SELECT {columns} FROM {table} ORDER BY {order}"):
                hasher.update(_ENC.encode(row))
        return hasher.hexdigest()
    finally:
        db.close()


def entry_digests(path: Path) -> dict[str, str]:
    """A digest per entry row (for naming which entries drifted)."""
    db = store.connect(path, readonly=True)
    try:
        rows = db.execute(f"SELECT {store.QUOTED_COLUMNS} FROM entries ORDER BY id")
        return {row[0]: digest(_ENC.encode(row)) for row in rows}
    finally:
        db.close()


def markdown_files(folder: Path) -> dict[str, str]:
    """Digest of each markdown file the view wrote, as it is on disk now."""
    found = {}
    for rel in sorted(load_state(folder).files):
        try:
            found[rel] = digest((folder / rel).read_bytes())
        except FileNotFoundError:
            found[rel] = "missing"
    return found


def markdown_digest(folder: Path) -> str:
    return digest(_ENC.encode(sorted(markdown_files(folder).items())))
