"""Where memlog's requests to language models go, and what a configured extraction sends
where: read from the environment only, without loading an HTTP client (the SessionStart
hook and ``memlog doctor`` say it without sending anything).

The Messages API: ``MEMLOG_ANTHROPIC_BASE_URL`` when set (memlog's own override), else
``ANTHROPIC_BASE_URL`` (the gateway Claude Code itself is pointed at), else the public
endpoint.  Ollama: ``MEMLOG_OLLAMA_BASE_URL``, else ``http://localhost:11434``.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from typing import NamedTuple

from memlog.untrusted import shown

ANTHROPIC_URL = "https://api.anthropic.com"
ANTHROPIC_KEY = "ANTHROPIC_API_KEY"
#: memlog's own override first, then the variable Claude Code and the SDKs read
ANTHROPIC_URL_ENVS = ("MEMLOG_ANTHROPIC_BASE_URL", "ANTHROPIC_BASE_URL")
OLLAMA_URL = "http://localhost:11434"
OLLAMA_URL_ENV = "MEMLOG_OLLAMA_BASE_URL"
#: the extraction providers ``auto`` tries, in order
AUTO = ("claude-cli", "anthropic", "ollama")


def anthropic_url(env: Mapping[str, str]) -> str:
    found = next((env[name] for name in ANTHROPIC_URL_ENVS if env.get(name, "").strip()), "")
    return (found.strip() or ANTHROPIC_URL).rstrip("/")


def ollama_url(env: Mapping[str, str]) -> str:
    return (env.get(OLLAMA_URL_ENV, "").strip() or OLLAMA_URL).rstrip("/")


class Destination(NamedTuple):
    """Which extraction provider a mode uses here, and where a session's text then goes."""

    provider: str
    #: who receives the text, in words ("" when nothing is sent)
    where: str
    #: whether calls cost money (the daily budget applies)
    paid: bool
    #: why no provider can be used ("" when one can)
    missing: str = ""


def destination(mode: str, env: Mapping[str, str] = os.environ) -> Destination:
    """The provider ``memory_extraction_provider: mode`` would use now (no network is asked:
    an Ollama server is named, not reached)."""
    if mode == "off":
        return Destination("off", "", paid=False, missing="extraction is off")
    found = [_one(name, env) for name in (AUTO if mode == "auto" else (mode,))]
    usable = [d for d in found if not d.missing]
    if usable:
        return usable[0]
    why = "; ".join(d.missing for d in found)
    return Destination(mode, "", paid=False, missing=why)


def _one(name: str, env: Mapping[str, str]) -> Destination:
    if name == "claude-cli":
        if shutil.which("claude", path=env.get("PATH", os.defpath)) is None:
            return Destination(name, "", True, missing="no `claude` on PATH")
        return Destination(
            name, "your own `claude` CLI (Claude Haiku, your Claude Code sign-in)", True
        )
    if name == "anthropic":
        if not env.get(ANTHROPIC_KEY, "").strip():
            return Destination(name, "", True, missing=f"no {ANTHROPIC_KEY}")
        return Destination(name, f"the Messages API at {anthropic_url(env)} (Claude Haiku)", True)
    if name == "ollama":
        return Destination(name, f"the Ollama server at {ollama_url(env)}, if one answers", False)
    return Destination(name, "", False, missing=f"unknown provider {shown(name)}")
