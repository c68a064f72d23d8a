"""``memlog sync`` on the command line: set up, status, errors as one line."""

from __future__ import annotations

import functools
import json
import stat
import subprocess
from pathlib import Path

from memlog.tests.sync.helpers import (
    bare_remote,
    device_of,
    git,
    memlog,
    memlog_ok,
    observe,
    remote_objects,
)


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


def test_init_on_an_empty_remote_makes_the_key_and_says_how_to_join(tmp_path: Path) -> None:
    remote = str(bare_remote(tmp_path / "remote.git"))
    home = tmp_path / "home"
    observe(home, "A lesson worth keeping.")
    done = memlog_ok(home, "sync", "--init", remote)
    key_file = home / "sync.key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    key = memlog_ok(home, "sync", "--print-key").output
    assert key.count("\n") == 1 and key.startswith("memlog-key-1.")
    assert key.strip() not in done.output  # no message prints the key itself
    assert f"memlog sync --init {remote} --key -" in done.output
    assert "memlog sync --print-key" in done.output
    assert not list((home / "events").rglob("*.key"))
    assert key.strip().encode() not in remote_objects(remote)
    assert (home / "sync.key").read_text() == key  # kept as printed, never committed


def test_print_key_without_one_says_how_to_make_it(tmp_path: Path) -> None:
    result = memlog(tmp_path / "home", "sync", "--print-key")
    assert result.exit_code == 1
    assert result.output.strip() == (
        "Error: this home has no sync key: memlog sync --init REMOTE makes one"
    )


def test_a_remote_with_data_needs_its_key_and_says_how_to_get_it(tmp_path: Path) -> None:
    remote = str(bare_remote(tmp_path / "remote.git"))
    first, second = tmp_path / "first", tmp_path / "second"
    observe(first, "A lesson worth keeping.")
    memlog_ok(first, "sync", "--init", remote)
    observe(second, "Another machine's lesson.")
    result = memlog(second, "sync", "--init", remote)
    assert result.exit_code == 1 and len(result.output.strip().splitlines()) == 1
    assert "memlog sync --print-key` on a machine that syncs with it" in result.output
    assert not (second / "sync.key").exists()
    assert "not set up" in memlog(second, "sync").output  # a failed join sets up nothing
    status = json.loads(memlog_ok(second, "sync", "--status", "--json").output)
    assert status["set_up"] is False and status["plain"] is False, status
    assert not (second / "sync.git").exists()
    other = memlog_ok(tmp_path / "third", "sync", "--init", str(bare_remote(tmp_path / "x.git")))
    assert other.exit_code == 0
    wrong = memlog_ok(tmp_path / "third", "sync", "--print-key").output.strip()
    result = memlog(second, "sync", "--init", remote, "--key", wrong)
    assert result.exit_code == 1 and "the key given does not open" in result.output
    assert len(result.output.strip().splitlines()) == 1
    result = memlog(second, "sync", "--init", remote, "--key", "not-a-key")
    assert result.exit_code == 1 and "--key is not a memlog sync key" in result.output
    key = memlog_ok(first, "sync", "--print-key").output.strip()
    joined = memlog(second, "sync", "--init", remote, env={"MEMLOG_SYNC_KEY": key})
    assert joined.exit_code == 0, joined.output
    assert "A lesson worth keeping." in memlog_ok(second, "log").output
    assert memlog_ok(second, "sync", "--print-key").output.strip() == key


def test_key_goes_with_init(tmp_path: Path) -> None:
    result = memlog(tmp_path / "home", "sync", "--key", "x")
    assert result.exit_code == 2 and "--key goes with --init" in result.output


def plain_repository(where: Path, segments: dict[str, bytes]) -> None:
    """A repository as memlog's earlier plain format wrote it: segments in clear."""
    work = where.with_name(where.name + "-work")
    run = functools.partial(subprocess.run, check=True, capture_output=True, cwd=work)
    work.mkdir()
    run(["git", "init", "-q", "-b", "memlog"])
    for path, data in segments.items():
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_bytes(data)
    run(["git", "add", "."])
    run(["git", "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-qm", "plain"])
    run(["git", "push", "-q", str(where), "memlog:memlog"])


def test_a_remote_in_the_plain_format_is_refused_with_what_to_do(tmp_path: Path) -> None:
    remote = bare_remote(tmp_path / "plain.git")
    line = b'{"type":"entry.observed","seq":1}\n'
    plain_repository(remote, {"0123456789abcdef/00000000000000000001.jsonl": line})
    tip = git("--git-dir", str(remote), "rev-parse", "memlog").stdout
    home = tmp_path / "home"
    observe(home, "A lesson worth keeping.")
    result = memlog(home, "sync", "--init", str(remote))
    assert result.exit_code == 1 and len(result.output.strip().splitlines()) == 1
    assert "earlier plain format" in result.output and "memlog sync --init NEW_URL" in result.output
    assert git("--git-dir", str(remote), "rev-parse", "memlog").stdout == tip  # nothing sent


def test_a_home_that_synced_in_the_plain_format_moves_to_a_new_remote(tmp_path: Path) -> None:
    home = tmp_path / "home"
    observe(home, "A lesson worth keeping.")
    old = bare_remote(tmp_path / "old.git")
    segment = next((home / "events").glob("*.jsonl"))
    plain_repository(old, {f"0123456789abcdef/{segment.name}": segment.read_bytes()})
    git_dir = home / "sync.git"  # what the earlier memlog left: its repository, no key
    subprocess.run(["git", "clone", "-q", "--bare", str(old), str(git_dir)], check=True)
    subprocess.run(["git", "--git-dir", str(git_dir), "update-ref", "refs/heads/memlog",
                    "refs/heads/memlog"], check=True)  # fmt: skip
    result = memlog(home, "sync")
    assert result.exit_code == 1 and "earlier plain format" in result.output
    assert "memlog sync --init NEW_URL" in result.output
    new = str(bare_remote(tmp_path / "new.git"))
    memlog_ok(home, "sync", "--init", new)
    assert b"A lesson worth keeping" not in remote_objects(new)
    assert json.loads(memlog_ok(home, "sync", "--status", "--json").output)["remote"] == new
    assert b"A lesson" not in b"".join(
        p.read_bytes() for p in git_dir.rglob("*") if p.is_file()
    )  # the plain copies are gone from this home's repository too
