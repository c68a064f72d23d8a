"""Homes on one machine syncing through a bare git repository: they end up the same."""

from __future__ import annotations

import base64
import itertools
import json
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from memlog.eventlog import segments as seg
from memlog.eventlog.events import Superseded, content_hash
from memlog.eventlog.log import EventLog
from memlog.home import Home
from memlog.tests.sync.helpers import (
    assert_same_views,
    bare_remote,
    device_of,
    git,
    init,
    memlog,
    memlog_ok,
    observe,
    redact_line,
)

PIN = "Pin tool versions in CI."
SMALL = "Keep commits small."
TEST_FIRST = "Write the test first."
PLAIN = "Prefer plain functions."
LEAK = "hunter2hunter2"  # a password the secrets scan does not know: found later, redacted


def entry(home: Path, description: str) -> dict[str, object]:
    """The entry of ``description`` (or of an entry id) as ``memlog show`` gives it."""
    key = description if len(description) == 16 and "." not in description else None
    result = memlog_ok(home, "show", key or content_hash(description)[:10], "--json")
    found: dict[str, object] = json.loads(result.output)["entry"]
    return found


def supersede(home: Path, old: str, new: str) -> None:
    EventLog(home).append([Superseded(entry_id=content_hash(old), by=content_hash(new))])


def recall(home: Path, project: Path) -> None:
    memlog_ok(home, "inject", "--record", str(project))


def start(tmp_path: Path, count: int) -> tuple[list[Path], str]:
    """``count`` homes, each with memories of its own, all joined to one remote."""
    remote = str(bare_remote(tmp_path / "remote.git"))
    homes = [tmp_path / f"home{i}" for i in range(count)]
    memlog_ok(homes[0], "observe", "--name", "Pin", "--description", PIN, "--category",
              "patterns", "--reasoning", f"the staging password {LEAK} leaked")  # fmt: skip
    observe(homes[0], SMALL)
    observe(homes[1], PIN)
    observe(homes[1], TEST_FIRST, category="heuristics")
    for home in homes[2:]:
        observe(home, PLAIN, category="anti-patterns")
    for home in [*homes, homes[0]]:
        init(home, remote)
    return homes, remote


def work_apart(homes: list[Path], project: Path) -> None:
    """What the homes do between two syncs, none seeing the others."""
    recall(homes[0], project)
    memlog_ok(homes[0], "retire", content_hash(TEST_FIRST)[:10], "--reason", "not always")
    supersede(homes[0], PIN, SMALL)
    redact_line(homes[0], device_of(homes[0]), LEAK)
    # observed again, asked to come back, while retired on the other machine
    observe(homes[1], TEST_FIRST, "", "heuristics", "--revive")
    supersede(homes[1], PIN, TEST_FIRST)
    recall(homes[1], project)
    for home in homes[2:]:
        observe(home, PIN)
        observe(home, "Name things for what they do.")


def sync_all(homes: list[Path], order: tuple[int, ...]) -> None:
    for _ in range(2):  # the first in line only hears from the later ones on the second pass
        for index in order:
            memlog_ok(homes[index], "sync")


def check_converged(homes: list[Path], remote: str) -> None:
    assert_same_views(homes)
    for home in homes:
        assert memlog(home, "verify").exit_code == 0
        for path in home.rglob("*"):
            if path.is_file() and "sync.git" not in path.parts:
                assert LEAK.encode() not in path.read_bytes(), path
        kept = b"".join(base64.b64decode(r.data) for r in seg.read_quarantine(Home(home)))
        assert LEAK.encode() not in kept  # a redacted copy is replaced, not quarantined
    assert git("--git-dir", remote, "fsck", "--strict").returncode == 0
    tip = git("--git-dir", remote, "archive", "memlog").stdout
    assert LEAK not in tip


def converge(tmp_path: Path, count: int, order: tuple[int, ...]) -> list[Path]:
    """``count`` homes work apart, then sync in ``order`` (twice through) and match."""
    homes, remote = start(tmp_path, count)
    project = tmp_path / "project"
    project.mkdir()
    work_apart(homes, project)
    sync_all(homes, order)
    check_converged(homes, remote)
    return homes


def recalls(home: Path) -> Counter[str]:
    """How often each entry was recalled, counted from the log's events."""
    lines = memlog_ok(home, "log", "--type", "entry.recalled", "--json").output.splitlines()
    return Counter(i for line in lines for i in json.loads(line)["ids"])


@pytest.mark.parametrize("order", [(0, 1), (1, 0)])
def test_two_homes_end_with_the_same_views(tmp_path: Path, order: tuple[int, ...]) -> None:
    homes = converge(tmp_path, 2, order)
    pin = entry(homes[0], PIN)
    assert pin["observation_count"] == 2  # counts add
    assert pin["status"] == "superseded"
    assert pin["superseded_by"] == content_hash(TEST_FIRST)  # the later supersede wins
    assert "[REDACTED]" in str(pin["reasoning"])
    assert entry(homes[1], TEST_FIRST)["status"] == "live"  # revived after the retire
    counted = recalls(homes[0])
    assert counted and max(counted.values()) == 2  # both homes' recalls add up
    for entry_id, times in counted.items():
        assert entry(homes[1], entry_id)["recall_count"] == times


@pytest.mark.slow
@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
def test_three_homes_end_with_the_same_views(tmp_path: Path, order: tuple[int, ...]) -> None:
    homes = converge(tmp_path, 3, order)
    assert entry(homes[2], PIN)["observation_count"] == 3


def test_a_home_that_synced_first_sees_the_rest_after_its_next_sync(tmp_path: Path) -> None:
    homes, _ = start(tmp_path, 2)
    before = len(memlog_ok(homes[1], "log").output.splitlines())
    observe(homes[1], PLAIN)  # the observation, its vector, its keywords
    added = len(memlog_ok(homes[1], "log").output.splitlines()) - before
    memlog_ok(homes[1], "sync")
    assert memlog(homes[0], "show", content_hash(PLAIN)[:10]).exit_code != 0
    done = json.loads(memlog_ok(homes[0], "sync", "--json").output)
    assert done["received"] == added and done["views"] == f"applied {added} events"
    assert entry(homes[0], PLAIN)["name"]
    again = json.loads(memlog_ok(homes[0], "sync", "--json").output)
    assert again["received"] == 0 and again["sent"] == 0 and again["views"] == "unchanged"


def test_the_first_sync_moves_a_flat_log_without_rewriting_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    for i in range(5):
        observe(home, f"Lesson number {i} holds.")
    before = {p.name: p.read_bytes() for p in (home / "events").glob("*.jsonl")}
    listed = memlog_ok(home, "log").output
    replayed = memlog_ok(home, "replay").output.splitlines()[:2]
    remote = str(bare_remote(tmp_path / "remote.git"))
    done = init(home, remote)
    assert f"moved {len(before)} segments" in done.output
    own = home / "events" / device_of(home)
    assert {p.name: p.read_bytes() for p in own.glob("*.jsonl")} == before
    assert not list((home / "events").glob("*.jsonl"))
    assert memlog_ok(home, "log").output == listed  # same events, same numbers, same order
    assert memlog_ok(home, "replay").output.splitlines()[:2] == replayed
    assert memlog(home, "verify").exit_code == 0
    other = tmp_path / "other"
    init(other, remote)
    assert memlog_ok(other, "log").output == listed


def test_only_segments_travel(tmp_path: Path) -> None:
    homes, remote = start(tmp_path, 2)
    (homes[0] / "hook-errors.log").write_text("2026-01-01T00:00:00Z boom\n")
    memlog_ok(homes[0], "sync")
    files = git("--git-dir", remote, "ls-tree", "-r", "--name-only", "memlog").stdout.split()
    assert "memlog-sync.json" in files  # the format and the key's check value
    devices = [f for f in files if f != "memlog-sync.json"]
    assert devices and all(f.count("/") == 1 for f in devices)
    assert all(f.endswith(".sealed") or f.endswith("/head") for f in devices)
    assert {f.split("/")[0] for f in devices} == {device_of(h) for h in homes}


def test_a_deleted_segment_comes_back(tmp_path: Path) -> None:
    homes, _ = start(tmp_path, 2)
    lost = next((homes[0] / "events" / device_of(homes[1])).glob("*.jsonl"))
    kept = lost.read_bytes()
    lost.unlink()
    memlog_ok(homes[0], "sync")
    assert lost.read_bytes() == kept


def test_git_runs_without_the_users_configuration(tmp_path: Path, monkeypatch) -> None:
    config = tmp_path / "gitconfig"
    config.write_text("[core]\n\thooksPath = /nonexistent\n\tautocrlf = true\n"
                      "[commit]\n\tgpgSign = true\n")  # fmt: skip
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "elsewhere"))  # never followed
    homes, remote = start(tmp_path, 2)
    log = subprocess.run(
        ["git", "--git-dir", remote, "log", "--format=%an <%ae>", "memlog"],
        capture_output=True, text=True, check=True, env={"PATH": "/usr/bin:/bin"},
    ).stdout.split("\n")  # fmt: skip
    assert log[0].startswith("memlog <memlog@")
    assert not (tmp_path / "elsewhere").exists()


def test_a_fast_clock_elsewhere_is_followed_and_noted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memlog.eventlog import clock

    homes, _ = start(tmp_path, 2)
    future = clock.now_micros() + 3 * 3_600_000_000  # within the clock's bound of a day
    with monkeypatch.context() as patched:
        patched.setattr(clock, "now_micros", lambda: future)
        observe(homes[1], PLAIN)
    memlog_ok(homes[1], "sync")
    result = memlog_ok(homes[0], "sync")
    assert "3 h ahead of this machine's clock" in result.output
    memlog_ok(homes[0], "retire", content_hash(PLAIN)[:10], "--reason", "seen, then retired")
    assert entry(homes[0], PLAIN)["status"] == "retired"  # sorts after what it answers
    last = json.loads(memlog_ok(homes[0], "log", "--json").output.splitlines()[-1])
    assert clock.micros(last["ts"]) > future


def test_memlog_redact_of_this_devices_lines_reaches_every_home(tmp_path: Path) -> None:
    """``memlog redact`` on the device that wrote the line: it signs the line again (a new
    generation), and every home takes it; no home keeps the text."""
    homes, remote = start(tmp_path, 2)
    sync_all(homes, (0, 1))
    assert LEAK in str(entry(homes[1], PIN)["reasoning"])  # it travelled before it was found
    said = memlog_ok(homes[0], "redact", "--match", LEAK, "--reason", "a password").output
    assert "the old text stays in the history of sync.git" in said
    sync_all(homes, (0, 1))
    check_converged(homes, remote)
    for home in homes:
        assert "[REDACTED]" in str(entry(home, PIN)["reasoning"])
        assert memlog_ok(home, "log", "--type", "entry.redacted").output.strip()


@pytest.mark.parametrize("policy", ["owner", "any"])
def test_memlog_redact_of_another_devices_lines_is_a_request(tmp_path: Path, policy: str) -> None:
    """On another machine, ``memlog redact`` takes the text out of that home at once, and
    asks the device that wrote the line: its owner confirms (or, when the team chose it,
    every machine takes the request as it comes); then no home keeps the text."""
    homes, remote = start(tmp_path, 2)
    sync_all(homes, (0, 1))
    if policy == "any":
        memlog_ok(homes[1], "sync", "--redactions", "any")
    memlog_ok(homes[1], "redact", "--match", LEAK, "--reason", "a password")
    assert "[REDACTED]" in str(entry(homes[1], PIN)["reasoning"])
    memlog_ok(homes[1], "sync")
    said = memlog_ok(homes[0], "sync").output
    if policy == "owner":
        assert "asks to take text out of 2 of this device's events" in said  # it, its label
        assert LEAK in str(entry(homes[0], PIN)["reasoning"])  # never without its owner
        waiting = json.loads(memlog_ok(homes[0], "sync", "--requests", "--json").output)
        assert [w["seq"] for w in waiting] and LEAK not in json.dumps(waiting)
        memlog_ok(homes[1], "sync")
        assert "[REDACTED]" in str(entry(homes[1], PIN)["reasoning"])  # kept so meanwhile
        said = memlog_ok(homes[0], "sync", *(f"--confirm={w['id']}" for w in waiting)).output
    assert "as device" in said and "asked" in said
    sync_all(homes, (0, 1))
    check_converged(homes, remote)
    for home in homes:
        assert "[REDACTED]" in str(entry(home, PIN)["reasoning"])


def test_a_clock_years_ahead_is_taken_and_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its events are taken (a clock refusing them lost them for as long as it lagged),
    said at every sync, and what this home writes after is stamped after them."""
    from memlog.eventlog import clock

    homes, _ = start(tmp_path, 2)
    future = clock.micros("2040-01-01T00:00:00Z")
    with monkeypatch.context() as patched:
        patched.setattr(clock, "now_micros", lambda: future)
        observe(homes[1], PLAIN)
    memlog_ok(homes[1], "sync")
    result = memlog_ok(homes[0], "sync")
    assert "days ahead of this machine's clock" in result.output
    assert "refused" not in result.output
    assert entry(homes[0], PLAIN)["name"]
    assert clock.read_floor(Home(homes[0])) >= future
    observe(homes[0], "Written meanwhile.")
    assert clock.micros(entry(homes[0], "Written meanwhile.")["created_at"]) > future
    assert "days ahead" in memlog_ok(homes[0], "sync").output
