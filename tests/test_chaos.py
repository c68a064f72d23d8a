"""The model-based chaos run (``benchmarks/chaos.py``), bounded for the suite.

Three homes share one bare remote; random operations (observe, batches,
imports, both hooks, catch-up, sync, redact, retire, replay, reads) run two or
more at a time per home, some killed with SIGKILL at a random moment, between
copies of a home, deleted segments, damaged databases and clocks set hours or
a year off.  After every step each home's views must be what a replay of its
own log makes, and nothing acknowledged may be missing; after a final round of
syncs every home must hold the same events and views.  The seed is printed
(``python benchmarks/chaos.py --seed N`` runs the same operations again);
``MEMLOG_CHAOS_SECONDS`` sets how long the suite's run lasts (120 by default).
"""

from __future__ import annotations

import os
import random
import shutil
import sys
from pathlib import Path

import pytest

from memlog.tests.support import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import chaos  # noqa: E402


@pytest.mark.slow
def test_no_step_parts_a_view_from_its_log_and_the_homes_converge(
    capsys: pytest.CaptureFixture[str],
) -> None:
    seed = int(os.environ.get("MEMLOG_CHAOS_SEED") or random.randrange(1 << 30))
    seconds = float(os.environ.get("MEMLOG_CHAOS_SECONDS") or 120)
    memlog = shutil.which("memlog") or str(Path(sys.executable).with_name("memlog"))
    with capsys.disabled():
        print(f"\nchaos: seed {seed} ({seconds:.0f} s)", flush=True)
    ok, run = chaos.chaos(seed, seconds, memlog)
    said = capsys.readouterr().out
    assert ok, f"seed {seed}: {said}"
    assert run.steps >= 3 and run.ops >= 10
