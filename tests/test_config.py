"""Configuration: the front matter of the project file, then ``MEMLOG_*``."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from memlog.config import Config, load_config

# -- configuration ----------------------------------------------------------------------------


def write_config(root: Path, text: str) -> None:
    (root / ".claude").mkdir(parents=True, exist_ok=True)
    (root / ".claude" / "iflow-dev.local.md").write_text(text)


def test_config_defaults_when_missing(tmp_path: Path) -> None:
    assert load_config(None, env={}) == (Config(), [])
    assert load_config(tmp_path, env={}) == (Config(), [])
    write_config(tmp_path, "# no front matter\nmemory_injection_limit: 3\n")
    assert load_config(tmp_path, env={}) == (Config(), [])
    assert Config().memory_injection_limit == 20 and Config().memory_injection_enabled


EVERY_FIELD = {
    "memory_injection_enabled": False,
    "memory_injection_limit": -1,
    "memory_injection_max_chars": 6000,
    "memory_semantic_enabled": False,
    "memory_vector_weight": 0.6,
    "memory_keyword_weight": 0.1,
    "memory_prominence_weight": 0.3,
    "memory_embedding_provider": "ollama",
    "memory_embedding_model": "nomic-embed-text",
    "memory_embedding_dimensions": 256,
    "memory_embedding_model_path": "/opt/models/minilm",
    "memory_embedding_base_url": "http://127.0.0.1:11434",
    "memory_keyword_provider": "off",
    "memory_inject_on_compact": False,
    "memory_inject_facts": True,
    "memory_hook_budget_ms": 1200,
    "memory_query_embedding_budget_ms": 800,
    "memory_resident_minutes": 5,
    "memory_ranking": "d3",
    "memory_fusion_lexical_weight": 0.8,
    "memory_fusion_vector_weight": 1.5,
    "memory_fusion_prominence_weight": 0.1,
    "memory_neighbour_weight": 0.0,
    "memory_usefulness_weight": 0.5,
    "memory_stale_check": False,
    "memory_retire_unused_after": 4,
    "memory_relevance_floor": 0.35,
    "memory_prompt_recall": False,
    "memory_prompt_budget_ms": 700,
    "memory_extraction_provider": "anthropic",
    "memory_extraction_daily_budget_usd": 0.25,
    "memory_extraction_max_input_tokens": 20000,
    "memory_claude_md": True,
    "memory_sync_at_session_end": True,
    "memory_lock_wait_seconds": 5,
}


def test_config_parses_every_field(tmp_path: Path) -> None:
    assert set(EVERY_FIELD) == set(Config.__struct_fields__)
    lines = "\n".join(f"{k}: {json.dumps(v)}" for k, v in EVERY_FIELD.items())
    write_config(tmp_path, f"---\n{lines}\nyolo_mode: true\n---\n\n# Notes\n")
    config, warnings = load_config(tmp_path, env={})
    assert warnings == []
    assert msgspec.structs.asdict(config) == EVERY_FIELD


def test_config_int_weight_becomes_float(tmp_path: Path) -> None:
    write_config(tmp_path, "---\nmemory_vector_weight: 1\n---\n")
    config, _ = load_config(tmp_path, env={})
    assert config.memory_vector_weight == 1.0 and isinstance(config.memory_vector_weight, float)


BAD_VALUES = {
    "memory_injection_enabled": '"yes please"',
    "memory_injection_limit": "-2",
    "memory_semantic_enabled": "3",
    "memory_vector_weight": "-0.5",
    "memory_keyword_weight": ".nan",
    "memory_prominence_weight": "true",
    "memory_embedding_provider": "word2vec",
    "memory_embedding_model": "[a, b]",
    "memory_embedding_dimensions": "1.5",
    "memory_embedding_model_path": "{x: 1}",
    "memory_embedding_base_url": "42",
    "memory_keyword_provider": "gpt",
    "memory_inject_on_compact": "sometimes",
    "memory_inject_facts": "0",
    "memory_hook_budget_ms": "50",
    "memory_query_embedding_budget_ms": "-1",
    "memory_resident_minutes": "-1",
    "memory_ranking": "bm42",
    "memory_fusion_lexical_weight": "-1",
    "memory_fusion_vector_weight": ".inf",
    "memory_fusion_prominence_weight": "high",
    "memory_neighbour_weight": "[1]",
    "memory_relevance_floor": "1.5",
    "memory_sync_at_session_end": "nightly",
    "memory_lock_wait_seconds": -1,
}


@pytest.mark.parametrize("field", sorted(BAD_VALUES))
def test_config_bad_value_gives_one_warning_and_the_default(tmp_path: Path, field: str) -> None:
    other = "memory_inject_facts: true" if field == "memory_injection_limit" else ""
    other = other or "memory_injection_limit: 7"
    write_config(tmp_path, f"---\n{field}: {BAD_VALUES[field]}\n{other}\n---\n")
    config, warnings = load_config(tmp_path, env={})
    assert len(warnings) == 1 and warnings[0].startswith(f"{field}:")
    assert getattr(config, field) == getattr(Config(), field)
    # the good values stand
    assert config.memory_injection_limit == 7 or config.memory_inject_facts


def test_config_invalid_yaml_gives_defaults_and_one_warning(tmp_path: Path) -> None:
    write_config(tmp_path, "---\nmemory_injection_limit: [5\nmemory_semantic_enabled: false\n---\n")
    config, warnings = load_config(tmp_path, env={})
    assert config == Config()
    assert len(warnings) == 1 and "not valid YAML" in warnings[0]
    write_config(tmp_path, "---\n- just\n- a list\n---\n")
    assert load_config(tmp_path, env={}) == (Config(), [])


def test_config_environment_overrides_the_file(tmp_path: Path) -> None:
    write_config(tmp_path, "---\nmemory_injection_limit: 5\nmemory_semantic_enabled: true\n---\n")
    env = {"MEMLOG_INJECTION_LIMIT": "7", "MEMLOG_SEMANTIC_ENABLED": "false"}
    config, warnings = load_config(tmp_path, env=env)
    assert (config.memory_injection_limit, config.memory_semantic_enabled) == (7, False)
    assert warnings == []
    config, warnings = load_config(tmp_path, env={"MEMLOG_EMBEDDING_PROVIDER": "nope"})
    assert config.memory_embedding_provider == "local" and len(warnings) == 1


@pytest.mark.parametrize(
    "text", ["off", "Off", "ON", "yes", "No", "TRUE", "False", "null", "~", "NULL", "y", "oFf",
             "memory_keyword_provider: off\nmemory_inject_facts: Yes\nb: ~\nc: y"],
)  # fmt: skip
def test_yaml_words_read_as_the_yaml_library_reads_them(text: str) -> None:
    """Booleans and nulls the plain reading takes (so ``off`` costs no YAML import) mean
    what PyYAML's safe loader makes of them; what it does not know is left to it."""
    import yaml

    from memlog.config import _parse_yaml

    found, expected = _parse_yaml(text), yaml.safe_load(text)
    assert (found, type(found)) == (expected, type(expected))
