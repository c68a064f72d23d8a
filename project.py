"""Finding the project a command runs in."""

from __future__ import annotations

from pathlib import Path


def find_project_root(cwd: Path) -> Path | None:
    """The nearest ancestor of ``cwd`` (itself included) holding ``.git`` or ``.claude``."""
    here = cwd.resolve()
    for candidate in (here, *here.parents):
        if (candidate / ".git").exists() or (candidate / ".claude").exists():
            return candidate
    return None


def project_name(cwd: Path) -> str:
    """The name of the project ``cwd`` belongs to, or empty when there is none."""
    root = find_project_root(cwd)
    return root.name if root is not None else ""
