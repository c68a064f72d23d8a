"""Appends that the file system refuses: a size limit, a full disk, a read-only home.

Each must end in one clear line on stderr, a non-zero exit and a log left
byte for byte as it was (and still clean).  The mounts need root; where
mounting is not permitted the test says so and is skipped.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import os
import resource
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from memlog.eventlog import segments as seg
from memlog.eventlog.events import Observed
from memlog.eventlog.log import EventLog
from memlog.eventlog.verify import verify_log
from memlog.home import Home


def seed(home: Path, count: int = 3) -> EventLog:
    log = EventLog(home)
    log.append(
        [Observed(name=f"E{i}", description=f"entry {i}", category="facts") for i in range(count)]
    )
    return log


def snapshot(home: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in EventLog(home).segments()}


def memlog(
    home: Path, *args: str, cwd: Path, limit: int | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the real executable (``python -m memlog``) against ``home``."""

    def limit_file_size() -> None:  # Python ignores SIGXFSZ: writes fail with EFBIG
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    env = {**os.environ, "MEMLOG_HOME": str(home), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "memlog", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        preexec_fn=limit_file_size,
        timeout=120,
    )


def observe(
    home: Path, cwd: Path, size: int = 20_000, **kw: int
) -> subprocess.CompletedProcess[str]:
    description = "A large entry. " * (size // 15)
    return memlog(
        home, "observe", "--name", "Big", "--description", description, "--category", "facts",
        cwd=cwd, **kw,
    )  # fmt: skip


def single_error(result: subprocess.CompletedProcess[str]) -> str:
    """The one line of stderr of a failed command (never a traceback)."""
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def unchanged_and_clean(home: Path, before: dict[str, bytes]) -> None:
    assert snapshot(home) == before
    report = verify_log(EventLog(home))
    assert report.clean, report.problems()


# -- EFBIG: the process may not grow a file past RLIMIT_FSIZE ----------------------


@pytest.mark.slow
@pytest.mark.parametrize("room", [0, 300], ids=["at-the-limit", "short-write"])
def test_file_size_limit(memlog_home: Path, tmp_path: Path, room: int) -> None:
    seed(memlog_home)
    before = snapshot(memlog_home)
    (size,) = (len(b) for b in before.values())
    result = observe(memlog_home, tmp_path, limit=size + room)
    line = single_error(result)
    assert result.returncode == 1
    assert line == (
        "Error: cannot append to 00000000000000000001.jsonl: File too large (the file size "
        "limit, ulimit -f, stops it); the log was left unchanged"
    )
    unchanged_and_clean(memlog_home, before)
    assert observe(memlog_home, tmp_path).returncode == 0  # without the limit it goes in


# -- ENOSPC: a small tmpfs, filled up ------------------------------------------------


def _mount(args: list[str], what: str) -> None:
    result = subprocess.run(["mount", *args], capture_output=True, text=True)
    if result.returncode != 0:
        pytest.skip(f"{what} is not permitted here: {result.stderr.strip() or result.returncode}")


def _umount(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)], check=True)


@contextlib.contextmanager
def tmpfs(where: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` (``64k``, ``8m``) mounted at ``where`` (made), for a ``with``."""
    where.mkdir()
    _mount(["-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(where)], "mount tmpfs")
    try:
        yield where
    finally:
        _umount(where)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs."""
    with tmpfs(tmp_path / "disk", "64k") as disk:
        yield disk


def fill(disk: Path) -> Path:
    """Take every free block of ``disk``; return the filler file."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)
    return filler


@pytest.mark.slow
def test_full_disk(small_disk: Path, tmp_path: Path) -> None:
    home = small_disk / "home"
    seed(home)
    before = snapshot(home)
    filler = fill(small_disk)

    line = single_error(observe(home, tmp_path))
    assert line == (
        "Error: cannot append to 00000000000000000001.jsonl: No space left on device; "
        "the log was left unchanged"
    )
    unchanged_and_clean(home, before)
    assert not (home / "quarantine.jsonl").exists()

    filler.unlink()
    assert observe(home, tmp_path).returncode == 0
    assert len(list(EventLog(home).read())) == 4 and verify_log(EventLog(home)).clean


@pytest.mark.slow
def test_full_disk_while_a_torn_tail_waits(small_disk: Path, tmp_path: Path) -> None:
    home = small_disk / "home"
    (segment,) = seed(home).segments()
    torn = b'{"type":"entry.observed","seq":4,"id":"' + b"x" * 6000
    with open(segment, "ab") as handle:
        handle.write(torn)
    before = snapshot(home)
    filler = fill(small_disk)

    line = single_error(observe(home, tmp_path))
    assert "No space left on device" in line and "left unchanged" in line
    assert snapshot(home) == before  # the torn tail waits for room in the quarantine

    filler.unlink()
    assert observe(home, tmp_path).returncode == 0
    records = [r for r in seg.read_quarantine(Home(home)) if r.size]
    assert [base64.b64decode(r.data) for r in records] == [torn]
    assert verify_log(EventLog(home)).clean


def test_a_quarantine_file_that_is_a_link_is_refused(memlog_home: Path, tmp_path: Path) -> None:
    """A link where the quarantine file goes (to ``/dev/full``, or to a file outside the
    home) is never written through: the append is refused in one line naming it, and the
    log is left as it was.  (A full device for the quarantine: ``test_full_disk_while_a_
    torn_tail_waits``.)"""
    (segment,) = seed(memlog_home).segments()
    with open(segment, "ab") as handle:
        handle.write(b'{"type":"entry.obs')
    before = snapshot(memlog_home)
    outside = tmp_path / "outside.txt"
    outside.write_text("not memlog's\n")
    for target in ("/dev/full", str(outside)):
        (memlog_home / "quarantine.jsonl").unlink(missing_ok=True)
        (memlog_home / "quarantine.jsonl").symlink_to(target)
        line = single_error(observe(memlog_home, tmp_path, size=200))
        assert line == (
            f"Error: {memlog_home / 'quarantine.jsonl'} is a symbolic link; memlog follows no "
            "link inside its home (remove it, and memlog makes the file again)"
        )
        assert snapshot(memlog_home) == before
    assert outside.read_text() == "not memlog's\n"

    (memlog_home / "quarantine.jsonl").unlink()
    assert observe(memlog_home, tmp_path, size=200).returncode == 0
    assert verify_log(EventLog(memlog_home)).clean


# -- a read-only home ------------------------------------------------------------------


@pytest.fixture
def read_only_home(memlog_home: Path) -> Iterator[Path]:
    """The seeded home, bind-mounted read-only over itself (root ignores modes)."""
    seed(memlog_home)
    _mount(["--bind", str(memlog_home), str(memlog_home)], "a bind mount")
    try:
        _mount(["-o", "remount,ro,bind", str(memlog_home)], "a read-only remount")
        yield memlog_home
    finally:
        _umount(memlog_home)


@pytest.mark.slow
def test_read_only_home(read_only_home: Path, tmp_path: Path) -> None:
    before = snapshot(read_only_home)
    line = single_error(observe(read_only_home, tmp_path, size=200))
    assert line == f"Error: cannot write to {read_only_home / 'events'}: Read-only file system"
    unchanged_and_clean(read_only_home, before)

    listed = memlog(read_only_home, "log", cwd=tmp_path)
    assert listed.returncode == 0 and len(listed.stdout.splitlines()) == 3
    checked = memlog(read_only_home, "verify", "--log-only", cwd=tmp_path)
    assert checked.returncode == 0 and "log: clean" in checked.stdout
    single_error(memlog(read_only_home, "stats", cwd=tmp_path))
    single_error(memlog(read_only_home, "verify", "--repair", cwd=tmp_path))


def test_home_that_cannot_be_created(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    line = single_error(observe(blocker / "home", tmp_path, size=200))
    assert line.startswith(f"Error: cannot create {blocker / 'home'}: ")


@pytest.mark.slow
def test_replay_under_a_file_size_limit_names_the_limit(memlog_home: Path, tmp_path: Path) -> None:
    """SQLite calls a write past the limit a disk I/O error: the line names the limit."""
    log = EventLog(memlog_home)
    log.append([Observed(name=f"E{i}", description=f"entry {i} " + "word " * 40,
                         category="facts") for i in range(300)])  # fmt: skip
    line = single_error(memlog(memlog_home, "replay", cwd=tmp_path, limit=64 << 10))
    assert line.startswith("Error: the file size limit (ulimit -f: 65536 bytes) stopped the write")
    assert "nothing was lost" in line and "disk I/O" not in line


@pytest.mark.slow
@pytest.mark.parametrize("free_kib", [100, 300, 600])
def test_replay_on_a_nearly_full_disk_says_so(
    tmp_path: Path, free_kib: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk runs out in the middle of the rebuild (SQLite rolls its transaction back
    itself): one line naming the full disk, never 'cannot rollback'."""
    with tmpfs(tmp_path / "disk", "3m") as disk:
        home = disk / "home"
        log = EventLog(home)
        log.append([Observed(name=f"E{i}", description=f"entry {i} " + "word " * 40,
                             category="facts") for i in range(300)])  # fmt: skip
        monkeypatch.setenv("MEMLOG_EMBEDDING_PROVIDER", "hashing")
        free = os.statvfs(disk)
        filler = disk / "filler"
        with open(filler, "wb") as handle:
            handle.write(b"\0" * max(free.f_bavail * free.f_frsize - free_kib * 1024, 0))
        line = single_error(memlog(home, "replay", cwd=tmp_path))
        assert line.startswith("Error: no space left on device while writing "), line
        assert "rollback" not in line
        filler.unlink()
        assert memlog(home, "replay", cwd=tmp_path).returncode == 0
