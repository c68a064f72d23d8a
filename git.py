"""What memlog asks of git: files changed lately, and files changed on a branch.

Every call is bounded in time and never raises on a missing or broken git
where the answer is only a hint (the retrieval context); where the user
asked for it (``--references-from-git``) a failure is a clear error.
"""

from __future__ import annotations

import os
import select
import time
from pathlib import Path

from memlog.errors import InvalidInput, MemlogError
from memlog.untrusted import Refused, read_bytes, shown

MAX_CHANGED = 20
CONTEXT_TIMEOUT = 0.6
DIFF_TIMEOUT = 30.0


def recently_changed(root: Path, timeout: float = CONTEXT_TIMEOUT) -> tuple[str, ...]:
    """Files under ``root`` changed by the last three commits (or one), relative to it, at
    most 20; none on any failure.  A project that is a folder of a larger repository (an
    example inside a clone, a package of a monorepo) hears of its own changes only."""
    deadline = time.monotonic() + timeout
    for base in ("HEAD~3", "HEAD~1"):
        argv = ["git", "-C", str(root), "diff", "--name-only", "--relative", f"{base}..HEAD"]
        done = quick_output(argv, deadline)
        if done is None:
            return ()
        if done[0] == 0:
            return tuple(dict.fromkeys(done[1].split()))[:MAX_CHANGED]
    return ()


def quick_output(argv: list[str], deadline: float) -> tuple[int, str] | None:
    """``argv``'s exit status and output, or None when it cannot start or is still running
    at ``deadline`` (``time.monotonic()``; it is then killed).  Spawned directly: the
    subprocess module's import alone is a twentieth of a session start."""
    read_end, write_end = os.pipe()
    null = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_RDWR, 0) for fd in (0, 2)]
    try:
        pid = os.posix_spawnp(
            argv[0], argv, os.environ, file_actions=[(os.POSIX_SPAWN_DUP2, write_end, 1), *null]
        )
    except OSError:
        os.close(read_end)
        return None
    finally:
        os.close(write_end)
    try:
        output = _read_until(read_end, deadline)
    finally:
        os.close(read_end)
    if output is None:
        os.kill(pid, 9)  # SIGKILL
    status = os.waitpid(pid, 0)[1]
    return None if output is None else (os.waitstatus_to_exitcode(status), output)


def _read_until(fd: int, deadline: float) -> str | None:
    chunks: list[bytes] = []
    poller = select.poll()  # (any descriptor number, unlike select.select)
    poller.register(fd, select.POLLIN)
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not poller.poll(left * 1000):
            return None
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b"".join(chunks).decode("utf-8", "replace")
        chunks.append(chunk)


def changed_since(base: str, cwd: Path) -> list[str]:
    """Files changed on this branch: ``git diff --name-only BASE...HEAD`` (deletions left out)."""
    if not base.strip() or base.startswith("-"):
        raise InvalidInput(f"--references-from-git: {shown(base)} is not a git revision")
    import subprocess

    command = ["git", "-C", str(cwd), "diff", "--name-only", "--diff-filter=d", f"{base}...HEAD"]
    try:
        done = subprocess.run(
            [*command, "--"], capture_output=True, text=True, timeout=DIFF_TIMEOUT, check=False
        )
    except FileNotFoundError:
        raise MemlogError("--references-from-git needs git, which is not installed") from None
    except subprocess.TimeoutExpired:
        raise MemlogError(f"git diff --name-only {base}...HEAD timed out") from None
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[0]
        raise InvalidInput(f"--references-from-git: git diff {base}...HEAD failed: {why}")
    return [line for line in done.stdout.splitlines() if line.strip()]


#: the most of a git pointer file (``.git``, ``HEAD``, a loose ref) read: one line naming a
#: path, a ref or a commit
MAX_POINTER_BYTES = 4096
#: the most of ``packed-refs`` read (a large repository's tags fill a few MiB)
MAX_PACKED_REFS_BYTES = 64 << 20


def pointer(path: Path) -> str:
    """A git pointer file's line, read within bounds (a repository is anyone's)."""
    return read_bytes(path, MAX_POINTER_BYTES).decode("utf-8").strip()


def hooks_folder(root: Path, timeout: float = DIFF_TIMEOUT) -> Path | None:
    """The folder git runs ``root``'s hooks from (``core.hooksPath`` when set, else the
    repository's ``hooks``, shared by its worktrees); None outside a repository."""
    done = quick_output(["git", "-C", str(root), "rev-parse", "--git-path", "hooks"],
                        time.monotonic() + timeout)  # fmt: skip
    if done is None or done[0] != 0 or not done[1].strip():
        return None
    return (root / done[1].strip()).resolve()


def current_branch(root: Path) -> str:
    """The branch checked out at ``root``, read from ``.git/HEAD`` (no subprocess):
    ``HEAD`` when detached, empty when there is no repository or it cannot be read."""
    git = root / ".git"
    try:
        if git.is_file():  # a worktree or submodule: ``gitdir: <path>``
            line = pointer(git)
            if not line.startswith("gitdir:"):
                return ""
            git = (root / line.split(":", 1)[1].strip()).resolve()
        head = pointer(git / "HEAD")
    except (OSError, UnicodeDecodeError, Refused):
        return ""
    if head.startswith("ref:"):
        return head.split(":", 1)[1].strip().removeprefix("refs/heads/")
    return "HEAD" if head else ""
