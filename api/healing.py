"""Views found damaged are rebuilt from the log, now or by the next command that can.

``heal`` is what a command that met a damaged view does (SQLite called
``memory.db`` malformed): note the damage (``damage.mark``), then catch the
views up, which rebuilds them aside from the log and swaps them in.  A home
that cannot be written keeps the note for the next command that can.
"""

from __future__ import annotations

from memlog.errors import MemlogError
from memlog.home import Home
from memlog.projections.runner import catch_up
from memlog.projections.sqlite_view import damage, soundness
from memlog.vocabulary import DEFAULT_SPACE, Space


def heal(home: Home, reason: str, space: Space = DEFAULT_SPACE) -> bool:
    """Rebuild the views of ``home`` found damaged (``reason``); whether they are sound
    now (rebuilt here, or by another process whose rebuild, begun before the damage was
    noted, swapped in sound views and cleared the note meanwhile)."""
    if not damage.mark(home, reason):
        return False
    try:
        if catch_up(home, space).rebuilt:
            return True
    except (MemlogError, OSError):
        pass
    return damage.marked(home) is None and soundness.check(home) is None
