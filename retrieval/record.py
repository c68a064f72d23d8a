"""Recording an injection: one ``entry.recalled`` event and ``.last-injection.json``."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec

from memlog.errors import MemlogError
from memlog.eventlog import snapshot
from memlog.eventlog.events import Recalled
from memlog.files import atomic_write
from memlog.retrieval.request import Injection, Request
from memlog.vocabulary import TYPE_NAMES

LAST_INJECTION = ".last-injection.json"


def record(request: Request, result: Injection, session_id: str = "") -> list[str]:
    """Append the ``entry.recalled`` event and rewrite ``.last-injection.json``."""
    notes: list[str] = []
    if not result.chosen:
        return notes
    try:
        snapshot.refuse_writes(request.home, "record an injection in")
    except MemlogError as exc:
        return [f"recall not recorded: {exc}"]
    recalled = Recalled(
        ids=tuple(c.id for c in result.chosen), session_id=session_id,
        project=request.ws.project, query=result.query or "", mode=result.mode,
    )  # fmt: skip
    try:
        request.ws.log("inject").append([recalled])
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
        c.name
        if result.mode == "legacy"
        else f"{TYPE_NAMES.get(c.category, 'Heuristic')}: {c.name}"
        for c in result.chosen
    ]
    document = {
        "timestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "project": request.ws.project,
        "entries_injected": len(result.chosen),
        "sources": {"local": local, "global": len(result.chosen) - local},
        "entry_names": names,
        "mode": result.mode,
        "timings_ms": result.timings,
    }
    return msgspec.json.format(msgspec.json.encode(document), indent=2) + b"\n"
