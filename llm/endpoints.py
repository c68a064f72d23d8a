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
import socket
from collections.abc import Mapping
from typing import NamedTuple
from urllib.parse import urlsplit

from memlog.untrusted import shown

ANTHROPIC_URL = "https://api.anthropic.com"
ANTHROPIC_KEY = "ANTHROPIC_API_KEY"
#: memlog's own override first, then the variable Claude Code and the SDKs read
ANTHROPIC_URL_ENVS = ("MEMLOG_ANTHROPIC_BASE_URL", "ANTHROPIC_BASE_URL")
OLLAMA_URL = "http://localhost:11434"
OLLAMA_URL_ENV = "MEMLOG_OLLAMA_BASE_URL"
#: how long ``memlog doctor`` and ``memlog setup`` wait for an Ollama server's port
REACH_SECONDS = 0.5
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


def destination(mode: str, env: Mapping[str, str] = os.environ, reach: bool = False) -> Destination:
    """The provider ``memory_extraction_provider: mode`` would use now.  Nothing is sent:
    an Ollama server is named, or with ``reach`` its port is only connected to (and the
    connection closed) to see whether one listens."""
    if mode == "off":
        return Destination("off", "", paid=False, missing="extraction is off")
    names = AUTO if mode == "auto" else (mode,)
    found = [_one(name, env, reach) for name in names]
    usable = [d for d in found if not d.missing]
    if usable:
        return usable[0]
    why = "; ".join(d.missing for d in found)
    return Destination(mode, "", paid=False, missing=why)


def _one(name: str, env: Mapping[str, str], reach: bool) -> Destination:
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
        url = ollama_url(env)
        if not reach:
            return Destination(name, f"the Ollama server at {url}, if one answers", False)
        if not listening(url):
            return Destination(name, "", False, missing=f"no Ollama server answers at {url}")
        return Destination(name, f"the Ollama server at {url}", False)
    return Destination(name, "", False, missing=f"unknown provider {shown(name)}")


def listening(url: str, timeout: float = REACH_SECONDS) -> bool:
    """Whether something accepts a connection at ``url``'s host and port (nothing is sent:
    the connection is closed at once)."""
    parsed = urlsplit(url)
    try:
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
    except ValueError:
        return False
    try:
        with socket.create_connection((parsed.hostname or "localhost", port), timeout=timeout):
            return True
    except OSError:
        return False
