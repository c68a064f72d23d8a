"""The chain of extraction models ``memory_extraction_provider`` names.

=============  ================================================
``auto``       claude-cli, anthropic, ollama (the first usable)
``claude-cli`` the user's own ``claude`` (no key needed)
``anthropic``  the Messages API with ``ANTHROPIC_API_KEY``
``ollama``     a local Ollama server
``off``        none: sessions stay pending
=============  ================================================
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import httpx

from memlog.llm.anthropic import AnthropicMessages
from memlog.llm.base import Chain, Factory
from memlog.llm.claude_cli import ClaudeCli
from memlog.llm.endpoints import AUTO
from memlog.llm.ollama import OllamaChat

ORDER: dict[str, tuple[str, ...]] = {
    "auto": AUTO,
    "claude-cli": ("claude-cli",),
    "anthropic": ("anthropic",),
    "ollama": ("ollama",),
    "off": (),
}


def make_chain(mode: str, client: httpx.Client, env: Mapping[str, str] = os.environ) -> Chain:
    """The models of ``mode`` in order, each made when first needed."""
    factories: dict[str, Factory] = {
        "claude-cli": lambda: ClaudeCli(env),
        "anthropic": lambda: AnthropicMessages(client, env),
        "ollama": lambda: OllamaChat(client, env),
    }
    return Chain([(name, factories[name]) for name in ORDER.get(mode, ())])
