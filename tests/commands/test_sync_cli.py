"""``memlog sync`` on the command line: set up, status, errors as one line."""

from __future__ import annotations

import json
from pathlib import Path

from memlog.tests.sync.helpers import bare_remote, device_of, memlog, memlog_ok, observe


def test_init_needs_a_remote(tmp_path: Path) -> None:
    result = memlog(tmp_path / "home", "sync", "--init")
    assert result.exit_code == 2 and "--init needs REMOTE" in result.output


def test_sync_before_setting_it_up_says_how(tmp_path: Path) -> None:
    home = tmp_path / "home"
    result = memlog(home, "sync")
    assert result.exit_code == 1
    assert result.output.strip().splitlines()[-1] == (
        "Error: sync is not set up here: memlog sync --init REMOTE"
    )
    assert "not set up" in memlog_ok(home, "sync", "--status").output


def test_an_unreachable_remote_is_one_line_and_harms_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    observe(home, "A lesson worth keeping.")
    result = memlog(home, "sync", "--init", str(tmp_path / "no-such-repo"))
    assert result.exit_code == 1
    assert "cannot fetch from" in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert memlog(home, "verify").exit_code == 0
    assert "A lesson worth keeping." in memlog_ok(home, "log").output


def test_a_remote_given_once_is_kept(tmp_path: Path) -> None:
    remote = str(bare_remote(tmp_path / "remote.git"))
    home = tmp_path / "home"
    observe(home, "A lesson worth keeping.")
    first = memlog_ok(home, "sync", remote)  # no --init: the first remote given is kept
    assert "sent 3 events" in first.output or "sent" in first.output
    status = json.loads(memlog_ok(home, "sync", "--status", "--json").output)
    assert status["remote"] == remote and status["device"] == device_of(home)
    assert status["unsent"] == 0 and status["devices"][0]["this_home"]
    observe(home, "Another lesson.")
    text = memlog_ok(home, "sync", "--status").output
    assert f"remote: {remote}" in text and "(this home)" in text
    assert "not sent yet: 0 events" not in text


def test_json_outcome(tmp_path: Path) -> None:
    remote = str(bare_remote(tmp_path / "remote.git"))
    home = tmp_path / "home"
    observe(home, "A lesson worth keeping.")
    done = json.loads(memlog_ok(home, "sync", "--init", remote, "--json").output)
    assert done["remote"] == remote and done["migrated"] == 1 and done["views"] == "rebuilt"
    assert done["sent"] >= 1 and done["received"] == 0 and not done["refused"]
