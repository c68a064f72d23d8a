"""Views after a sync: what it received, folded into them, as a replay would fold it.

A sync that received nothing leaves them as they are.  Events received that
sort after everything folded are applied as local ones are; events that sort
before (a machine that was offline, a clock behind) have the entries and
sessions they touch folded again from the log (``runner.catch_up``), unless
they create an entry before entries the views already hold, which moves every
packed record after it: then the views are rebuilt.  The views' content is a
replay's, whatever order events arrived in: every row, every packed record,
every markdown file.  A home that has folded nothing yet (one joining) builds
its views from zero, as ``memlog replay`` does.
"""

from __future__ import annotations

import sqlite3

from memlog.errors import MemlogError, describe
from memlog.home import Home
from memlog.projections.runner import catch_up
from memlog.vocabulary import Space


def settle(home: Home, space: Space) -> str:
    """Bring the views up to the end of the log; say what that took."""
    try:
        done = catch_up(home, space)
    except (MemlogError, OSError, sqlite3.Error) as exc:
        return f"not brought up to date ({describe(exc).message}); memlog replay rebuilds them"
    if done.rebuilt:
        return "rebuilt"
    if not done.applied:
        return "unchanged"
    late = f", {done.late} of them sorted before what the views held" if done.late else ""
    return f"applied {done.applied} event{'s' if done.applied != 1 else ''}{late}"
