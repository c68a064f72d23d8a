"""``verify`` compares the views with a rebuild at the same log position.

While a loop of ``observe`` ran in another process, 20 of 23 runs of
``verify`` reported drift ("not in the log", "edited by hand?"): the rebuild
aside stopped where a catch-up had stopped, and the live views were read
after other writers had moved them on.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from memlog.eventlog.events import Observed
from memlog.eventlog.log import EventLog
from memlog.home import Home
from memlog.projections.audit import audit
from memlog.projections.runner import catch_up
from memlog.vocabulary import DEFAULT_SPACES

SPACE = DEFAULT_SPACES["hashing"]

WRITER = r"""
import sys
from pathlib import Path
from memlog.eventlog.events import Observed, Promoted
from memlog.eventlog.log import EventLog
from memlog.projections.runner import catch_up
from memlog.vocabulary import DEFAULT_SPACES

home, n = Path(sys.argv[1]), 0
log = EventLog(home)
while True:  # what `memlog observe` does: append, then bring the views up to date
    n += 1
    (added,) = log.append([Observed(name=f"Loop {n}", description=f"Lesson from loop {n}.",
                                    category="patterns", project="p")])
    if n % 3 == 0:
        log.append([Promoted(entry_id=added.entry_id)])
    catch_up(home, DEFAULT_SPACES["hashing"])
"""


def seed(home: Path) -> None:
    EventLog(home).append(
        [
            Observed(name=f"Seed {i}", description=f"Seed lesson {i}.", category="facts")
            for i in range(5)
        ]
    )
    catch_up(home, SPACE)


def test_an_audit_of_quiet_views_is_clean(memlog_home: Path) -> None:
    seed(memlog_home)
    found = audit(Home(memlog_home), SPACE)
    assert found.clean and found.seq == 5 and found.sqlite_live == found.sqlite_rebuilt


def test_views_edited_behind_memlog_s_back_are_still_drift(memlog_home: Path) -> None:
    seed(memlog_home)
    md = sorted(memlog_home.rglob("*.md"))[0]
    md.write_text(md.read_text() + "\nedited\n")
    found = audit(Home(memlog_home), SPACE)
    assert not found.clean and any("edited by hand" in d for d in found.drift)


@pytest.mark.slow
def test_writers_running_are_not_drift(memlog_home: Path) -> None:
    seed(memlog_home)
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(memlog_home)])
    try:
        time.sleep(1.0)
        runs = [audit(Home(memlog_home), SPACE) for _ in range(6)]
        assert writer.poll() is None  # it wrote all along
    finally:
        writer.kill()
        writer.wait()
    assert all(r.clean for r in runs), [r.drift for r in runs if not r.clean]
    assert runs[-1].seq > runs[0].seq > 5  # the log grew between the audits
