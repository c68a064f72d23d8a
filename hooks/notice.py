"""The plugin's first session says, once, what extraction sends where.

Extraction is the feature (memlog learns from sessions), but a session's text
then leaves the machine for a model.  ``memlog setup`` says which provider
extraction uses, what it sends and the daily budget when it registers the
hooks; a plugin is installed without running memlog, so its first
SessionStart says it instead, to the user (Claude Code's ``systemMessage``,
never the model's context).  What was said is kept in the plugin's own data
folder (``$CLAUDE_PLUGIN_DATA``, which Claude Code gives a plugin's hooks),
not in the memlog home; while it is there nothing is said again.

Claude Code shows a hook's message only to a person at a terminal: ``claude -p``
and the Agent SDK (``CLAUDE_CODE_ENTRYPOINT=sdk-…``; since 2.1.332 also
``CLAUDE_CODE_SESSION_ATTENDED=0``) print the answer and nothing of it.  So the
notice waits for the first session someone watches rather than being spent where
nobody reads it; ``memlog doctor`` says the same at any time.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memlog.home import Home

TOLD = "extraction-told"


def _told_file(env: Mapping[str, str]) -> Path | None:
    folder = env.get("CLAUDE_PLUGIN_DATA", "").strip()
    return Path(folder) / TOLD if folder else None


def watched(env: Mapping[str, str]) -> bool:
    """Whether a person sees this session's hook messages (not ``claude -p``, not the SDK)."""
    entry = env.get("CLAUDE_CODE_ENTRYPOINT", "").strip()
    return not entry.startswith("sdk") and env.get("CLAUDE_CODE_SESSION_ATTENDED") != "0"


def first_time(payload: dict[str, Any], home: Home, env: Mapping[str, str] = os.environ) -> str:
    """The notice when the plugin runs this hook in a session someone watches and has not
    shown it yet, else ""."""
    told = _told_file(env)
    if told is None or told.exists() or not watched(env):
        return ""
    from memlog.api.health import extraction_notice
    from memlog.hooks.common import workspace

    ws = workspace(str(payload.get("cwd") or os.getcwd()), home)
    return extraction_notice(ws, env, reach=False)  # the hook connects to nothing


def remember(said: str, env: Mapping[str, str] = os.environ) -> None:
    """Keep what was said, so the next sessions say nothing."""
    from memlog.files import atomic_write
    from memlog.home import ensure_dir

    told = _told_file(env)
    if told is not None:
        ensure_dir(told.parent)
        atomic_write(told, (said + "\n").encode("utf-8"))
