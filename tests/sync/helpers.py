"""Homes on one machine syncing through a bare git repository on disk."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import msgspec
from click.testing import CliRunner, Result

from memlog.commands.cli import cli
from memlog.eventlog import segments as seg
from memlog.eventlog.codec import encode_line
from memlog.eventlog.log import EventLog
from memlog.eventlog.secrets import REDACTED
from memlog.files import atomic_write
from memlog.home import Home

#: files that belong to one machine, not to the views (compared separately or not at all)
MACHINE_LOCAL = {
    ".sync.lock", ".markdown.lock", "memory.db", "memory.db-wal", "memory.db-shm",
    "quarantine.jsonl", "errors.log", "hook-errors.log", ".last-injection.json",
    "events/.device", "events/.device-stamp", "events/.lock", "events/.clock", ".sweep-started",
    "extraction.lock",
}  # fmt: skip


def bare_remote(where: Path) -> Path:
    subprocess.run(["git", "init", "--quiet", "--bare", str(where)], check=True)
    return where


def memlog(
    home: Path,
    *args: str,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    input: str | None = None,
) -> Result:
    """Run the real command line against ``home`` (in-process)."""
    env = {"MEMLOG_HOME": str(home), **(env or {})}
    here = Path.cwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False, input=input)
    finally:
        os.chdir(here)


def memlog_ok(home: Path, *args: str) -> Result:
    result = memlog(home, *args)
    assert result.exit_code == 0, result.output
    return result


#: the sync key each remote of a test was set up with (by the first home to init it)
KEYS: dict[str, str] = {}


def init(home: Path, remote: Path | str, *more: str) -> Result:
    """``memlog sync --init REMOTE`` as a user does it: the first home makes the key, the
    others join with it (``--key``, from the first's ``memlog sync --print-key``)."""
    key = KEYS.get(str(remote))
    result = memlog_ok(home, "sync", "--init", str(remote), *more, *(["--key", key] if key else []))
    KEYS.setdefault(str(remote), memlog_ok(home, "sync", "--print-key").output.strip())
    return result


def observe(
    home: Path, description: str, name: str = "", category: str = "patterns", *more: str
) -> None:
    memlog_ok(home, "observe", "--name", name or description[:30], "--description", description,
              "--category", category, *more)  # fmt: skip


def sqlite_dump(path: Path) -> str:
    db = sqlite3.connect(path)
    try:
        return "\n".join(db.iterdump())
    finally:
        db.close()


#: packed files beside memory.db: only those the database points at are the view (older
#: ones wait out a grace period for readers that may still map them)
POINTED = {"index": "SELECT file FROM packed_sets"}


def views_of(home: Path) -> dict[str, bytes]:
    """Every file of the home but the machine's own ones; memory.db as its dump; of the
    packed files only those the database points at."""
    found: dict[str, bytes] = {}
    for path in sorted(home.rglob("*")):
        rel = path.relative_to(home).as_posix()
        skipped = ("sync.git/", *(f"{folder}/" for folder in POINTED))
        local = rel in MACHINE_LOCAL or path.name == seg.HIGH_WATER_NAME  # each device's own
        if not path.is_file() or local or rel.startswith(skipped):
            continue
        found[rel] = path.read_bytes()
    found["memory.db (.dump)"] = sqlite_dump(home / "memory.db").encode()
    db = sqlite3.connect(home / "memory.db")
    for folder, query in POINTED.items():
        for (name,) in db.execute(query):
            found[f"{folder}/{name}"] = (home / folder / name).read_bytes()
    db.close()
    return found


#: what a home keeps of where its files stand (not content: a catch-up and a replay each
#: record their own path to the same files)
BOOKKEEPING = {".markdown-state.json", "sync.key", "sync.device.key"}


def logical_views(home: Path) -> dict[str, bytes]:
    """The log and the views' content: ``memory.db`` as its content digest (every row in
    key order, with what the packed files it points at hold), every other file byte for
    byte.  A catch-up and a replay of the same events agree on it; so do two homes that
    hold the same events, whatever order they folded them in."""
    from memlog.projections.sqlite_view.digest import sqlite_digest

    found = {
        rel: data
        for rel, data in views_of(home).items()
        if not rel.startswith(("memory.db", *(f"{f}/" for f in POINTED))) and rel not in BOOKKEEPING
    }
    found["memory.db (content)"] = sqlite_digest(Home(home)).encode()
    return found


def assert_same_views(homes: list[Path]) -> None:
    first = logical_views(homes[0])
    assert any(k.startswith("events/") for k in first)
    for other in homes[1:]:
        theirs = logical_views(other)
        assert sorted(first) == sorted(theirs), (homes[0], other)
        for name in first:
            assert first[name] == theirs[name], f"{name} differs between {homes[0]} and {other}"


def redact_line(home: Path, device: str, needle: str) -> None:
    """Rewrite, as a redaction does, every line of ``device`` holding ``needle``: same
    sequence and id, the text replaced, a fresh checksum, the file replaced atomically."""
    log = EventLog(home)
    found = False
    with log._locked():
        for path in sorted((log.home.events / device).glob("*.jsonl")):
            lines = path.read_bytes().split(b"\n")[:-1]
            rewritten = [_redacted(line, needle) for line in lines]
            if rewritten != [line + b"\n" for line in lines]:
                atomic_write(path, b"".join(rewritten))
                found = True
    assert found, f"{needle!r} not found in {device}"


def _redacted(line: bytes, needle: str) -> bytes:
    from memlog.eventlog.codec import decode_line

    event = decode_line(line)
    changes: dict[str, object] = {}
    for field in event.__struct_fields__:
        value = getattr(event, field)
        if isinstance(value, str) and needle in value:
            changes[field] = value.replace(needle, REDACTED)
        elif isinstance(value, tuple) and any(isinstance(v, str) and needle in v for v in value):
            changes[field] = tuple(v.replace(needle, REDACTED) for v in value)
    if not changes:
        return line + b"\n"
    return encode_line(msgspec.structs.replace(event, redacted=tuple(sorted(changes)), **changes))


def device_of(home: Path) -> str:
    return (home / "events" / ".device").read_text().strip()


def git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], capture_output=True, text=True, timeout=60)


PYTHON = sys.executable


def tamperer(remote: Path | str) -> Callable[..., str]:
    """Runs git in ``remote`` with an index of its own, as someone pushing by hand."""
    env = {**os.environ, "GIT_DIR": str(remote), "GIT_INDEX_FILE": f"{remote}/tamper-index",
           "GIT_AUTHOR_NAME": "x", "GIT_AUTHOR_EMAIL": "x@x", "GIT_COMMITTER_NAME": "x",
           "GIT_COMMITTER_EMAIL": "x@x"}  # fmt: skip

    def run(*args: str, data: bytes | None = None) -> str:
        done = subprocess.run(["git", *args], input=data, capture_output=True, env=env, check=True)
        return done.stdout.decode().strip()

    return run


def push_tampered(
    remote: Path | str,
    path: str,
    transform: Callable[[bytes], bytes],
    new: bool = False,
    mode: str = "100644",
) -> None:
    """Commit onto the remote's branch a version of ``path`` passed through ``transform``
    (what a damaged or hostile copy would push)."""
    run = tamperer(remote)

    tip = run("rev-parse", "memlog")
    blob = b"" if new else remote_file(remote, path, tip)
    new = run("hash-object", "-w", "--stdin", data=transform(blob))
    if mode == "160000":
        new = tip  # a submodule entry: a commit where a file should be
    run("read-tree", tip)
    run("update-index", "--add", "--cacheinfo", f"{mode},{new},{path}")
    commit = run("commit-tree", run("write-tree"), "-p", tip, "-m", "tampered")
    run("update-ref", "refs/heads/memlog", commit)
    os.unlink(f"{remote}/tamper-index")


def push_tree(remote: Path | str, changes: dict[str, bytes | None], parent: str = "memlog") -> str:
    """Commit onto the remote's branch the files of ``changes`` (None: removed), on top of
    ``parent``; what someone with write access to the remote (and no key) can do."""
    run = tamperer(remote)

    tip = run("rev-parse", parent)
    run("read-tree", tip)
    for path, data in changes.items():
        if data is None:
            run("update-index", "--index-info", data=f"0 {'0' * 40}\t{path}\n".encode())
        else:
            blob = run("hash-object", "-w", "--stdin", data=data)
            run("update-index", "--add", "--cacheinfo", f"100644,{blob},{path}")
    commit = run("commit-tree", run("write-tree"), "-p", run("rev-parse", "memlog"), "-m", "x")
    run("update-ref", "refs/heads/memlog", commit)
    os.unlink(f"{remote}/tamper-index")
    return commit


def remote_file(remote: Path | str, path: str, rev: str = "memlog") -> bytes:
    done = subprocess.run(["git", "--git-dir", str(remote), "cat-file", "blob", f"{rev}:{path}"],
                          capture_output=True, check=True)  # fmt: skip
    return done.stdout


def remote_plain(remote: Path | str, key: str, rev: str = "memlog") -> bytes:
    """Every event line the remote's tip holds, opened with ``key`` (``tests/forge``)."""
    from memlog.tests import forge

    raw = forge.key_bytes(key)
    listed = git("--git-dir", str(remote), "ls-tree", "-r", "--name-only", rev).stdout.split()
    lines = []
    for path in (p for p in listed if p.endswith(".sealed")):
        device, segment = path.split("/")[0], path.split("/")[1].split(".")[0]
        for line in remote_file(remote, path, rev).splitlines():
            lines.append(forge.unseal(raw, device, segment, line) + b"\n")
    return b"".join(lines)


def remote_objects(remote: Path | str) -> bytes:
    """Every object the remote holds, uncompressed, one after another."""
    return subprocess.run(
        ["git", "--git-dir", str(remote), "cat-file", "--batch-all-objects", "--batch"],
        capture_output=True, check=True,
    ).stdout  # fmt: skip
