"""The synthetic logs every timing benchmark starts from (``benchmarks/synthetic.py``):
written through the appender as it is today, reproducible, and read back whole."""

from __future__ import annotations

import sys
from pathlib import Path

from memlog.eventlog.log import EventLog
from memlog.eventlog.verify import verify_log
from memlog.tests.support import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import synthetic  # noqa: E402


def test_a_small_synthetic_log_is_written_and_reads_back(tmp_path: Path) -> None:
    written = synthetic.generate(tmp_path / "a", entries=20, events=60, seed=3, batch=25)
    again = synthetic.generate(tmp_path / "b", entries=20, events=60, seed=3, batch=25)
    records = list(EventLog(tmp_path / "a").read())
    assert written == again == len(records) >= 60
    assert [r.event.seq for r in records] == list(range(1, len(records) + 1))
    assert [r.event.id for r in records] == [r.event.id for r in EventLog(tmp_path / "b").read()]
    assert verify_log(EventLog(tmp_path / "a")).clean
