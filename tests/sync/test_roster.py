"""The team's roster at work: evicting a machine, a new team key, joining with the key
kept off the command line, and a remote that lost files or went back."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from memlog.eventlog.events import content_hash
from memlog.tests import forge
from memlog.tests.sync.helpers import (
    assert_same_views,
    bare_remote,
    device_of,
    git,
    init,
    memlog,
    memlog_ok,
    observe,
    push_tree,
    remote_file,
)

PIN = "Pin tool versions in CI."
SMALL = "Keep commits small."
PLAIN = "Prefer plain functions."


def three_homes(tmp_path: Path) -> tuple[Path, Path, Path, str]:
    remote = str(bare_remote(tmp_path / "remote.git"))
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    observe(a, PIN)
    observe(b, SMALL)
    observe(c, PLAIN)
    for home in (a, b, c, a, b):
        init(home, remote)
    return a, b, c, remote


def shown(home: Path, description: str) -> bool:
    return memlog(home, "show", content_hash(description)[:10]).exit_code == 0


def test_an_evicted_machine_s_later_lines_are_refused(tmp_path: Path) -> None:
    a, b, c, remote = three_homes(tmp_path)
    done = memlog_ok(a, "sync", "--evict", device_of(c))
    assert done.exit_code == 0
    assert memlog(a, "sync", "--evict", device_of(a)).exit_code != 0  # never itself
    assert "no device nosuch" in memlog(a, "sync", "--evict", "nosuch").output
    said = memlog_ok(b, "sync").output
    assert f"device {device_of(c)} was evicted by device {device_of(a)}" in said
    assert shown(b, PLAIN)  # what it wrote before stays
    observe(c, "Written by c after its eviction.")
    stopped = memlog(c, "sync")
    assert stopped.exit_code != 0 and "was evicted from the team" in stopped.output
    assert len(stopped.output.strip().splitlines()) == 1
    # c's home, or a thief of it, pushes a new line anyway, signed with c's own key
    from memlog.tests.sync.test_signatures import signed_by, team_key, teammate_key

    key, path = team_key(a), f"{device_of(c)}/00000000000000000001.sealed"
    rows = remote_file(remote, path).splitlines(keepends=True)
    last = forge.opened(key, device_of(c), "00000000000000000001", rows[-1])["seq"]
    body = forge.event("entry.retired", last + 1, entry_id=content_hash(PIN), reason="evicted")
    forged = signed_by(teammate_key(c), key, device_of(c), rows, body)
    for home in (a, b):
        push_tree(remote, {path: b"".join(rows) + forged})
        said = memlog(home, "sync")
        assert (
            said.exit_code == 1
            and f"device {device_of(c)} was evicted; its lines after" in said.output
        )
        assert "refused" in said.output and memlog(home, "verify").exit_code == 0
        assert not shown(home, "Written by c after its eviction.")
    status = json.loads(memlog_ok(b, "sync", "--status", "--json").output)
    assert status["evicted"] == [device_of(c)]


def test_a_new_team_key_reseals_the_remote_and_every_machine_follows(tmp_path: Path) -> None:
    a, b, c, remote = three_homes(tmp_path)
    old = memlog_ok(a, "sync", "--print-key").output.strip()
    done = memlog_ok(a, "sync", "--rotate-key")
    assert "made a new team key" in done.output and "--init" in done.output
    new = memlog_ok(a, "sync", "--print-key").output.strip()
    assert new != old and new not in done.output
    tip = remote_file(remote, f"{device_of(b)}/00000000000000000001.sealed")
    first = tip.splitlines()[0]
    forge.unseal(forge.key_bytes(new), device_of(b), "00000000000000000001", first)
    try:
        forge.unseal(forge.key_bytes(old), device_of(b), "00000000000000000001", first)
        raise AssertionError("the old key still opens the remote's tip")
    except Exception as exc:  # noqa: BLE001 - InvalidTag, whatever opened it
        assert "InvalidTag" in type(exc).__name__
    stopped = memlog(b, "sync")
    assert stopped.exit_code != 0
    assert f"device {device_of(a)} made a new team key" in stopped.output
    observe(b, "Written while b followed.")
    result = memlog(b, "sync", "--init", remote, "--key", "-", input=new + "\n")
    assert result.exit_code == 0, result.output
    env_joined = memlog(c, "sync", "--init", remote, env={"MEMLOG_SYNC_KEY": new})
    assert env_joined.exit_code == 0, env_joined.output
    for home in (a, b, c, a):
        memlog_ok(home, "sync")
    assert_same_views([a, b, c])
    assert shown(a, "Written while b followed.")


def test_the_key_given_on_stdin_never_reaches_the_command_line(tmp_path: Path) -> None:
    remote = str(bare_remote(tmp_path / "remote.git"))
    a, b = tmp_path / "a", tmp_path / "b"
    observe(a, PIN)
    init(a, remote)
    key = memlog_ok(a, "sync", "--print-key").output.strip()
    env = {"MEMLOG_HOME": str(b), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    child = subprocess.Popen(
        [sys.executable, "-m", "memlog", "sync", "--init", remote, "--key", "-"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )  # fmt: skip
    cmdline = Path(f"/proc/{child.pid}/cmdline").read_bytes()
    out, err = child.communicate(key.encode() + b"\n", timeout=120)
    assert child.returncode == 0, err
    assert key.encode() not in cmdline
    assert shown(b, PIN)
    empty = memlog(tmp_path / "c", "sync", "--init", remote, "--key", "-", input="")
    assert empty.exit_code != 0 and "nothing on stdin" in empty.output


def test_files_deleted_or_cut_on_the_remote_are_named_and_restored(tmp_path: Path) -> None:
    a, b, c, remote = three_homes(tmp_path)
    gone = f"{device_of(b)}/00000000000000000001.sealed"
    cut = f"{device_of(c)}/00000000000000000001.sealed"
    observe(c, "A second lesson of c.")
    memlog_ok(c, "sync")
    memlog_ok(a, "sync")
    whole = remote_file(remote, cut)
    push_tree(remote, {gone: None, cut: whole.splitlines(keepends=True)[0]})
    said = memlog_ok(a, "sync").output
    assert f"the remote lost device {device_of(b)}'s lines seq 1.." in said
    assert f"({gone} deleted): restored from this home" in said
    assert f"the remote lost device {device_of(c)}'s lines seq 2.." in said
    assert "(cut short): restored from this home" in said
    assert remote_file(remote, cut) == whole
    memlog_ok(b, "sync")


def test_a_machine_joining_a_remote_forced_back_is_told(tmp_path: Path) -> None:
    a, b, c, remote = three_homes(tmp_path)
    old = git("--git-dir", remote, "rev-parse", "memlog").stdout.strip()
    observe(a, "Name things for what they do.")
    memlog_ok(a, "sync")
    assert git("--git-dir", remote, "update-ref", "refs/heads/memlog", old).returncode == 0
    key = memlog_ok(a, "sync", "--print-key").output.strip()
    joined = memlog(tmp_path / "d", "sync", "--init", remote, "--key", key)
    assert joined.exit_code == 1
    assert f"{device_of(a)}: its head (signed " in joined.output
    assert "or the branch forced back to an older commit" in joined.output
    assert "the remote's branch went back" in memlog(a, "sync").output  # and puts it back
    memlog_ok(tmp_path / "d", "sync")
    assert shown(tmp_path / "d", "Name things for what they do.")
