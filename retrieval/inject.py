"""Choosing the memories to inject: the semantic pipeline, or the markdown one.

The semantic pipeline ranks without numpy when it can (``light``), else
with it (``semantic``), once the views' freshness is judged here.  With
``memory_semantic_enabled: false`` the #023 markdown pipeline runs and no
SQLite is opened; when the view cannot be read the markdown pipeline
answers instead and says why in a note.  An empty home is not a failure.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from memlog.errors import MemlogError
from memlog.eventlog.scan import has_events
from memlog.projections.freshness import current_seq
from memlog.projections.sqlite_view.packsums import noticed, refused
from memlog.projections.sqlite_view.store import DB_NAME
from memlog.retrieval import light
from memlog.retrieval.request import Injection, Request


def build(request: Request) -> Injection:
    """The injection for ``request`` (semantic, or markdown when semantic is off or fails)."""
    semantic = request.semantic_only or request.config.memory_semantic_enabled
    if not semantic or never_written(request.home):
        return markdown_injection(request)
    try:
        if request.catch_up and current_seq(request.home, request.ws.space) is not None:
            request = msgspec.structs.replace(request, catch_up=False)  # nothing to catch up
        found = _ranked(request)
    except (MemlogError, OSError, ValueError) as exc:
        found = markdown_injection(request)
        found.notes.append(f"semantic retrieval failed ({exc}); used markdown")
    except Exception as exc:  # noqa: BLE001 - sqlite3 errors among others
        found = markdown_injection(request)
        found.notes.append(f"semantic retrieval failed ({type(exc).__name__}: {exc})")
    found.notes.extend(
        f"{n}: ranked from the rows; memlog replay writes it again" for n in noticed()
    )
    return found


def _ranked(request: Request) -> Injection:
    """The ranking; one that fails on a packed file's bytes (damage its quick check could
    not see) is made again from the rows, never left to inject nothing."""
    try:
        return light.run(request) or ranked_with_numpy(request)
    except (IndexError, KeyError, ValueError, UnicodeDecodeError, OverflowError) as exc:
        with refused():
            found = ranked_with_numpy(request)
        found.notes.append(
            f"ranking failed ({type(exc).__name__}: {exc}), ranked from the rows instead: "
            "memlog verify names a damaged packed file"
        )
        return found


def caught_up(request: Request) -> tuple[Request, list[str]]:
    """``request`` once the views are caught up (within its bounds: a large catch-up is
    left to a background process), for a caller that reads the views before ranking;
    the notes say what could not be done."""
    semantic = request.semantic_only or request.config.memory_semantic_enabled
    if not request.catch_up or not semantic or never_written(request.home):
        return request, []
    done = msgspec.structs.replace(request, catch_up=False)
    if current_seq(request.home, request.ws.space) is not None:
        return done, []
    from memlog.projections.freshness import lag_bytes
    from memlog.projections.runner import catch_up, catch_up_in_background

    try:
        behind = lag_bytes(request.home)
        most = request.max_catch_up_bytes
        if most is not None and behind > most:
            catch_up_in_background(request.home)
            return done, [f"views are {behind} bytes behind the log; catching up in the background"]
        catch_up(request.home, request.ws.space, lock_wait=request.lock_wait)
    except (MemlogError, OSError) as exc:
        return done, [f"views not caught up ({exc}); read as they are"]
    return done, []


def ranked_with_numpy(request: Request) -> Injection:
    """The numpy ranking (imported only when it answers: see ``light``)."""
    from memlog.retrieval.semantic import SemanticRun

    return SemanticRun(request).execute()


def markdown_injection(request: Request) -> Injection:
    """The #023 markdown pipeline (imported only when it answers: the hook rarely needs it)."""
    from memlog.retrieval.legacy import markdown_injection as legacy

    return legacy(request)


def never_written(home: Path) -> bool:
    """No log and no view yet: an empty memory, not a failure to report."""
    if (home / DB_NAME).exists():
        return False
    return not has_events(home)
