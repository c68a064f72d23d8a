"""Choosing and formatting the memories injected at the start of work.

The semantic pipeline reads the SQLite view: candidates, a query from the
project's context, vector cosine (the query embedded within its own
deadline, dropped when late), FTS5 bm25, hybrid ranking, category balance.
With ``memory_semantic_enabled: false``, or when the view cannot be read,
the markdown pipeline of the cross-project memory spec runs instead and no
SQLite is opened.
"""

from __future__ import annotations

import concurrent.futures
import os
import sqlite3
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import msgspec
import numpy as np
import numpy.typing as npt

from memlog import ranking
from memlog.config import Config
from memlog.context import collect
from memlog.embeddings.base import EmbeddingProvider
from memlog.embeddings.registry import make_provider, space_for
from memlog.errors import MemlogError
from memlog.eventlog.events import Recalled
from memlog.eventlog.log import EventLog
from memlog.files import atomic_write
from memlog.projections.fold import Entry
from memlog.projections.markdown_view import legacy
from memlog.projections.markdown_view.kb_parser import ParsedEntry, parse_file
from memlog.projections.sqlite_view import retrieval, store
from memlog.projections.sqlite_view.vectors import Space
from memlog.projections.views import catch_up, lag_bytes

HEADER = "## Engineering Memory (from knowledge bank)"
SECTIONS = {
    "anti-patterns": "### Anti-Patterns to Avoid",
    "heuristics": "### Heuristics",
    "patterns": "### Patterns to Follow",
    "facts": "### Facts",
}
TYPE = {"anti-patterns": "Anti-Pattern", "patterns": "Pattern", "facts": "Fact"}
LAST_INJECTION = ".last-injection.json"
QUERY_SHOWN = 60


class Chosen(msgspec.Struct):
    id: str
    name: str
    category: str
    origin: str  # "local" (this project) or "global"
    score: float
    components: dict[str, float] = msgspec.field(default_factory=dict)


class Injection(msgspec.Struct):
    text: str
    mode: str
    chosen: list[Chosen] = msgspec.field(default_factory=list)
    query: str | None = None
    total: int = 0
    vector_matches: int = 0
    fts_matches: int = 0
    model: str = ""
    timings: dict[str, float] = msgspec.field(default_factory=dict)
    notes: list[str] = msgspec.field(default_factory=list)


class Request(msgspec.Struct):
    """What to inject for: a project, its configuration, and the time available."""

    home: Path
    root: Path | None
    project: str
    config: Config
    deadline: float
    limit: int | None = None
    query: str | None = None
    catch_up: bool = True
    #: search: only these categories, best first, no category balance
    categories: tuple[str, ...] | None = None
    #: a larger catch-up is left to a background process (None: no limit)
    max_catch_up_bytes: int | None = None
    #: seconds the query embedding may take (default: the configured budget)
    embed_budget: float | None = None

    @property
    def embedding_budget(self) -> float:
        if self.embed_budget is not None:
            return self.embed_budget
        return self.config.memory_query_embedding_budget_ms / 1000

    @property
    def effective_limit(self) -> int:
        return self.config.memory_injection_limit if self.limit is None else self.limit


def build(request: Request) -> Injection:
    """The injection for ``request`` (semantic, or markdown when semantic is off or fails)."""
    if not request.config.memory_semantic_enabled or _never_written(request.home):
        return markdown_injection(request)
    try:
        return semantic_injection(request)
    except (MemlogError, OSError, ValueError) as exc:
        fallback = markdown_injection(request)
        fallback.notes.append(f"semantic retrieval failed ({exc}); used markdown")
        return fallback
    except Exception as exc:  # noqa: BLE001 - sqlite3 errors among others
        fallback = markdown_injection(request)
        fallback.notes.append(f"semantic retrieval failed ({type(exc).__name__}: {exc})")
        return fallback


def _never_written(home: Path) -> bool:
    """No log and no view yet: an empty memory, not a failure to report."""
    return not (home / "events").is_dir() and not (home / store.DB_NAME).exists()


# -- semantic ---------------------------------------------------------------------------


def _categories(config: Config) -> tuple[str, ...]:
    base = ("anti-patterns", "heuristics", "patterns")
    return base + ("facts",) if config.memory_inject_facts else base


def semantic_injection(request: Request) -> Injection:
    timings: dict[str, float] = {}
    notes: list[str] = []
    space = space_for(request.config)
    started = time.perf_counter()
    if request.catch_up:
        _safe_catch_up(request, space, notes)
    timings["catch_up_ms"] = _ms(started)
    query = request.query if request.query is not None else collect(request.root).query
    db = _open_view(request.home)
    try:
        embedding = _start_embedding(request, query, notes) if _has_vectors(db, space) else None
        return _rank(request, db, query, embedding, space, timings, notes)
    finally:
        db.close()


def _has_vectors(db: sqlite3.Connection, space: Space) -> bool:
    """Whether any entry has a vector in ``space`` (else the query needs no embedding)."""
    row = db.execute(
        "SELECT 1 FROM vectors WHERE provider = ? AND model = ? AND dimensions = ? LIMIT 1", space
    ).fetchone()
    return row is not None


def _safe_catch_up(request: Request, space: Space, notes: list[str]) -> None:
    """Catch the views up, unless they are too far behind for the time there is.

    A catch-up cut off by the deadline would roll back and fail the same way
    at every start, so a large one is left to a background process instead.
    """
    try:
        behind = lag_bytes(request.home)
        if request.max_catch_up_bytes is not None and behind > request.max_catch_up_bytes:
            notes.append(f"views are {behind} bytes behind the log; catching up in the background")
            _catch_up_in_background(request.home)
            return
        catch_up(request.home, space)
    except (MemlogError, OSError) as exc:
        notes.append(f"views not caught up ({exc}); read as they are")


def _catch_up_in_background(home: Path) -> None:
    """Start ``memlog stats`` detached (it catches the views up); nothing waits for it."""
    null = [
        (os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY, 0)
        for fd in (0, 1, 2)
    ]
    os.posix_spawn(
        sys.executable,
        [sys.executable, "-m", "memlog", "stats", "--json"],
        {**os.environ, "MEMLOG_HOME": str(home)},
        file_actions=null,
        setsid=True,
    )


def _open_view(home: Path) -> sqlite3.Connection:
    path = home / store.DB_NAME
    if not path.exists():
        raise MemlogError(f"{path} does not exist")
    db = store.connect(path, readonly=True)
    db.execute("BEGIN")  # one snapshot for every read below
    return db


def _rank(
    request: Request,
    db: sqlite3.Connection,
    query: str | None,
    embedding: concurrent.futures.Future[npt.NDArray[np.float32]] | None,
    space: Space,
    timings: dict[str, float],
    notes: list[str],
) -> Injection:
    started = time.perf_counter()
    found = retrieval.candidates(db, request.categories or _categories(request.config))
    where = found.positions()
    keyword = _keyword(db, query, found.rowid_positions(), notes) if query else None
    timings["fts_ms"] = _ms(started)
    vector, matches = _vector(request, db, embedding, space, where, timings, notes)
    started = time.perf_counter()
    weights = ranking.Weights(
        request.config.memory_vector_weight,
        request.config.memory_keyword_weight,
        request.config.memory_prominence_weight,
    )
    days = ranking.days_since(found.updated_at, datetime.now(UTC))
    scores = ranking.score(
        vector,
        keyword,
        found.observation_count,
        found.confidence,
        days,
        found.recall_count,
        weights,
    )
    balanced = request.categories is None
    picked = ranking.select(found.categories, scores.final, request.effective_limit, balanced)
    entries = store.load_where(db, _id_filter(found.ids, picked), [found.ids[i] for i in picked])
    timings["rank_ms"] = _ms(started)
    return _semantic_result(
        request, found, picked, scores, entries, query, matches, space, notes, timings
    )


def _keyword(
    db: sqlite3.Connection, query: str, by_rowid: dict[int, int], notes: list[str]
) -> npt.NDArray[np.float64] | None:
    """bm25 scores, or None when the FTS5 index cannot be read (the signal is dropped)."""
    try:
        return retrieval.bm25_scores(db, query, by_rowid)
    except sqlite3.Error as exc:
        notes.append(f"keyword search unavailable ({exc}); ranked without it")
        return None


def _id_filter(ids: list[str], picked: list[int]) -> str:
    return f"id IN ({','.join('?' * len(picked))})" if picked else "0"


def _vector(
    request: Request,
    db: sqlite3.Connection,
    embedding: concurrent.futures.Future[npt.NDArray[np.float32]] | None,
    space: Space,
    where: dict[str, int],
    timings: dict[str, float],
    notes: list[str],
) -> tuple[npt.NDArray[np.float64] | None, int]:
    if embedding is None:
        return None, 0
    started = time.perf_counter()
    wait = min(request.deadline - time.monotonic(), request.embedding_budget)
    try:
        query_vector = embedding.result(timeout=max(wait, 0.0))
    except concurrent.futures.TimeoutError:
        notes.append("query embedding was late; ranked without it")
        return None, 0
    except Exception as exc:  # noqa: BLE001 - any provider failure drops the signal only
        notes.append(f"query embedding failed ({exc}); ranked without it")
        return None, 0
    finally:
        timings["embed_wait_ms"] = _ms(started)
    folder = request.home
    scores, matches = retrieval.vector_scores(db, folder, space, query_vector, where)
    return (scores if matches else None), matches


_POOL: concurrent.futures.ThreadPoolExecutor | None = None


def _start_embedding(
    request: Request, query: str | None, notes: list[str]
) -> concurrent.futures.Future[npt.NDArray[np.float32]] | None:
    """Embed the query in the background; the caller waits only as long as it may."""
    global _POOL
    if not query or request.config.memory_vector_weight <= 0:
        return None
    try:
        provider = make_provider(request.config, request.home)
    except MemlogError as exc:
        notes.append(f"embedding provider unavailable: {exc}")
        return None
    deadline = min(request.deadline, time.monotonic() + request.embedding_budget)
    if hasattr(provider, "deadline"):
        provider.deadline = deadline
    if _POOL is None:
        _POOL = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="embed")
    return _POOL.submit(_embed_once, provider, query)


def _embed_once(provider: EmbeddingProvider, query: str) -> npt.NDArray[np.float32]:
    try:
        return provider.embed(query, "query")
    finally:
        provider.close()


def _semantic_result(
    request: Request,
    found: retrieval.Candidates,
    picked: list[int],
    scores: ranking.Scores,
    entries: list[Entry],
    query: str | None,
    matches: int,
    space: Space,
    notes: list[str],
    timings: dict[str, float],
) -> Injection:
    by_id = {e.id: e for e in entries}
    chosen = [
        Chosen(
            id=found.ids[i],
            name=by_id[found.ids[i]].name,
            category=found.categories[i],
            origin="local" if by_id[found.ids[i]].source_project == request.project else "global",
            score=float(scores.final[i]),
            components=_components(scores, i),
        )
        for i in picked
    ]
    fts = int(np.count_nonzero(scores.keyword_raw))
    mode = "semantic" if matches else ("keyword" if fts else "prominence")
    result = Injection(
        text="", mode=mode, chosen=chosen, query=query, total=len(found.ids),
        vector_matches=matches, fts_matches=fts, model=space.model, timings=timings, notes=notes,
    )  # fmt: skip
    result.text = render_semantic([by_id[c.id] for c in chosen], result)
    return result


def _components(scores: ranking.Scores, i: int) -> dict[str, float]:
    names = ("vector_raw", "vector", "keyword_raw", "keyword", "observations", "confidence",
             "recency", "recall", "prominence", "final")  # fmt: skip
    found = {n: round(float(getattr(scores, n)[i]), 6) for n in names}
    found.update({f"weight_{k}": round(v, 6) for k, v in scores.weights._asdict().items()})
    return found


def entry_block(entry: Entry) -> str:
    """An entry as injected: header, description, its metadata lines."""
    title = (
        entry.name if entry.category == "heuristics" else f"{TYPE[entry.category]}: {entry.name}"
    )
    lines = [f"### {title}", entry.description, *(f"- {d}" for d in entry.details)]
    if entry.reasoning:
        lines.append(f"- Why: {' '.join(entry.reasoning.split())}")
    if entry.references:
        lines.append(f"- References: {', '.join(entry.references)}")
    lines.append(f"- Observation count: {entry.observation_count}")
    lines.append(f"- Confidence: {entry.confidence}")
    return "\n".join(lines)


def render_semantic(entries: list[Entry], result: Injection) -> str:
    if not entries:
        return ""
    parts = [HEADER]
    for category, title in SECTIONS.items():
        blocks = [entry_block(e) for e in entries if e.category == category]
        if blocks:
            parts.append(title + "\n" + "\n\n".join(blocks))
    return "\n\n".join(parts) + "\n\n---\n" + diagnostic(result) + "\n"


def diagnostic(result: Injection) -> str:
    """The D10 line that says how the memories were chosen."""
    count = len(result.chosen)
    if result.mode == "legacy":
        local = sum(1 for c in result.chosen if c.origin == "local")
        origins = f"{local} local, {count - local} global"
        return f"*Memory: {count} entries ({origins}) | semantic: disabled*"
    query = result.query or ""
    shown = query[:QUERY_SHOWN]
    state = f"active (vector={result.vector_matches}, fts5={result.fts_matches})"
    return (
        f'*Memory: {count} entries from {result.total} | semantic: {state} | context: "{shown}..." '
        f"| model: {result.model}*"
    )


# -- markdown (legacy) ----------------------------------------------------------------------


def markdown_injection(request: Request) -> Injection:
    """The cross-project memory spec's pipeline: markdown files only, no SQLite."""
    started = time.perf_counter()
    local, global_ = read_markdown_sources(request.root, request.home)
    picked = legacy.select_legacy(local, global_, request.effective_limit)
    # deduplication may keep the global copy of a local entry: origin is the copy chosen
    from_global = {id(e) for e in global_}
    chosen = [
        Chosen(
            id=e.content_hash,
            name=f"{e.header_type + ': ' if e.header_type else ''}{e.name}",
            category=e.category,
            origin="global" if id(e) in from_global else "local",
            score=float(e.observation_count),
        )  # fmt: skip
        for e in picked
    ]
    result = Injection(text="", mode="legacy", chosen=chosen, total=len(local) + len(global_))
    block = legacy.render_legacy_block(picked)
    result.text = block + "\n" + diagnostic(result) + "\n" if block else ""
    result.timings["markdown_ms"] = _ms(started)
    return result


def read_markdown_sources(
    root: Path | None, home: Path
) -> tuple[list[ParsedEntry], list[ParsedEntry]]:
    """Entries of the project's knowledge bank and of the global store files."""
    local: list[ParsedEntry] = []
    if root is not None:
        for name in ("anti-patterns", "heuristics", "patterns"):
            local += _parsed(root / "docs" / "knowledge-bank" / f"{name}.md")
    global_ = [e for name in ("anti-patterns", "heuristics", "patterns")
               for e in _parsed(home / f"{name}.md")]  # fmt: skip
    return local, global_


def _parsed(path: Path) -> list[ParsedEntry]:
    if not path.is_file():
        return []
    return parse_file(path).entries


# -- recording ---------------------------------------------------------------------------------


def record(request: Request, result: Injection, session_id: str = "") -> list[str]:
    """Append the ``entry.recalled`` event and rewrite ``.last-injection.json``."""
    notes: list[str] = []
    if not result.chosen:
        return notes
    try:
        EventLog(request.home, command="inject").append(
            [Recalled(ids=tuple(c.id for c in result.chosen), session_id=session_id,
                      project=request.project, query=result.query or "", mode=result.mode)]
        )  # fmt: skip
    except (MemlogError, OSError) as exc:
        notes.append(f"recall not recorded: {exc}")
    try:
        atomic_write(request.home / LAST_INJECTION, last_injection(request, result))
    except OSError as exc:
        notes.append(f"{LAST_INJECTION} not written: {exc.strerror}")
    return notes


def last_injection(request: Request, result: Injection) -> bytes:
    local = sum(1 for c in result.chosen if c.origin == "local")
    names = [
        c.name if result.mode == "legacy" else f"{TYPE.get(c.category, 'Heuristic')}: {c.name}"
        for c in result.chosen
    ]
    document = {
        "timestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "project": request.project,
        "entries_injected": len(result.chosen),
        "sources": {"local": local, "global": len(result.chosen) - local},
        "entry_names": names,
        "mode": result.mode,
        "timings_ms": result.timings,
    }
    return msgspec.json.format(msgspec.json.encode(document), indent=2) + b"\n"


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
