"""Configuration: ``<project>/.claude/iflow-dev.local.md`` front matter, then ``MEMLOG_*``.

Every field is optional.  A value that is missing takes its default; a
value that is wrong gives one warning and the default, never an error.
Environment variables override the file: ``memory_injection_limit`` is
``MEMLOG_INJECTION_LIMIT``, and so on (the ``memory_`` prefix dropped).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import msgspec

from memlog.untrusted import Refused, load_yaml, read_bytes, shown
from memlog.vocabulary import (
    CONTEXT_CAP_CHARS,
    DEFAULT_SPACES,
    EXTRACTION_PROVIDERS,
    INJECTION_MAX_CHARS,
    Space,
)

CONFIG_FILE = Path(".claude") / "iflow-dev.local.md"
PROVIDERS = tuple(DEFAULT_SPACES)
KEYWORD_PROVIDERS = ("local", "haiku", "ollama", "caller", "off", "auto")
RANKINGS = ("fused", "d3")
#: the largest configuration file read (its front matter is a few lines)
MAX_CONFIG_BYTES = 64 << 10
#: the smallest injection budget: the block's header, one entry and its last lines
MIN_INJECTION_CHARS = 1000


class Config(msgspec.Struct, frozen=True):
    memory_injection_enabled: bool = True
    memory_injection_limit: int = 20
    #: characters the SessionStart injection may take in all (Claude Code's inline cap is
    #: 10,000: a longer context reaches the model only as a 2 KB preview)
    memory_injection_max_chars: int = INJECTION_MAX_CHARS
    memory_semantic_enabled: bool = True
    memory_vector_weight: float = 0.5
    memory_keyword_weight: float = 0.2
    memory_prominence_weight: float = 0.3
    memory_embedding_provider: str = "local"
    #: empty: the provider's default model
    memory_embedding_model: str = ""
    #: 0: the provider's default dimensions
    memory_embedding_dimensions: int = 0
    memory_embedding_model_path: str = ""
    memory_embedding_base_url: str = ""
    memory_keyword_provider: str = "local"
    memory_inject_on_compact: bool = True
    memory_inject_facts: bool = False
    memory_hook_budget_ms: int = 2500
    memory_query_embedding_budget_ms: int = 1500
    #: minutes the resident ranker waits for the next start before it leaves (0: none)
    memory_resident_minutes: int = 30
    #: ``fused`` (z-scored signals and neighbours, retrieval/fusion.py) or ``d3`` (spec #024)
    memory_ranking: str = "fused"
    memory_fusion_lexical_weight: float = 1.0
    memory_fusion_vector_weight: float = 1.0
    memory_fusion_prominence_weight: float = 0.0
    memory_neighbour_weight: float = 1.0
    #: how much a lesson's record of use (sessions that applied it, of those judged) moves it
    memory_usefulness_weight: float = 1.0
    #: mark lessons of this project whose cited files are gone from its working tree
    memory_stale_check: bool = True
    #: maintenance proposes retiring a lesson judged in this many sessions and never applied
    memory_retire_unused_after: int = 10
    #: the least relevance (retrieval/relevance.py, a chance in [0, 1]) an entry recalled
    #: for a prompt must have
    memory_relevance_floor: float = 0.5
    #: recall at the prompt (the UserPromptSubmit hook): a few entries that pass the floor
    memory_prompt_recall: bool = True
    #: the prompt hook's deadline
    memory_prompt_budget_ms: int = 1000
    memory_extraction_provider: str = "auto"
    memory_extraction_daily_budget_usd: float = 0.50
    #: input tokens one session's extraction may send (estimated before the call)
    memory_extraction_max_input_tokens: int = 40_000
    memory_claude_md: bool = False
    #: start ``memlog sync`` (detached) when a Claude Code session ends
    memory_sync_at_session_end: bool = False
    #: seconds a writer waits for another one holding the log before it gives up
    memory_lock_wait_seconds: int = 60

    @property
    def space(self) -> Space:
        """The embedding space in force: the provider's, with the model and size chosen."""
        default = DEFAULT_SPACES[self.memory_embedding_provider]
        return Space(
            default.provider,
            self.memory_embedding_model or default.model,
            self.memory_embedding_dimensions or default.dimensions,
        )


Check = Callable[[Any], bool]


def _is_bool(v: Any) -> bool:
    return isinstance(v, bool)


def _is_int(low: int) -> Check:
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= low


def _is_within(low: int, high: int) -> Check:
    return lambda v: _is_int(low)(v) and v <= high


def _is_weight(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v >= 0


def _is_fraction(v: Any) -> bool:
    return _is_weight(v) and v <= 1


def _one_of(choices: tuple[str, ...]) -> Check:
    return lambda v: isinstance(v, str) and v in choices


def _is_str(v: Any) -> bool:
    return isinstance(v, str)


CHECKS: dict[str, tuple[Check, str]] = {
    "memory_injection_enabled": (_is_bool, "true or false"),
    "memory_injection_limit": (_is_int(-1), "a whole number ≥ -1"),
    "memory_injection_max_chars": (
        _is_within(MIN_INJECTION_CHARS, CONTEXT_CAP_CHARS),
        f"characters from {MIN_INJECTION_CHARS:,} to {CONTEXT_CAP_CHARS:,} (Claude Code gives "
        "the model a longer context only as a preview)",
    ),
    "memory_semantic_enabled": (_is_bool, "true or false"),
    "memory_vector_weight": (_is_weight, "a number ≥ 0"),
    "memory_keyword_weight": (_is_weight, "a number ≥ 0"),
    "memory_prominence_weight": (_is_weight, "a number ≥ 0"),
    "memory_embedding_provider": (_one_of(PROVIDERS), " | ".join(PROVIDERS)),
    "memory_embedding_model": (_is_str, "text"),
    "memory_embedding_dimensions": (_is_int(0), "a whole number ≥ 0"),
    "memory_embedding_model_path": (_is_str, "a path"),
    "memory_embedding_base_url": (_is_str, "a URL"),
    "memory_keyword_provider": (_one_of(KEYWORD_PROVIDERS), " | ".join(KEYWORD_PROVIDERS)),
    "memory_inject_on_compact": (_is_bool, "true or false"),
    "memory_inject_facts": (_is_bool, "true or false"),
    "memory_hook_budget_ms": (_is_int(100), "milliseconds ≥ 100"),
    "memory_query_embedding_budget_ms": (_is_int(0), "milliseconds ≥ 0"),
    "memory_resident_minutes": (_is_int(0), "minutes ≥ 0"),
    "memory_ranking": (_one_of(RANKINGS), " | ".join(RANKINGS)),
    "memory_fusion_lexical_weight": (_is_weight, "a number ≥ 0"),
    "memory_fusion_vector_weight": (_is_weight, "a number ≥ 0"),
    "memory_fusion_prominence_weight": (_is_weight, "a number ≥ 0"),
    "memory_neighbour_weight": (_is_weight, "a number ≥ 0"),
    "memory_usefulness_weight": (_is_weight, "a number ≥ 0"),
    "memory_stale_check": (_is_bool, "true or false"),
    "memory_retire_unused_after": (_is_int(1), "a number of sessions ≥ 1"),
    "memory_relevance_floor": (_is_fraction, "a number from 0 to 1"),
    "memory_prompt_recall": (_is_bool, "true or false"),
    "memory_prompt_budget_ms": (_is_int(100), "milliseconds ≥ 100"),
    "memory_extraction_provider": (_one_of(EXTRACTION_PROVIDERS), " | ".join(EXTRACTION_PROVIDERS)),
    "memory_extraction_daily_budget_usd": (_is_weight, "dollars ≥ 0"),
    "memory_extraction_max_input_tokens": (_is_int(1000), "tokens ≥ 1000"),
    "memory_claude_md": (_is_bool, "true or false"),
    "memory_sync_at_session_end": (_is_bool, "true or false"),
    "memory_lock_wait_seconds": (_is_int(0), "seconds ≥ 0"),
}


def front_matter(text: str) -> str | None:
    """The YAML between a leading ``---`` line and the next one, if any."""
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        return None
    for index, line in enumerate(lines[1:], 1):
        if line.strip() in ("---", "..."):
            return "\n".join(lines[1:index])
    return None


def _parse_yaml(text: str) -> Any:
    """YAML, read without the YAML library when it is flat ``key: scalar`` lines whose
    meaning is plain (the hook then spends no ~15 ms importing it); else by the bounded
    loader (no aliases, nesting capped: ``untrusted.load_yaml``)."""
    simple = _simple_mapping(text)
    if simple is not None:
        return simple
    return load_yaml(text)


_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*):[ \t]+(\S.*?)[ \t]*")
_INT = re.compile(r"[-+]?(?:[1-9][0-9]*|0)")  # no leading zero: YAML 1.1 reads 010 as octal
_FLOAT = re.compile(r"[-+]?(?:[1-9][0-9]*|0)\.[0-9]+")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_./@+-]*")
#: the words PyYAML's safe loader reads as booleans and nulls (its resolver's own lists)
_YAML_CONSTANTS: dict[str, bool | None] = {
    **{w: True for w in "yes Yes YES true True TRUE on On ON".split()},
    **{w: False for w in "no No NO false False FALSE off Off OFF".split()},
    **{w: None for w in "~ null Null NULL".split()},
}
#: other words YAML 1.1 may read otherwise: left to the library
_YAML_WORDS = frozenset("y n yes no on off true false null".split())


def _plain_scalar(text: str) -> tuple[bool, Any]:
    """``(True, value)`` for an integer, a decimal, true/false or a plain word; else
    ``(False, None)`` (the YAML library decides)."""
    if text in _YAML_CONSTANTS:
        return True, _YAML_CONSTANTS[text]
    if _INT.fullmatch(text):
        return True, int(text)
    if _FLOAT.fullmatch(text):
        return True, float(text)
    if _WORD.fullmatch(text) and text.lower() not in _YAML_WORDS:
        return True, text
    return False, None


def _simple_mapping(text: str) -> dict[str, Any] | Any | None:
    """The mapping of flat ``key: scalar`` lines, a lone plain scalar, or None."""
    if not text.strip():
        return None
    lone = _plain_scalar(text.strip())
    if lone[0] and "\n" not in text.strip():
        return lone[1]
    found: dict[str, Any] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        match = _LINE.fullmatch(line)
        plain = _plain_scalar(match.group(2)) if match else (False, None)
        if match is None or not plain[0] or match.group(1) in found:
            return None
        found[match.group(1)] = plain[1]
    return found


def _read_file(root: Path | None, warnings: list[str]) -> dict[str, Any]:
    if root is None:
        return {}
    path = root / CONFIG_FILE
    try:  # a repository's file, read within bounds (``untrusted``)
        text = read_bytes(path, MAX_CONFIG_BYTES).decode("utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, Refused) as exc:
        warnings.append(f"{path}: unreadable ({_reason(exc)}); using defaults")
        return {}
    block = front_matter(text)
    try:
        data = _parse_yaml(block) if block else {}
    except Refused as exc:
        warnings.append(f"{path}: front matter refused: {exc}; using defaults")
        return {}
    except Exception as exc:  # noqa: BLE001 - any YAML error means: defaults
        warnings.append(
            f"{path}: front matter is not valid YAML ({type(exc).__name__}); using defaults"
        )
        return {}
    return data if isinstance(data, dict) else {}


def _reason(exc: Exception) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) if isinstance(exc, Refused) else type(exc).__name__


def _from_env(env: Mapping[str, str], warnings: list[str]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for field in CHECKS:
        name = "MEMLOG_" + field.removeprefix("memory_").upper()
        if name in env:
            try:
                found[field] = _parse_yaml(env[name]) if env[name].strip() else ""
            except Exception:  # noqa: BLE001 - reported as a bad value below
                found[field] = env[name]
    return found


def load_config(
    root: Path | None, env: Mapping[str, str] | None = None
) -> tuple[Config, list[str]]:
    """The configuration for the project at ``root`` and the warnings it gave."""
    warnings: list[str] = []
    values = {
        **_read_file(root, warnings),
        **_from_env(os.environ if env is None else env, warnings),
    }
    chosen: dict[str, Any] = {}
    for field, (check, expected) in CHECKS.items():
        if field not in values or values[field] is None:
            continue
        value = values[field]
        if field in ("memory_keyword_provider", "memory_extraction_provider") and value is False:
            value = "off"  # YAML reads a bare `off` as false
        numeric = field.endswith(("_weight", "_usd"))
        if isinstance(value, int) and not isinstance(value, bool) and numeric:
            value = float(value)
        if check(value):
            chosen[field] = value
        else:
            default = getattr(Config(), field)
            warnings.append(f"{field}: {shown(value)} is not {expected}; using {default!r}")
    return Config(**chosen), warnings
