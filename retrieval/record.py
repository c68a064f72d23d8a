"""Recording an injection: one ``entry.recalled`` event and ``.last-injection.json``.

``recall_of`` says what to record (a ``Recall``, which another process can
write: the hook hands it to its recorder, see ``hooks.recorder``), ``write``
records it, ``record`` does both.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime

import msgspec

from memlog.errors import MemlogError
from memlog.eventlog import snapshot
from memlog.eventlog.bounds import slices
from memlog.eventlog.devices import local_digest
from memlog.eventlog.events import Recalled
from memlog.files import atomic_write
from memlog.home import Home
from memlog.retrieval.request import Injection, Request
from memlog.vocabulary import TYPE_NAMES

#: decimals of a score a recall keeps
SCORE_DIGITS = 4


class Recall(msgspec.Struct):
    """An injection to record: the event's fields and the tracking file's bytes.  It
    stays in the home (the hook hands it to its recorder); the event keeps only a keyed
    digest of ``query``."""

    ids: list[str]
    session_id: str
    project: str
    query: str
    mode: str
    last_injection: bytes
    #: a session start's source, or ``prompt`` (``Recalled.trigger``)
    trigger: str = ""
    #: each entry's final score, in the order of ``ids``
    scores: list[float] = msgspec.field(default_factory=list)


def recall_of(
    request: Request, result: Injection, session_id: str = "", trigger: str = ""
) -> Recall | None:
    """What recording ``result`` writes (None when nothing was chosen)."""
    if not result.chosen:
        return None
    return Recall(
        ids=[c.id for c in result.chosen], session_id=session_id, project=request.ws.project,
        query=result.query or "", mode=result.mode,
        last_injection=last_injection(request, result, trigger), trigger=trigger,
        scores=[round(c.score, SCORE_DIGITS) for c in result.chosen],
    )  # fmt: skip


def record(request: Request, result: Injection, session_id: str = "") -> list[str]:
    """Append the ``entry.recalled`` event and rewrite ``.last-injection.json``."""
    recall = recall_of(request, result, session_id)
    return write(request.home, recall, "inject") if recall is not None else []


def write(home: Home, recall: Recall, command: str, wait: bool = True) -> list[str]:
    """Record ``recall`` in ``home``'s log (as written by ``command``); notes of what failed.
    ``wait``: wait for another writer holding the log; else (the hook and its recorder)
    spool the event for it."""
    from memlog.eventlog.log import EventLog

    try:
        snapshot.refuse_writes(home, "record an injection in")
    except MemlogError as exc:
        return [f"recall not recorded: {exc}"]
    notes: list[str] = []
    try:
        log = EventLog(home, command=command)
        digest = local_digest(log.home, recall.query)
        # one event; several of one batch for thousands of ids (limit -1 on a large store)
        scores = _scores(recall)
        recalled = [
            Recalled(
                ids=ids, session_id=recall.session_id, project=recall.project, digest=digest,
                mode=recall.mode, trigger=recall.trigger,
                scores=tuple(scores[i] for i in ids) if scores else (),
            )
            for ids in slices(recall.ids)
        ]  # fmt: skip
        log.append(recalled) if wait else log.append_or_spool(recalled)
    except (MemlogError, OSError) as exc:
        notes.append(f"recall not recorded: {exc}")
    try:
        atomic_write(home.last_injection, recall.last_injection, home)
    except OSError as exc:
        notes.append(f"{home.last_injection.name} not written: {exc.strerror}")
    except MemlogError as exc:  # a link where it goes
        notes.append(f"{home.last_injection.name} not written: {exc}")
    return notes


def _scores(recall: Recall) -> dict[str, float]:
    """Each entry's score, when there is one finite score per entry (else none)."""
    scores = dict(zip(recall.ids, recall.scores, strict=False))
    if len(scores) != len(recall.ids) or len(recall.scores) != len(recall.ids):
        return {}
    return scores if all(math.isfinite(v) for v in scores.values()) else {}


def last_injection(request: Request, result: Injection, trigger: str = "") -> bytes:
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
        **({"trigger": trigger} if trigger else {}),
    }
    return msgspec.json.format(msgspec.json.encode(document), indent=2) + b"\n"
