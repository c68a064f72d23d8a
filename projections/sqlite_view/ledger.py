"""Sessions of Claude Code, the spend of model calls and maintenance times in ``memory.db``.

The fold keeps them in ``State.sessions``, ``State.spend`` and
``State.maintenance``; ``load`` reads the rows the next events will change,
``write`` stores what the fold made of them (inside the catch-up's
transaction, with the entries), and the questions below read them back.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any, TypeVar

import msgspec

from memlog.eventlog.events import (
    Event,
    Influenced,
    MemoryEvolved,
    Recalled,
    SessionPending,
    SessionProgress,
)
from memlog.home import Home
from memlog.projections.fold import Session, Spend, State
from memlog.projections.sqlite_view import store

S = TypeVar("S", Session, Spend)
SESSION_COLUMNS = tuple(f.name for f in msgspec.structs.fields(Session))
SPEND_COLUMNS = tuple(f.name for f in msgspec.structs.fields(Spend))
MAINTENANCE_PREFIX = "maintenance_"
#: columns of the sessions table that hold a list (as JSON)
_LISTS = ("received", "judged")
_JSON = msgspec.json.Encoder()
_LIST = msgspec.json.Decoder(list[str])


def _quoted(columns: Iterable[str]) -> str:
    return ", ".join(f'"{c}"' for c in columns)


def _upsert(table: str, columns: tuple[str, ...]) -> str:
    updates = ", ".join(f'"{c}" = excluded."{c}"' for c in columns[1:])
    marks = ", ".join("?" * len(columns))
    return (
        f"INSERT INTO {table} ({_quoted(columns)}) VALUES ({marks}) "
        f'ON CONFLICT("{columns[0]}") DO UPDATE SET {updates}'
    )


def _rows(db: sqlite3.Connection, kind: type[S], table: str, keys: list[str]) -> list[S]:
    columns = SESSION_COLUMNS if kind is Session else SPEND_COLUMNS
    found: list[S] = []
    for start in range(0, len(keys), 500):
        chunk = keys[start : start + 500]
        marks = ",".join("?" * len(chunk))
        select = f'SELECT {_quoted(columns)} FROM {table} WHERE "{columns[0]}" IN ({marks})'
        found += [_row(kind, columns, row) for row in db.execute(select, chunk)]
    return found


def _row(kind: type[S], columns: tuple[str, ...], row: tuple[Any, ...]) -> S:
    values = dict(zip(columns, row, strict=True))
    for column in _LISTS:
        if column in values:
            values[column] = _LIST.decode(values[column])
    return kind(**values)


def touched_keys(events: Iterable[Event]) -> tuple[list[str], list[str]]:
    """The session ids and the days the ledger rows of ``events`` are about (a recall
    names the session that received it, a judgment the session judged)."""
    sessions: set[str] = set()
    days: set[str] = set()
    for event in events:
        if isinstance(event, Recalled | Influenced) and event.session_id:
            sessions.add(event.session_id)
        elif isinstance(event, SessionPending | SessionProgress | MemoryEvolved):
            if event.session_id:
                sessions.add(event.session_id)
            days.add(event.ts[:10])
    return sorted(sessions), sorted(days)


def load(db: sqlite3.Connection, state: State, events: Iterable[Event]) -> None:
    """Put the rows ``events`` will change into ``state`` (before they are folded)."""
    sessions, days = touched_keys(events)
    state.sessions.update({s.id: s for s in stored_sessions(db, sessions)})
    state.spend.update({s.day: s for s in stored_spend(db, days)})


def stored_sessions(db: sqlite3.Connection, ids: Iterable[str]) -> list[Session]:
    """The rows of the sessions ``ids`` this snapshot holds."""
    return _rows(db, Session, "sessions", sorted(set(ids)))


def stored_spend(db: sqlite3.Connection, days: Iterable[str]) -> list[Spend]:
    """The spend rows of ``days`` this snapshot holds."""
    return _rows(db, Spend, "spend", sorted(set(days)))


def stored_maintenance(db: sqlite3.Connection) -> dict[str, str]:
    """When each maintenance task last ran, as this snapshot holds it."""
    rows = db.execute(
        "SELECT key, value FROM _metadata WHERE key LIKE ?", (MAINTENANCE_PREFIX + "%",)
    )
    return {str(k).removeprefix(MAINTENANCE_PREFIX): str(v) for k, v in rows}


def write(db: sqlite3.Connection, state: State, everything: bool = False) -> None:
    """Store the sessions, days and maintenance times the fold changed (all of them with
    ``everything``), inside the caller's transaction."""
    touched = state.touched_ledger
    sessions = [s for s in state.sessions.values() if everything or f"session:{s.id}" in touched]
    days = [d for d in state.spend.values() if everything or f"spend:{d.day}" in touched]
    _store(db, "sessions", SESSION_COLUMNS, sessions)
    _store(db, "spend", SPEND_COLUMNS, days)
    store.set_meta(db, {MAINTENANCE_PREFIX + k: v for k, v in state.maintenance.items()})
    touched.clear()


def _store(db: sqlite3.Connection, table: str, columns: tuple[str, ...], rows: list[Any]) -> None:
    values = [tuple(_cell(getattr(r, c)) for c in columns) for r in sorted(rows, key=_key)]
    db.executemany(_upsert(table, columns), values)


def _cell(value: Any) -> Any:
    return _JSON.encode(value).decode("utf-8") if isinstance(value, list) else value


def _key(row: Session | Spend) -> str:
    return row.id if isinstance(row, Session) else row.day


# -- questions ------------------------------------------------------------------------------


def sessions(
    home: Home, statuses: Iterable[str] = (), ids: Iterable[str] = (), limit: int = 1000
) -> list[Session]:
    """Sessions with one of ``statuses`` (or of ``ids``), oldest first; none without a view."""
    where, params = [], []
    wanted, named = sorted(set(statuses)), sorted(set(ids))
    if wanted:
        where.append(f"status IN ({','.join('?' * len(wanted))})")
        params += wanted
    if named:
        where.append(f"id IN ({','.join('?' * len(named))})")
        params += named
    clause = f"WHERE {' AND '.join(where)}" if where else ""
    select = f"SELECT {_quoted(SESSION_COLUMNS)} FROM sessions {clause} ORDER BY first_seen, id"
    if not home.db.exists():
        return []
    with store.opened(home.db, readonly=True) as db:
        rows = db.execute(f"{select} LIMIT ?", [*params, limit]).fetchall()
    return [_row(Session, SESSION_COLUMNS, row) for row in rows]


def unjudged(home: Home, limit: int = 1000) -> list[Session]:
    """Sessions that ended with lessons they received not judged yet, newest first."""
    if not home.db.exists():
        return []
    select = (
        f"SELECT {_quoted(SESSION_COLUMNS)} FROM sessions WHERE unjudged > 0 "
        "AND status != 'open' ORDER BY first_seen DESC, id LIMIT ?"
    )
    with store.opened(home.db, readonly=True) as db:
        rows = db.execute(select, (limit,)).fetchall()
    return [_row(Session, SESSION_COLUMNS, row) for row in rows]


def session_counts(home: Home) -> dict[str, int]:
    """How many sessions have each status."""
    if not home.db.exists():
        return {}
    with store.opened(home.db, readonly=True) as db:
        rows = db.execute("SELECT status, count(*) FROM sessions GROUP BY status ORDER BY status")
        return {status: int(count) for status, count in rows}


def spend(home: Home, day: str | None = None) -> Spend:
    """Model calls of ``day`` (a ``YYYY-MM-DD`` UTC date), or of every day together."""
    total = Spend(day=day or "")
    if not home.db.exists():
        return total
    columns = "coalesce(sum(calls), 0), coalesce(sum(tokens_in), 0), "
    columns += "coalesce(sum(tokens_out), 0), coalesce(sum(cost_micros), 0)"
    where, params = ("WHERE day = ?", [day]) if day else ("", [])
    with store.opened(home.db, readonly=True) as db:
        row = db.execute(f"SELECT {columns} FROM spend {where}", params).fetchone()
    total.calls, total.tokens_in, total.tokens_out, total.cost_micros = (int(v) for v in row)
    return total


def maintenance_times(home: Home) -> dict[str, str]:
    """When each maintenance task last ran (``weekly``, ``monthly``)."""
    if not home.db.exists():
        return {}
    with store.opened(home.db, readonly=True) as db:
        rows = db.execute(
            "SELECT key, value FROM _metadata WHERE key LIKE ? ORDER BY key",
            (MAINTENANCE_PREFIX + "%",),
        )
        return {k.removeprefix(MAINTENANCE_PREFIX): v for k, v in rows}
