"""The git repository that carries ``events/`` between machines.

Its git directory is ``$MEMLOG_HOME/sync.git`` and its work tree is
``events/``; memlog drives it with plumbing only (blobs, trees and commits
made explicitly, refs updated with their old value checked), so nothing
from a remote reaches ``events/`` before memlog has checked it, and no merge
ever needs a person.

Git runs as a subprocess with a bounded time (under coreutils ``timeout``
where it exists, so even a git whose caller was killed ends), without the
system configuration, with an explicit author, no prompts, no hooks, no
automatic gc, and its children inherit the sync lock: a sync killed with
``kill -9`` keeps the lock until its last git process has ended, so the lock
files git leaves behind can be swept by the next sync without racing anyone.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from memlog.errors import MemlogError
from memlog.home import Home

BRANCH = "memlog"
LOCAL_REF = f"refs/heads/{BRANCH}"
REMOTE_REF = f"refs/remotes/sync/{BRANCH}"
LOCAL_TIMEOUT = 120.0
NETWORK_TIMEOUT = 300.0
#: the repository's own settings, which win over the user's global ones (the system's are
#: never read); kept in its config file so they do not leak into a local remote's git.
#: Objects are stored and sent without zlib: sealed lines do not compress (base64 of
#: ciphertext gives zlib a quarter back at twice git's time), and deltas still work
SETTINGS = (
    ("core.hooksPath", "/dev/null"), ("core.autocrlf", "false"), ("core.safecrlf", "false"),
    ("core.fsync", "committed"), ("core.fsyncObjectFiles", "true"), ("gc.auto", "0"),
    ("maintenance.auto", "false"), ("commit.gpgSign", "false"), ("push.gpgSign", "false"),
    ("transfer.fsckObjects", "true"), ("core.worktree", "../events"), ("core.bare", "false"),
    ("core.compression", "0"),
)  # fmt: skip
#: blobs up to this size are kept once read (objects are named by their content)
SMALL_BLOB = 4096
#: loose objects (KiB) and packs past which sync packs its repository again
LOOSE_KIB = 8192
MAX_PACKS = 16
#: variables passed on from the environment: how to reach a remote, never where the repo is
KEPT_GIT_VARIABLES = (
    "GIT_SSH", "GIT_SSH_COMMAND", "GIT_SSH_VARIANT", "GIT_PROXY_COMMAND", "GIT_ASKPASS",
    "GIT_SSL_CAINFO", "GIT_SSL_NO_VERIFY", "GIT_CONFIG_GLOBAL", "GIT_EXEC_PATH",
)  # fmt: skip


def set_up(home: Home) -> bool:
    """Whether sync was ever set up in ``home`` (its repository exists)."""
    return (home.sync_repo / "HEAD").is_file()


class SyncError(MemlogError):
    """Sync could not be done; nothing in the log was changed by the part that failed."""


class TreeEntry(NamedTuple):
    mode: str
    kind: str
    oid: str
    size: int


class Git:
    """One repository, driven with bounded, isolated git commands."""

    def __init__(self, home: Home, device: str, lock_fd: int | None = None) -> None:
        self.home = home
        self.git_dir = home.sync_repo
        self.work_tree = home.events
        self.lock_fd = lock_fd
        self.env = _environment(os.environ, self.git_dir, self.work_tree, device)
        self._trees: dict[str, dict[str, TreeEntry]] = {}
        self._small: dict[str, bytes] = {}
        #: refs read since anything last moved one (a sync reads the same few often)
        self._refs: dict[str, str | None] = {}

    def run(
        self,
        *args: str,
        data: bytes | None = None,
        timeout: float = LOCAL_TIMEOUT,
        env: Mapping[str, str] | None = None,
    ) -> bytes:
        """Run ``git ARGS``; its stdout, or SyncError with git's first line of complaint."""
        done = self.call(*args, data=data, timeout=timeout, env=env)
        if done.returncode != 0:
            raise SyncError(f"git {args[0]} failed: {first_line(done.stderr, done.returncode)}")
        return done.stdout

    def call(
        self,
        *args: str,
        data: bytes | None = None,
        timeout: float = LOCAL_TIMEOUT,
        env: Mapping[str, str] | None = None,
    ) -> subprocess.CompletedProcess[bytes]:
        if args and args[0] in _MOVES_REFS:
            self._refs.clear()
        command = [*_bounded(timeout), "git", *args]
        try:
            child = subprocess.Popen(
                command, env=env or self.env, stdin=subprocess.PIPE if data is not None else
                subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                start_new_session=True, pass_fds=() if self.lock_fd is None else (self.lock_fd,),
            )  # fmt: skip
        except FileNotFoundError:
            raise SyncError("memlog sync needs git, which is not installed") from None
        try:
            out, err = child.communicate(data, timeout=timeout + 10)
        except subprocess.TimeoutExpired:
            _kill_group(child)
            raise SyncError(f"git {args[0]} took longer than {timeout:g} s") from None
        if command[0] != "git" and child.returncode in (124, 137):
            raise SyncError(f"git {args[0]} took longer than {timeout:g} s")
        if command[0] != "git" and child.returncode == 127:
            raise SyncError("memlog sync needs git, which is not installed")
        return subprocess.CompletedProcess(command, child.returncode, out, err)

    # -- the repository ------------------------------------------------------------------

    def exists(self) -> bool:
        return set_up(self.home)

    def init(self) -> None:
        """Make the repository aside and rename it into place: a killed init leaves none."""
        for stale in self.home.found(self.home.sync_repo_aside("*")):
            shutil.rmtree(stale, ignore_errors=True)
        aside = self.home.sync_repo_aside(str(os.getpid()))
        env = {**self.env, "GIT_DIR": str(aside)}
        self.run("init", "--quiet", f"--initial-branch={BRANCH}", env=env)
        for key, value in SETTINGS:
            self.run("config", key, value, env=env)
        (aside / "info").mkdir(mode=0o700, exist_ok=True)
        (aside / "info" / "exclude").write_text(".*\n", encoding="utf-8")  # lock, device, clock
        os.rename(aside, self.git_dir)

    def tidy(self) -> None:
        """Pack loose objects (successive versions of a growing segment delta well)."""
        counts = dict(
            line.split(": ", 1)
            for line in self.run("count-objects", "-v").decode("ascii").splitlines()
            if ": " in line
        )
        if int(counts.get("packs", "0")) > MAX_PACKS:
            self.run("repack", "-a", "-d", "-q")
        elif int(counts.get("size", "0")) > LOOSE_KIB:
            self.run("repack", "-d", "-q")

    def remote_url(self) -> str:
        done = self.call("config", "--get", "remote.sync.url")
        return done.stdout.decode("utf-8", "replace").strip() if done.returncode == 0 else ""

    def set_remote(self, url: str) -> None:
        self.run("config", "remote.sync.url", url)

    def sweep_stale_locks(self) -> list[str]:
        """Remove lock files a killed git left (the caller holds the sync lock, which every
        git started by a sync keeps while it runs, so none of them is alive)."""
        swept = []
        for path in self.git_dir.rglob("*.lock"):
            if "objects" in path.relative_to(self.git_dir).parts[:1]:
                continue
            path.unlink(missing_ok=True)
            swept.append(str(path.relative_to(self.git_dir)))
        return swept

    def ref(self, name: str) -> str | None:
        if name not in self._refs:
            done = self.call("rev-parse", "--verify", "--quiet", f"{name}^{{commit}}")
            self._refs[name] = done.stdout.decode("ascii").strip() if done.returncode == 0 else None
        return self._refs[name]

    def update_ref(self, name: str, new: str, old: str | None) -> None:
        if new != old:
            self.run("update-ref", name, new, old or "0" * 40)

    def tree(self, commit: str | None) -> dict[str, TreeEntry]:
        """Every file of ``commit`` (none for no commit): path → mode, kind, id, size
        (read once: a commit's tree never changes)."""
        if commit is None:
            return {}
        if commit not in self._trees:
            self._trees[commit] = self._tree(commit)
        return dict(self._trees[commit])

    def _tree(self, commit: str) -> dict[str, TreeEntry]:
        out = self.run("ls-tree", "-r", "-l", "-z", "--full-tree", commit)
        found = {}
        for item in out.split(b"\0"):
            if not item:
                continue
            meta, path = item.split(b"\t", 1)
            mode, kind, oid, size = meta.decode("ascii").split()
            found[path.decode("utf-8")] = TreeEntry(
                mode, kind, oid, int(size) if size.isdigit() else 0
            )
        return found

    def blobs(self, oids: Sequence[str]) -> dict[str, bytes]:
        """The contents of the blobs ``oids`` (one ``cat-file --batch``; small ones, a
        format file or a head, read once)."""
        found = {oid: self._small[oid] for oid in oids if oid in self._small}
        wanted = [oid for oid in dict.fromkeys(oids) if oid not in found]
        if not wanted:
            return found
        out = self.run("cat-file", "--batch", data="".join(f"{o}\n" for o in wanted).encode())
        at = 0
        for oid in wanted:
            end = out.index(b"\n", at)
            header = out[at:end].decode("ascii").split()
            if len(header) != 3:
                raise SyncError(f"git cat-file: object {oid} is missing")
            size = int(header[2])
            found[oid] = out[end + 1 : end + 1 + size]
            if size <= SMALL_BLOB:
                self._small[oid] = found[oid]
            at = end + 2 + size
        return found

    def write_blob(self, data: bytes) -> str:
        return self.run("hash-object", "-w", "--no-filters", "--stdin", data=data).decode().strip()

    def write_tree(self, files: Mapping[str, str]) -> str:
        """A tree of ``<dir>/<file>`` and ``<file>`` paths (one level of directories) →
        blob ids."""
        folders: dict[str, list[str]] = {}
        lines = []
        for path, oid in sorted(files.items()):
            folder, _, name = path.rpartition("/")
            if folder:
                folders.setdefault(folder, []).append(f"100644 blob {oid}\t{name}\n")
            else:
                lines.append(f"100644 blob {oid}\t{name}\n")
        lines += [
            f"040000 tree {self._mktree(entries)}\t{folder}\n"
            for folder, entries in sorted(folders.items())
        ]
        return self._mktree(lines)

    def _mktree(self, lines: list[str]) -> str:
        return (
            self.run("mktree", "-z", data="".join(lines).replace("\n", "\0").encode())
            .decode()
            .strip()
        )

    def commit(self, tree: str, parents: Sequence[str], message: str) -> str:
        args = ["commit-tree", tree, *(a for p in parents for a in ("-p", p)), "-m", message]
        return self.run(*args).decode("ascii").strip()

    def merge_base(self, ours: str, theirs: str) -> str | None:
        done = self.call("merge-base", ours, theirs)
        return done.stdout.decode("ascii").strip() if done.returncode == 0 else None

    def is_ancestor(self, older: str, newer: str) -> bool:
        return self.call("merge-base", "--is-ancestor", older, newer).returncode == 0


#: git commands after which a ref read before may have moved
_MOVES_REFS = frozenset({"update-ref", "fetch", "push", "init", "gc", "repack", "pack-refs"})


def _bounded(timeout: float) -> list[str]:
    """``timeout`` in front of git where coreutils has it, so git ends even if we do not."""
    found = shutil.which("timeout")
    return [found, "--kill-after=5", f"{timeout:g}"] if found else []


def _kill_group(child: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    child.communicate()


def _environment(
    environ: Mapping[str, str], git_dir: Path, work_tree: Path, device: str
) -> dict[str, str]:
    env = {k: v for k, v in environ.items() if not k.startswith("GIT_") or k in KEPT_GIT_VARIABLES}
    author = {"NAME": "memlog", "EMAIL": f"memlog@{device}"}
    for role in ("AUTHOR", "COMMITTER"):
        for key, value in author.items():
            env[f"GIT_{role}_{key}"] = value
    env.update(
        GIT_DIR=str(git_dir), GIT_WORK_TREE=str(work_tree), GIT_CONFIG_NOSYSTEM="1",
        GIT_TERMINAL_PROMPT="0", LC_ALL="C", LANGUAGE="C",
    )  # fmt: skip
    return env


def first_line(stderr: bytes, code: int) -> str:
    lines = [ln.strip() for ln in stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    fatal = [ln for ln in lines if ln.startswith(("fatal:", "error:"))]
    return (fatal or lines or [f"exit status {code}"])[0]
