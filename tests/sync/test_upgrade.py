"""A team that synced with the first sealed format keeps working.

``tests/fixtures/sync-sealed-1/team.tar.gz`` holds a remote and two homes as the memlog
of that format left them (no signatures, no roster; its ``make.py`` says how it was
made).  The first machine to sync with today's memlog takes the remote to the second
format: it puts its signing key and the last sequence of every device's old lines in
the roster, and signs its lines from there on.  Old lines are taken as they were; once
a device signs, or past the last old line the roster names of it, an unsigned line is
refused.
"""

from __future__ import annotations

import json
import os
import subprocess
import tarfile
from pathlib import Path

from memlog.eventlog.events import content_hash
from memlog.tests import forge
from memlog.tests.support import FIXTURES
from memlog.tests.sync.helpers import (
    assert_same_views,
    device_of,
    memlog,
    memlog_ok,
    observe,
    push_tree,
    remote_file,
)

TEAM = FIXTURES / "sync-sealed-1" / "team.tar.gz"
SEGMENT = "00000000000000000001"
LESSONS = ("Pin tool versions in CI.", "Name things for what they do.", "Keep commits small.",
           "Review your own diff first.", "Written after the last sync, never sent.")  # fmt: skip


def unpacked(tmp_path: Path) -> tuple[Path, Path, str]:
    """The fixture's homes ``a`` and ``b`` and its remote, as they were on their machines
    (the remote's path and each home's folder stamp made this folder's)."""
    with tarfile.open(TEAM) as tar:
        tar.extractall(tmp_path, filter="data")
    remote = str(tmp_path / "remote.git")
    for home in (tmp_path / "a", tmp_path / "b"):
        subprocess.run(["git", "--git-dir", str(home / "sync.git"), "config", "remote.sync.url",
                        remote], check=True)  # fmt: skip
        events = home / "events"
        (events / ".device-stamp").write_text(f"{os.stat(events).st_ino}\n")
    return tmp_path / "a", tmp_path / "b", remote


def signed(key: bytes, device: str, remote: str) -> dict[int, bool]:
    """Whether each of ``device``'s lines on the remote is signed, by sequence."""
    rows = remote_file(remote, f"{device}/{SEGMENT}.sealed").splitlines(keepends=True)
    return {(line := forge.opened(key, device, SEGMENT, row))["seq"]: "sig" in line for row in rows}


def lessons(home: Path) -> set[str]:
    listed = json.loads(memlog_ok(home, "list", "--json", "--status", "any").output)
    return {entry["description"] for entry in listed["entries"]}


def test_a_team_of_the_first_format_upgrades_and_keeps_every_event(tmp_path: Path) -> None:
    a, b, remote = unpacked(tmp_path)
    key = forge.key_bytes((a / "sync.key").read_text().strip())
    first = memlog_ok(a, "sync")
    assert "made this device's signing key" in first.output
    fmt = json.loads(remote_file(remote, "memlog-sync.json"))
    assert fmt["format"] == "memlog-sealed-2"  # the first format's memlog says: upgrade
    roster = forge.open_roster(key, remote_file(remote, "roster.sealed", "memlog-roster"))
    old_a, old_b = roster["legacy"][device_of(a)], roster["legacy"][device_of(b)]
    assert set(roster["devices"]) == {device_of(a)}
    marks = signed(key, device_of(a), remote)
    assert not any(marks[s] for s in marks if s <= old_a)  # old lines, as they were
    assert all(marks[s] for s in marks if s > old_a) and max(marks) > old_a  # the new, signed

    # a key holder adds an unsigned line to b, which has not upgraded: past its old lines
    rows = remote_file(remote, f"{device_of(b)}/{SEGMENT}.sealed").splitlines(keepends=True)
    body = forge.event("entry.retired", old_b + 1, entry_id=content_hash(LESSONS[0]), reason="x")
    forged = forge.seal(key, device_of(b), SEGMENT, old_b + 1, old_b, body)
    push_tree(remote, {f"{device_of(b)}/{SEGMENT}.sealed": b"".join(rows) + forged})
    c = tmp_path / "c"
    joined = memlog(c, "sync", "--init", remote, "--key", (a / "sync.key").read_text().strip())
    assert joined.exit_code == 1
    assert f"(seq {old_b + 1}): unsigned, past the last old line of device {device_of(b)}" in (
        joined.output
    )
    assert set(LESSONS) <= lessons(c)
    logged = memlog_ok(c, "log", "--json").output
    assert "swordfish-4242" not in logged and "[REDACTED]" in logged  # the old redaction stands

    memlog(b, "sync")  # b upgrades: it signs from its next line on
    observe(b, "Written by b after it upgraded.")
    memlog_ok(b, "sync")
    marks = signed(key, device_of(b), remote)
    assert not any(marks[s] for s in marks if s <= old_b) and marks[max(marks)]
    for home in (a, c, b, a, c):
        memlog_ok(home, "sync")
    assert_same_views([a, b, c])
    for home in (a, b, c):
        assert memlog(home, "verify").exit_code == 0
        assert {*LESSONS, "Written by b after it upgraded."} <= lessons(home)
