"""The health of a home, for ``memlog doctor``: each check one line with a status.

A check is ``ok``, ``warn`` (works, but something is left to do) or
``problem`` (something does not work).  A diagnosis writes nothing: not to
the home (the views are read as they are, an iflow store waiting to be
adopted is reported, not adopted), not to the cache (the local model is
verified and run without keeping its digests or runtime weights), and no
network is called.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal, NamedTuple

from memlog import claude_files
from memlog.api import reading
from memlog.api.adoption import pending_store
from memlog.capture.extraction.prompts import MAX_TRANSCRIPT_CHARS
from memlog.errors import MemlogError
from memlog.eventlog.devices import known_device_id
from memlog.home import Home, hook_errors
from memlog.llm.endpoints import Destination, destination
from memlog.projections.freshness import current_seq
from memlog.projections.sqlite_view import queries, store
from memlog.workspace import Workspace

Status = Literal["ok", "warn", "problem"]


class Check(NamedTuple):
    name: str
    status: Status
    detail: str


Figures = dict[str, object]


def figures(ws: Workspace) -> Figures:
    """The statistics the checks read, from the views as they are (empty for a home with
    nothing in it)."""
    return reading.stats(ws, catch_up=False) if not reading.is_empty(ws) else {}


def views(ws: Workspace, stats: Figures) -> Check:
    """Whether the views already reflect the whole log (they are not caught up here)."""
    if not stats:
        return Check("views", "ok", "none yet")
    if current_seq(ws.home, ws.space) is None:
        return Check("views", "warn", "behind the log: the next memlog command catches them up")
    return Check("views", "ok", "current with the log")


def home(ws: Workspace, stats: Figures) -> Check:
    """Where the home is, whether memlog can write there, and what it holds."""
    where = ws.home
    if not ws.home.exists():
        return Check("home", "ok", f"{where} (not created yet: {reading.NO_MEMORIES})")
    if not os.access(where, os.W_OK | os.X_OK):
        return Check("home", "problem", f"{where} is not writable: nothing can be recorded")
    waiting = pending_store(where)
    if waiting:
        names = ", ".join(p.name for p in waiting)
        return Check("home", "warn", f"{where}: iflow store files ({names}) not adopted yet")
    if not stats:
        return Check("home", "ok", f"{where}: {reading.NO_MEMORIES}")
    entries: dict[str, object] = stats["entries"]  # type: ignore[assignment]
    said = f"{where}: {stats['events']} events, {entries['live']} live entries"
    states: dict[str, int] = entries.get("by_status") or {}  # type: ignore[assignment]
    if states.get("held"):
        return Check("home", "warn", f"{said}, {states['held']} held for review (memlog review)")
    return Check("home", "ok", said)


def model(ws: Workspace) -> Check:
    """The embedding model in force: found and verified (the local one is also run once)."""
    space = ws.space
    if space.provider == "hashing":
        return Check("model", "ok", f"{space.key}: built in, no model file")
    if space.provider != "local":
        try:
            ws.provider().close()
        except MemlogError as exc:
            return Check("model", "problem", f"{space.key}: {exc}")
        return Check("model", "ok", f"{space.key}: configured (doctor calls no API)")
    try:
        from memlog.embeddings.local import LocalProvider, resolve_model_dir

        path = ws.config.memory_embedding_model_path
        found = resolve_model_dir(Path(path) if path else None)
        # no cache: the digests are checked and the weights built anew, and nothing is kept
        vector = LocalProvider(found, cache_dir=None).embed("memlog doctor")  # verifies first
    except (MemlogError, ImportError) as exc:
        return Check("model", "problem", f"{space.key}: {exc}")
    dims = vector.shape[-1]
    return Check("model", "ok", f"{space.key}: {found} (sha256 verified, {dims} dimensions)")


def extraction_said(
    ws: Workspace, env: Mapping[str, str] = os.environ, reach: bool = True
) -> tuple[str, str]:
    """Which provider extraction uses, and what it sends where with its daily budget
    (``reach``: whether an Ollama server listens is checked, not assumed)."""
    return _said(ws, destination(ws.config.memory_extraction_provider, env, reach))


def _said(ws: Workspace, found: Destination) -> tuple[str, str]:
    config = ws.config
    mode = config.memory_extraction_provider
    if mode == "off":
        return "off", "no session is sent anywhere (memory_extraction_provider)"
    if found.missing:
        return mode, f"nothing is sent: no provider can be used ({found.missing})"
    budget = config.memory_extraction_daily_budget_usd
    cost = f"at most ${budget:.2f} a day (memory_extraction_daily_budget_usd)"
    return found.provider, (
        f"when a session ends, its prompts and replies (at most {MAX_TRANSCRIPT_CHARS:,} "
        "characters, without <private> text or anything that looks like a secret) go to "
        f"{found.where}, {cost if found.paid else 'at no cost'}; "
        "memory_extraction_provider: off keeps them here"
    )


def extraction_notice(
    ws: Workspace, env: Mapping[str, str] = os.environ, reach: bool = True
) -> str:
    """The sentence setup and the first session say: ``memlog extraction (…): …``."""
    provider, said = extraction_said(ws, env, reach)
    return f"memlog extraction ({provider}): {said}"


def extraction(ws: Workspace, env: Mapping[str, str] = os.environ) -> Check:
    """Which provider extraction uses, what it sends and the budget (nothing is sent; an
    Ollama server's port is connected to, to say whether one listens)."""
    found = destination(ws.config.memory_extraction_provider, env, reach=True)
    provider, said = _said(ws, found)
    status: Status = "warn" if found.missing and provider != "off" else "ok"
    return Check("extraction", status, f"{provider}: {said}")


def vectors(ws: Workspace, stats: Figures) -> Check:
    embeddings = stats.get("embeddings")
    pending = embeddings.get("pending", 0) if isinstance(embeddings, dict) else 0
    if pending:
        return Check("vectors", "warn", f"{pending} entries without a vector: memlog reembed")
    return Check("vectors", "ok", f"every live entry has a vector in {ws.space.key}")


def sessions(stats: Figures) -> Check:
    """Sessions waiting for extraction, and those it failed, as the statistics count them."""
    extraction = stats.get("extraction")
    counted = extraction.get("sessions") if isinstance(extraction, dict) else None
    pending = counted.get("pending", 0) if isinstance(counted, dict) else 0
    failed = counted.get("failed", 0) if isinstance(counted, dict) else 0
    if pending or failed:
        detail = f"{pending} sessions waiting for extraction, {failed} failed (memlog memorize)"
        return Check("sessions", "warn", detail)
    return Check("sessions", "ok", "no session waiting for extraction")


def auto_memory(ws: Workspace, where: Path | None = None) -> Check:
    """Claude Code's auto memory for the project: whether it is on, its folder, how many
    memory files it holds and how many of them memlog has recorded (nothing is written)."""
    cwd = str(where or ws.root or Path.cwd())
    on, why = claude_files.auto_memory_on(cwd)
    folder = claude_files.memory_folder(cwd)
    files = sum(1 for _ in claude_files.memory_files(folder)) if folder.is_dir() else 0
    device = known_device_id(ws.home)
    prefix = claude_files.origin_prefix(device, folder)
    recorded = len(queries.with_origin(ws.home, "claude-code", prefix)) if device else 0
    state = "on" if on else "off"
    found = f"{files} memory files, {recorded} recorded in memlog" if files else "no memory files"
    return Check("auto memory", "ok", f"{state} ({why}); {folder}: {found}")


def log(ws: Workspace) -> Check:
    """Every line of the log checked (reading only): damaged lines, and events lost to
    damage that a repair moved to the quarantine file."""
    from memlog.eventlog.verify import lost_summary, verify_log

    found = ws.log()
    if not found.segments():
        return Check("log", "ok", "empty")
    report = verify_log(found, finish=False)
    problems = report.problems()
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        fix = "memlog verify names them; memlog verify --repair moves them to quarantine.jsonl"
        return Check("log", "problem", f"{problems[0]}{more}; {fix}")
    if report.acknowledged_gaps:
        return Check("log", "warn", lost_summary(report.acknowledged_gaps))
    return Check("log", "ok", f"{report.events} events, every line checked")


def errors(ws: Workspace) -> Check:
    found = hook_errors(ws.home)
    if found["count"]:
        return Check("hook errors", "warn", f"{found['count']}; last: {found['last']}")
    return Check("hook errors", "ok", "none")


def disk_use(home: Home) -> dict[str, int]:
    """Bytes the home uses: the log, memory.db (with its WAL), vectors, markdown, the rest."""
    use = {"log": 0, "memory.db": 0, "vectors": 0, "markdown": 0, "other": 0}
    for folder, _, names in os.walk(home):
        for name in names:
            path = Path(folder) / name
            try:
                use[_kind(home, path)] += path.stat().st_size
            except OSError:
                continue
    return use


def _kind(home: Home, path: Path) -> str:
    if path.is_relative_to(home.events):
        return "log"
    if path.is_relative_to(home.legacy_vectors):
        return "vectors"
    if path.parent == home.root and path.name.startswith(home.db.name):
        return "memory.db"
    return "markdown" if path.name.endswith(".md") else "other"


def disk(ws: Workspace) -> Check:
    use = disk_use(ws.home) if ws.home.exists() else {}
    parts = ", ".join(f"{k} {_size(v)}" for k, v in use.items() if v)
    return Check("disk", "ok", f"{_size(sum(use.values()))}" + (f" ({parts})" if parts else ""))


def _size(n: int) -> str:
    value, unit = float(n), "B"
    for bigger in ("KB", "MB", "GB"):
        if value < 1024:
            break
        value, unit = value / 1024, bigger
    return f"{n} B" if unit == "B" else f"{value:.1f} {unit}"


def checks(ws: Workspace) -> list[Check]:
    """Every check of the home, in the order doctor prints them; nothing is written."""
    with store.untouched():
        return _checks(ws)


def _checks(ws: Workspace) -> list[Check]:
    stats = figures(ws)
    return [
        home(ws, stats), log(ws), views(ws, stats), model(ws), extraction(ws),
        vectors(ws, stats), sessions(stats), auto_memory(ws), errors(ws), disk(ws),
    ]  # fmt: skip
