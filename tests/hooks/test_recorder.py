"""The SessionStart hook's recorder: what it writes after the hook has answered."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memlog.config import Config
from memlog.eventlog.devices import local_digest
from memlog.eventlog.events import Observed, Recalled, SessionPending
from memlog.eventlog.log import EventLog
from memlog.home import Home
from memlog.hooks import recorder, session_start
from memlog.projections.freshness import current_seq
from memlog.projections.runner import catch_up
from memlog.retrieval.record import Recall
from memlog.spawn import BLAS_PINNED, MAX_STDIN, child_environ

SPACE = Config(memory_embedding_provider="hashing").space


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    EventLog(home).append([Observed(name="A", description="Pin the tools.", category="patterns")])
    catch_up(home, SPACE)
    return home


def recall(query: str = "tools") -> Recall:
    return Recall(
        ids=["0123456789abcdef"], session_id="s-1", project="p", query=query,
        mode="keyword", last_injection=b'{"mode": "keyword"}\n',
    )  # fmt: skip


def recalls(home: Path) -> list[Recalled]:
    return [r.event for r in EventLog(home).read() if isinstance(r.event, Recalled)]


def test_the_recorder_writes_after_the_hook_and_leaves_the_views_current(
    home: Path, tmp_path: Path
) -> None:
    payload = {"session_id": "s-1", "cwd": str(tmp_path), "source": "startup"}
    handover = recorder.Handover(payload=payload, marker="", recall=recall(), space=tuple(SPACE))
    recorder.hand_over(Home(home), handover)
    assert recorder.settled(Home(home)), "the recorder did not finish"
    (recalled,) = recalls(home)
    # the text ranked stays here: the event keeps a digest under this home's own key
    assert (recalled.session_id, recalled.query) == ("s-1", "")
    assert recalled.digest == local_digest(Home(home), "tools") != ""
    assert recalled.writer is not None and recalled.writer.command == "inject"
    started = [r.event for r in EventLog(home).read() if isinstance(r.event, SessionPending)]
    assert [e.session_id for e in started] == ["s-1"]
    assert (home / ".last-injection.json").read_bytes() == b'{"mode": "keyword"}\n'
    assert current_seq(Home(home), SPACE) is not None  # the next start reads without catching up
    assert not list((home / ".recording").iterdir())
    assert not (home / "hook-errors.log").exists()


def test_a_handover_too_large_for_a_pipe_is_written_by_the_hook_itself(
    home: Path, tmp_path: Path
) -> None:
    payload = {"session_id": "s-2", "cwd": str(tmp_path), "source": "startup"}
    big = recall("x" * (MAX_STDIN + 1))
    session_start.leave(payload, Home(home), {"recall": big, "space": tuple(SPACE)})
    big_digest = local_digest(Home(home), "x" * (MAX_STDIN + 1))
    assert [(e.query, e.digest) for e in recalls(home)] == [("", big_digest)]
    assert "recorder not started" in (home / "hook-errors.log").read_text()
    assert not list((home / ".recording").iterdir())


def test_nothing_to_hand_over_starts_nothing(home: Path) -> None:
    session_start.leave({}, Home(home), {"space": tuple(SPACE)})  # no recall, no session
    assert not (home / ".recording").exists()


def test_a_broken_handover_is_logged_and_the_recorder_exits_cleanly(home: Path) -> None:
    env = {**os.environ, "MEMLOG_HOME": str(home)}
    done = subprocess.run(
        [sys.executable, "-m", "memlog", "hook", "record"], input=b"{not json", env=env,
        capture_output=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout == b""
    assert "recorder: no handover" in (home / "hook-errors.log").read_text()


def test_the_hook_pins_blas_for_itself_and_not_for_its_children(tmp_path: Path) -> None:
    code = (
        "import json, os\n"
        "from memlog.hooks.session_start import pin_blas\n"
        "pin_blas()\n"
        "print(json.dumps([os.environ.get('OPENBLAS_NUM_THREADS'), os.environ.get('"
        + BLAS_PINNED
        + "')]))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", BLAS_PINNED)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, check=True)
    assert json.loads(done.stdout) == ["1", "1"]
    mine = subprocess.run(
        [sys.executable, "-c", code], env={**env, "OPENBLAS_NUM_THREADS": "2"},
        capture_output=True, check=True,
    )  # fmt: skip
    assert json.loads(mine.stdout) == ["2", None]  # a user's own setting is left alone
    pinned = {"OPENBLAS_NUM_THREADS": "1", BLAS_PINNED: "1", "KEEP": "y"}
    assert child_environ(pinned, tmp_path) == {"KEEP": "y", "MEMLOG_HOME": str(tmp_path)}
    own = {"OPENBLAS_NUM_THREADS": "1"}
    assert child_environ(own, tmp_path)["OPENBLAS_NUM_THREADS"] == "1"
