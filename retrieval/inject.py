"""Choosing the memories to inject: the semantic pipeline, or the markdown one.

The semantic pipeline ranks without numpy when it can (``light``), else
with it (``semantic``), once the views' freshness is judged here.  With
``memory_semantic_enabled: false`` the #023 markdown pipeline runs and no
SQLite is opened; when the view cannot be read the markdown pipeline
answers instead and says why in a note.  An empty home is not a failure.
"""

from __future__ import annotations

import sqlite3
import time

import msgspec

from memlog.errors import LinkRefused, MemlogError
from memlog.eventlog.scan import has_events
from memlog.home import Home
from memlog.projections.freshness import current_seq
from memlog.projections.sqlite_view import damage
from memlog.projections.sqlite_view.packsums import noticed, refused
from memlog.retrieval import light
from memlog.retrieval.request import Injection, Request


def build(request: Request) -> Injection:
    """The injection for ``request`` (semantic, or markdown when semantic is off or fails)."""
    semantic = request.semantic_only or request.config.memory_semantic_enabled
    if not semantic or never_written(request.home):
        return markdown_injection(request)
    writes = request.catch_up  # (a caller that asked for no catch-up has no rebuild here)
    try:
        if request.catch_up and current_seq(request.home, request.ws.space) is not None:
            request = msgspec.structs.replace(request, catch_up=False)  # nothing to catch up
        found = _ranked(request)
    except sqlite3.DatabaseError as exc:
        if damage.is_corrupt(exc):
            found = _healed(request, exc, writes)
        else:
            found = _markdown(request, exc)
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


def _markdown(request: Request, exc: Exception) -> Injection:
    found = markdown_injection(request)
    found.notes.append(f"semantic retrieval failed ({type(exc).__name__}: {exc})")
    return found


#: bytes of log a rebuild of the views folds and writes in a second, at the least (what
#: decides whether one fits in the time a hook has left)
REBUILD_BYTES_PER_SECOND = 1 << 20


def _healed(request: Request, exc: sqlite3.DatabaseError, writes: bool) -> Injection:
    """The injection while damaged views are rebuilt from the log: the markdown pipeline's
    when it has entries and the caller writes no views (``writes``: it asked for a
    catch-up); else the ranking of views rebuilt here, when the rebuild fits in the time
    left; else the markdown pipeline's, the rebuild left to the background, and a note
    saying so (a start that injects nothing says why)."""
    from memlog.projections.runner import catch_up, catch_up_in_background

    home, space = request.home, request.ws.space
    damage.mark(home, f"{home.db.name}: {exc}")
    fallback = markdown_injection(request)
    if not writes and fallback.chosen:
        catch_up_in_background(home, request.ws.root)
        fallback.notes.append(f"{home.db.name} is damaged ({exc}): rebuilt in the background")
        return fallback
    left = request.deadline - time.monotonic()
    if log_bytes(home) <= left * REBUILD_BYTES_PER_SECOND:
        try:
            catch_up(home, space, lock_wait=request.lock_wait)  # rebuilt: marked damaged
            return _ranked(msgspec.structs.replace(request, catch_up=False))
        except Exception as again:  # noqa: BLE001 - the rebuild failed as well: say so below
            exc = sqlite3.DatabaseError(f"{exc}; rebuilding failed: {again}")
    catch_up_in_background(home, request.ws.root)
    fallback.notes.append(
        f"{home.db.name} is damaged ({exc}): it is being rebuilt from the log in the background; "
        "this time ranked from the markdown files"
    )
    return fallback


def log_bytes(home: Home) -> int:
    """The bytes of the log (what a rebuild folds)."""
    from memlog.eventlog.merged import unread_bytes
    from memlog.eventlog.reader import START

    return unread_bytes(home, START) or 0


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
    except LinkRefused:
        raise  # never read past: the command stops there
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


def never_written(home: Home) -> bool:
    """No log and no view yet: an empty memory, not a failure to report."""
    if home.db.exists():
        return False
    return not has_events(home)
