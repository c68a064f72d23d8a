"""Keeping the tests inside the repository: a clone runs them with nothing beside it.

Every fixture lives under ``tests/fixtures/`` (``support.FIXTURES``).  Two checks hold
it, and either fails loudly:

* statically (``tests/test_standalone.py``): no test or benchmark names the folder
  beside the repository the fixtures were first copied from, or climbs out of the
  repository from ``__file__`` or ``REPO``;
* while the suite runs, an audit hook notes every file or folder this process reads
  beside the repository (under its parent folder but outside it; hidden folders such
  as ``~/.cache``, where the test caches live, and git's metadata, which a worktree
  keeps elsewhere, left aside) and any path through a ``fixtures`` folder outside it,
  and the test that read it fails (``conftest.py``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from memlog.tests.real_home import opens_to_write
from memlog.tests.support import REPO

#: audit events that read a path, and which of their arguments is it
_READS = {"open": 0, "os.listdir": 0, "os.scandir": 0, "glob.glob": 0, "os.walk": 0}
#: every read outside the repository this run made, in order
outside: list[str] = []
_state: dict[str, Any] = {"on": False, "repo": REPO}


def beside(path: str, repo: Path) -> bool:
    """Whether the absolute ``path`` is a fixture read outside ``repo``: under the folder
    that holds it but not in it (a hidden folder there, a cache, is no fixture), or any
    path through a ``fixtures`` folder anywhere else."""
    inside = str(repo)
    if path == inside or path.startswith(inside + os.sep) or f"{os.sep}.git{os.sep}" in path:
        return False  # the repository, or git's metadata (a worktree's lives elsewhere)
    if "fixtures" in path.split(os.sep):
        return True
    parent = str(repo.parent)
    if parent == os.sep or not path.startswith(parent + os.sep):
        return False  # a repository at the root of the disk: its neighbours are the system's
    first = path[len(parent) + 1 :].split(os.sep, 1)[0]
    return bool(first) and not first.startswith(".")


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if not _state["on"] or event not in _READS:
        return
    path = args[_READS[event]] if len(args) > _READS[event] else None
    if path is None or isinstance(path, int) or (event == "open" and opens_to_write(*args[1:3])):
        return
    try:
        text = os.path.abspath(os.fsdecode(path))
    except (TypeError, ValueError):
        return
    if beside(text, _state["repo"]):
        outside.append(f"{event} {text}")


def watch(repo: Path = REPO) -> None:
    """Note reads outside ``repo`` from now on (the hook is added once per process)."""
    if not _state.get("added"):
        sys.addaudithook(_audit)
        _state["added"] = True
    _state.update(on=True, repo=repo)


def unwatch() -> None:
    _state.update(on=False, repo=REPO)
