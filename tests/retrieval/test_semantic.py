"""Retrieval and injection: query sanitising, configuration, context signals, the
semantic and markdown pipelines, recall tracking and the inject/search commands.

Acceptance criteria covered: cross-project memory spec AC-1.1…1.5, 1.7,
4.1…4.3, 5.1…5.3; semantic memory spec 2, 3, 6, 7, 12 and D10.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from memlog import inject
from memlog.commands.cli import cli
from memlog.config import Config, load_config
from memlog.context import (
    Feature,
    Signals,
    active_feature,
    changed_files,
    collect,
    compose_query,
    first_paragraph,
)
from memlog.embeddings.hashing import HashingProvider
from memlog.eventlog.events import Observed, Recalled, Reembedded, Retired, content_hash
from memlog.eventlog.log import EventLog
from memlog.inject import Request, build, record
from memlog.projections.sqlite_view import retrieval, store
from memlog.projections.views import catch_up

HASHING = Config(memory_embedding_provider="hashing")
HASHING_SPACE = ("hashing", "blake2b-words", 384)
HEADER = "## Engineering Memory (from knowledge bank)"
SECTION_TITLES = ("### Anti-Patterns to Avoid", "### Heuristics", "### Patterns to Follow")
_EMBEDDER = HashingProvider()


# -- helpers -----------------------------------------------------------------------------------


def vector_of(text: str, dims: int = 384) -> bytes:
    if dims == 384:
        return _EMBEDDER.embed(text, "document").astype("<f4").tobytes()
    values = np.random.default_rng(len(text)).standard_normal(dims).astype("<f4")
    return (values / np.linalg.norm(values)).astype("<f4").tobytes()


def entry(
    name: str,
    description: str,
    category: str = "patterns",
    project: str = "project-a",
    space: tuple[str, str, int] | None = HASHING_SPACE,
    **extra: Any,
) -> list[Any]:
    """An ``entry.observed`` event and, unless ``space`` is None, its vector event."""
    observed = Observed(
        name=name, description=description, category=category, project=project, **extra
    )
    events: list[Any] = [observed]
    if space is not None:
        provider, model, dims = space
        events.append(
            Reembedded(
                entry_id=observed.entry_id,
                provider=provider,
                model=model,
                dimensions=dims,
                vector=vector_of(f"{name} {description}", dims),
            )
        )
    return events


def seed(home: Path, *groups: list[Any]) -> None:
    EventLog(home).append([e for group in groups for e in group])


def filler(count: int, category: str, topic: str = "deployment", **extra: Any) -> list[Any]:
    words = ("blue", "green", "canary", "rollback", "health", "checks", "traffic", "regions")
    return [
        e
        for i in range(count)
        for e in entry(
            f"{topic} {category} {i}",
            f"During {topic} step {i} use {words[i % 8]} {words[(i + 3) % 8]} as {category} {i}.",
            category,
            **extra,
        )
    ]


def project(
    parent: Path, name: str, settings_yaml: str | None = None, spec: str | None = None
) -> Path:
    """A project folder (with ``.claude``), its config and, given a spec, an active feature."""
    root = parent / name
    (root / ".claude").mkdir(parents=True)
    if settings_yaml is not None:
        (root / ".claude" / "iflow-dev.local.md").write_text(f"---\n{settings_yaml}\n---\n")
    if spec is not None:
        feature = root / "docs" / "features" / "042-file-parser"
        feature.mkdir(parents=True)
        meta = {"slug": "file-parser", "status": "active", "lastCompletedPhase": "design"}
        (feature / ".meta.json").write_text(json.dumps(meta))
        (feature / "spec.md").write_text(f"# Spec\n\n{spec}\n\n## Details\n\nmore\n")
    return root


def make_request(home: Path, root: Path | None, config: Config = HASHING, **extra: Any) -> Request:
    return Request(
        home=home,
        root=root,
        project=root.name if root else "",
        config=config,
        deadline=time.monotonic() + 30,
        **extra,
    )


def entry_headers(text: str) -> list[str]:
    """The ``### `` lines of a block that open entries (section titles left out)."""
    return [ln for ln in text.splitlines() if ln.startswith("### ") and ln not in SECTION_TITLES]


def live_entry(home: Path, entry_id: str) -> Any:
    catch_up(home, inject.space_for(HASHING))
    db = store.connect(home / store.DB_NAME)
    try:
        return store.load_entries(db, [entry_id])[entry_id]
    finally:
        db.close()


# -- fts_query ----------------------------------------------------------------------------------

FTS = sqlite3.connect(":memory:")
FTS.execute(
    "CREATE VIRTUAL TABLE t USING fts5(name, description, keywords, reasoning, "
    "tokenize='porter unicode61 remove_diacritics 2')"
)
TRICKY = (
    "-", ".", "/", ":", '"', "'", '""', "NEAR", "NEAR(", "NEAR/2", "AND", "OR", "NOT", "*", "^",
    "(", ")", "{", "}", "+", "anti-patterns:", "name:", "{name description}:", "description:x",
    "-foo", "foo*", "^bar", "a.b.c", "src/memlog/inject.py", "C++", "v1.2.3", "naïve", "日本語",
    "İstanbul", "ǅemal", "Ꭰꭰ", "ß", "\u200b", "\\", "%", "_", "__init__", "AND OR NOT",
)  # fmt: skip
noise = st.lists(st.one_of(st.text(max_size=6), st.sampled_from(TRICKY)), max_size=12).map(
    lambda parts: " ".join(parts)
)
words = st.text(
    alphabet=st.characters(categories=("Lu", "Ll", "Lt", "Lo", "Nd")), min_size=2, max_size=10
)


def matches(expression: str | None) -> list[Any]:
    if expression is None:
        return []
    return FTS.execute("SELECT rowid FROM t WHERE t MATCH ?", (expression,)).fetchall()


@settings(max_examples=400, deadline=None)
@given(noise, words, st.sampled_from(["{}", "-{}", '"{}"', "{}:", "({})", "{}*", "^{}", "x/{}"]))
@example("anti-patterns: NEAR(", "ᎠᎡ", "{}")  # Cherokee: Python lowercases it, SQLite does not
@example('"unterminated AND', "İstanbul", "-{}:")
@example("^* OR NOT", "ǅemal", "{}*")
def test_fts_query_never_errors_and_never_filters(text: str, word: str, wrap: str) -> None:
    matches(retrieval.fts_query(text))  # arbitrary text alone: no error
    assume(word.lower() not in retrieval.STOPWORDS)  # function words are left out on purpose
    FTS.execute("DELETE FROM t")
    FTS.execute(
        "INSERT INTO t(name, description, keywords, reasoning) VALUES ('zz', ?, '', '')",
        (f"before {word} after",),
    )
    half = len(text) // 2
    query = f"{text[:half]} {wrap.format(word)} {text[half:]}"
    assert matches(retrieval.fts_query(query)), (query, retrieval.fts_query(query))


def test_fts_query_quotes_every_token() -> None:
    assert retrieval.fts_query(None) is None
    assert retrieval.fts_query("") is None
    assert retrieval.fts_query("a - : *") is None
    # single letters say nothing and are dropped; single digits are kept
    assert retrieval.fts_query('anti-patterns: NEAR(x "yz") 7') == (
        '"anti" OR "patterns" OR "near" OR "yz" OR "7"'
    )
    many = " ".join(f"w{i}" for i in range(100))
    assert retrieval.fts_query(many).count(" OR ") == retrieval.MAX_TOKENS - 1
    # ASCII case variants are one token; other scripts are left to FTS5's folding
    assert retrieval.fts_query("Parse parse PARSE") == '"parse"'
    assert retrieval.fts_query("Ꭰꭰ ᎠᎠ Straße") == '"Ꭰꭰ" OR "ᎠᎠ" OR "Straße"'


def test_bm25_over_the_real_view_with_hostile_queries(memlog_home: Path) -> None:
    seed(
        memlog_home,
        entry(
            "Parser anti-patterns", "Never hand-roll a parser: use the grammar.", "anti-patterns"
        ),
        entry("Deploys", "Deploy on Tuesdays with a canary.", "patterns"),
    )
    catch_up(memlog_home, inject.space_for(HASHING))
    db = store.connect(memlog_home / store.DB_NAME, readonly=True)
    try:
        found = retrieval.candidates(db, ("anti-patterns", "heuristics", "patterns"))
        where = found.rowid_positions()
        parser = found.positions()[content_hash("Never hand-roll a parser: use the grammar.")]
        for query in (
            'anti-patterns: "parser',
            "NEAR(parser",
            "name:parser",
            "-parser*",
            "^PARSER",
        ):
            scores = retrieval.bm25_scores(db, query, where)
            assert scores[parser] > 0 and scores[1 - parser] == 0, query
        assert not retrieval.bm25_scores(db, "AND OR NOT", where).any()
    finally:
        db.close()


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


# -- context signals ----------------------------------------------------------------------------


def feature(root: Path, folder: str, status: str, mtime: float, **files: str) -> Path:
    path = root / "docs" / "features" / folder
    path.mkdir(parents=True)
    meta = {"slug": folder.split("-", 1)[1], "status": status, "lastCompletedPhase": "specify"}
    (path / ".meta.json").write_text(json.dumps(meta))
    for name, text in files.items():
        (path / f"{name}.md").write_text(text)
    os.utime(path / ".meta.json", (mtime, mtime))
    return path


def test_active_feature_is_the_newest_active_one(tmp_path: Path) -> None:
    assert active_feature(tmp_path) is None
    feature(tmp_path, "001-old", "active", 1_000_000, spec="Old work.")
    feature(tmp_path, "002-newer", "active", 3_000_000, spec="Newer work.")
    feature(tmp_path, "003-done", "completed", 9_000_000, spec="Finished work.")
    (tmp_path / "docs" / "features" / "004-broken").mkdir()
    (tmp_path / "docs" / "features" / "004-broken" / ".meta.json").write_text("{not json")
    assert active_feature(tmp_path) == Feature("newer", "specify", "Newer work.")


def test_spec_first_paragraph_is_capped_at_100_words(tmp_path: Path) -> None:
    words = [f"w{i}" for i in range(150)]
    body = " ".join(words[:12]) + "\n" + "  ".join(words[12:])
    spec = f"# Spec: Parser\n\n{body}\n\nSecond paragraph.\n\n## Scope\nx\n"
    feature(tmp_path, "001-parser", "active", 1, spec=spec, prd="The PRD paragraph.")
    found = active_feature(tmp_path)
    assert found is not None
    assert found.description == " ".join(words[:100])
    assert first_paragraph("## Only a heading\ntext") == ""
    assert first_paragraph("Intro line one\nline two\n\nnext") == "Intro line one line two"


def test_prd_is_the_fallback_description(tmp_path: Path) -> None:
    feature(tmp_path, "001-a", "active", 1, prd="# PRD\n\nWhy we build it.\n\n## Goals\n")
    assert active_feature(tmp_path) == Feature("a", "specify", "Why we build it.")
    feature(tmp_path, "002-b", "active", 2, spec="## Only headings\n", prd="From the PRD.")
    assert active_feature(tmp_path) == Feature("b", "specify", "From the PRD.")


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-C", str(root), *args],
        check=True,
        capture_output=True,
    )


def commit(root: Path, *names: str) -> None:
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(name)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", f"add {' '.join(names)}")


def test_changed_files_from_git(tmp_path: Path) -> None:
    assert changed_files(tmp_path) == ()  # no repository
    git(tmp_path, "init", "-q")
    assert changed_files(tmp_path) == ()  # no commits
    commit(tmp_path, "first.py")
    assert changed_files(tmp_path) == ()  # HEAD~1 unreachable: no signal
    commit(tmp_path, "src/second.py")
    assert changed_files(tmp_path) == ("src/second.py",)  # HEAD~1..HEAD
    commit(tmp_path, "third.py")
    commit(tmp_path, "fourth.py", "docs/x.md")
    assert sorted(changed_files(tmp_path)) == [
        "docs/x.md",
        "fourth.py",
        "src/second.py",
        "third.py",
    ]  # HEAD~3..HEAD: the first commit is out
    commit(tmp_path, *(f"many/{i:02d}.txt" for i in range(30)))
    assert len(changed_files(tmp_path)) == 20


def test_query_composition(tmp_path: Path) -> None:
    assert collect(None).query is None
    assert collect(tmp_path).query is None  # no feature, no git: no signal at all
    assert compose_query(Signals(None, ("a.py", "b.py"))) == "Files: a.py b.py"
    signals = Signals(Feature("parser", "design", "Build it."), ("a.py",))
    assert compose_query(signals) == "parser: Build it.. Phase: design. Files: a.py"
    assert compose_query(Signals(Feature("parser", "", ""), ())) == "parser"
    feature(tmp_path, "001-parser", "active", 1, spec="Parse files.")
    git(tmp_path, "init", "-q")
    commit(tmp_path, "one.py")
    commit(tmp_path, "two.py")
    assert collect(tmp_path).query == "parser: Parse files.. Phase: specify. Files: two.py"


# -- the semantic pipeline --------------------------------------------------------------------

PARSER = "Building a file parser needs error handling for every malformed line it reads."


def test_ac2_entry_from_another_project_is_retrieved(memlog_home: Path, tmp_path: Path) -> None:
    seed(
        memlog_home,
        entry("Parser error handling", PARSER, "patterns", project="project-a"),
        filler(25, "patterns", project="project-c"),
        filler(5, "anti-patterns", project="project-b"),
    )
    root = project(tmp_path, "project-b", spec="We are building a file parser with error handling.")
    request = make_request(memlog_home, root, limit=3)
    result = build(request)
    assert result.mode == "semantic" and result.notes == []
    assert result.query is not None and result.query.startswith("file-parser: We are building")
    first = max(result.chosen, key=lambda c: c.score)
    assert (first.name, first.origin) == ("Parser error handling", "global")
    assert first.id == content_hash(PARSER)
    assert first.components["vector"] == 1.0 and first.components["keyword"] == 1.0
    assert result.vector_matches == 31 and result.fts_matches >= 1
    record(request, result)
    written = json.loads((memlog_home / inject.LAST_INJECTION).read_text())
    assert written["project"] == "project-b"
    assert "Pattern: Parser error handling" in written["entry_names"]


def test_ac3_recall_count_and_last_recalled_at(memlog_home: Path, tmp_path: Path) -> None:
    seed(memlog_home, entry("Parser error handling", PARSER), filler(3, "heuristics"))
    root = project(tmp_path, "project-b")
    for sid in ("s1", "s2", "s3"):
        request = make_request(memlog_home, root)
        result = build(request)
        assert content_hash(PARSER) in [c.id for c in result.chosen]
        assert record(request, result, session_id=sid) == []
    recalls = [r.event for r in EventLog(memlog_home).read() if isinstance(r.event, Recalled)]
    assert [r.session_id for r in recalls] == ["s1", "s2", "s3"]
    assert all(r.project == "project-b" for r in recalls)
    stored = live_entry(memlog_home, content_hash(PARSER))
    assert stored.recall_count == 3
    assert stored.last_recalled_at == recalls[-1].ts
    assert stored.updated_at < recalls[0].ts  # recall never touches updated_at


# The knowledge bank of a project and a global store, as iflow writes them.
LOCAL_AP = [
    "### Anti-Pattern: Working in Wrong Worktree\n"
    "Making changes in main worktree when a feature worktree exists.\n"
    "- Observed in: Feature #002\n"
    "- Cost: Had to stash and re-apply\n"
    "- Observation count: 2",
    "### Anti-Pattern: Skipping Reviews\n"
    "Merging without review leads to regressions.\n"
    "- Observed in: Feature #005\n"
    "- Confidence: high",
]
LOCAL_H = [
    "### Line Budget Management\n"
    "Target 90-95% of the SKILL.md budget.\n"
    "- Source: Feature #018\n"
    "- Confidence: low",
    "### Read Before Write\n"
    "Always read the target file before writing a parser.\n"
    "- Source: Feature #020\n"
    "- Confidence: high",
]
LOCAL_P = [
    "### Pattern: Thin Orchestrator\n"
    "Keep SKILL.md as a thin orchestrator.\n"
    "- Used in: Feature #018",
]
GLOBAL_AP = [
    "### Anti-Pattern: Skipping Reviews\n"
    "Merging without review leads to regressions.\n"
    f"- Content-Hash: sha256:{content_hash('Merging without review leads to regressions.')}\n"
    "- Source: project-a, Feature #005\n"
    "- Observation count: 3\n"
    "- Last observed: 2026-01-10\n"
    "- Tags: universal\n"
    "- Confidence: high",
    "### Anti-Pattern: Unpinned Dependencies\n"
    "Unpinned dependencies break builds without any code change.\n"
    "- Content-Hash: sha256:"
    f"{content_hash('Unpinned dependencies break builds without any code change.')}\n"
    "- Source: project-c, Feature #001\n"
    "- Observation count: 1\n"
    "- Last observed: 2026-02-01\n"
    "- Tags: universal\n"
    "- Confidence: medium",
]
GLOBAL_HEAD = (
    "# Global Anti-Patterns\n\nCross-project learnings promoted from retrospectives. "
    "Automatically managed by iflow.\nDo not edit manually — entries are updated during /finish.\n"
)


def knowledge_bank(root: Path, home: Path) -> None:
    bank = root / "docs" / "knowledge-bank"
    bank.mkdir(parents=True)
    heads = {
        "anti-patterns": "# Anti-Patterns\n\n## Known Anti-Patterns\n",
        "heuristics": "# Heuristics\n\n## Decision Heuristics\n",
        "patterns": "# Patterns\n\n## Development Patterns\n",
    }
    for name, blocks in (
        ("anti-patterns", LOCAL_AP),
        ("heuristics", LOCAL_H),
        ("patterns", LOCAL_P),
    ):
        (bank / f"{name}.md").write_text(heads[name] + "\n" + "\n\n".join(blocks) + "\n")
    home.mkdir(parents=True, exist_ok=True)
    (home / "anti-patterns.md").write_text(GLOBAL_HEAD + "\n" + "\n\n".join(GLOBAL_AP) + "\n")


def legacy_block(*sections: tuple[str, list[str]], local: int, global_: int) -> str:
    parts = [HEADER, ""]
    for title, blocks in sections:
        parts.append(title)
        for block in blocks:
            parts += [block, ""]
    count = local + global_
    parts.append("---")
    diagnostic = f"*Memory: {count} entries ({local} local, {global_} global) | semantic: disabled*"
    return "\n".join(parts) + "\n" + diagnostic + "\n"


class ConnectSpy:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        raise AssertionError("SQLite opened while semantic memory is off")


def test_ac6_semantic_off_is_the_markdown_pipeline_exactly(
    memlog_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(tmp_path, "project-b", "memory_semantic_enabled: false")
    knowledge_bank(root, memlog_home)
    config, warnings = load_config(root, env={})
    assert warnings == [] and not config.memory_semantic_enabled
    spy = ConnectSpy()
    monkeypatch.setattr(sqlite3, "connect", spy)

    request = make_request(memlog_home, root, config)
    result = build(request)
    # dedup keeps the global "Skipping Reviews" (count 3 beats 1); sorted by count,
    # confidence, recency within each category; anti-patterns, heuristics, patterns
    assert result.text == legacy_block(
        ("### Anti-Patterns to Avoid", [GLOBAL_AP[0], LOCAL_AP[0], GLOBAL_AP[1]]),
        ("### Heuristics", [LOCAL_H[1], LOCAL_H[0]]),
        ("### Patterns to Follow", LOCAL_P),
        local=4,
        global_=2,
    )
    assert result.mode == "legacy" and result.notes == []
    assert record(request, result) == []

    # below 3 × categories the budget goes by category priority
    small = build(make_request(memlog_home, root, config, limit=4))
    assert small.text == legacy_block(
        ("### Anti-Patterns to Avoid", [GLOBAL_AP[0], LOCAL_AP[0], GLOBAL_AP[1]]),
        ("### Heuristics", [LOCAL_H[1]]),
        local=2,
        global_=2,
    )
    assert spy.calls == 0
    assert not (memlog_home / store.DB_NAME).exists()
    written = json.loads((memlog_home / inject.LAST_INJECTION).read_text())
    assert written["sources"] == {"local": 4, "global": 2}
    assert written["mode"] == "legacy"


def test_ac6_semantic_off_ignores_an_existing_view(
    memlog_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(memlog_home, filler(4, "patterns"))
    catch_up(memlog_home, inject.space_for(HASHING))
    root = project(tmp_path, "project-b")
    knowledge_bank(root, memlog_home)
    spy = ConnectSpy()
    monkeypatch.setattr(sqlite3, "connect", spy)
    off = msgspec.structs.replace(HASHING, memory_semantic_enabled=False)
    result = build(make_request(memlog_home, root, off))
    assert result.mode == "legacy" and spy.calls == 0
    assert "deployment" not in result.text


def test_ac7a_provider_unavailable_uses_keywords_and_prominence(
    memlog_home: Path, tmp_path: Path
) -> None:
    openai = ("openai", "text-embedding-3-small", 1536)
    seed(
        memlog_home,
        entry("Parser error handling", PARSER, space=openai),
        filler(6, "patterns", space=openai),
    )
    config = Config(memory_embedding_provider="openai")  # and no OPENAI_API_KEY
    root = project(tmp_path, "project-b")
    result = build(make_request(memlog_home, root, config, query="file parser error handling"))
    assert result.mode == "keyword" and result.vector_matches == 0
    assert any("OPENAI_API_KEY" in n for n in result.notes)
    assert result.chosen[0].id == content_hash(PARSER)
    assert result.chosen[0].components["weight_vector"] == 0.0
    assert "semantic: active (vector=0, fts5=1)" in result.text


def test_ac7a_provider_failing_at_query_time(
    memlog_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(memlog_home, entry("Parser error handling", PARSER), filler(6, "patterns"))

    def broken(self: HashingProvider, texts: Any, task: Any) -> Any:
        raise RuntimeError("model crashed")

    monkeypatch.setattr(HashingProvider, "_embed_batch", broken)
    result = build(make_request(memlog_home, None, query="file parser error handling"))
    assert result.mode == "keyword"
    assert any("model crashed" in n for n in result.notes)
    assert result.chosen[0].id == content_hash(PARSER)


def test_ac7b_fts_unavailable_uses_vectors_and_prominence(memlog_home: Path) -> None:
    seed(memlog_home, entry("Parser error handling", PARSER), filler(6, "patterns"))
    catch_up(memlog_home, inject.space_for(HASHING))
    db = sqlite3.connect(memlog_home / store.DB_NAME)
    db.execute("DROP TABLE entries_fts")
    db.commit()
    db.close()
    result = build(make_request(memlog_home, None, query="building a file parser error handling"))
    assert result.mode == "semantic", result.notes
    assert result.vector_matches == 7 and result.fts_matches == 0
    assert any("keyword search unavailable" in n for n in result.notes)
    assert result.chosen[0].id == content_hash(PARSER)
    assert result.chosen[0].components["weight_keyword"] == 0.0


def test_ac7c_unreadable_database_falls_back_to_markdown(memlog_home: Path, tmp_path: Path) -> None:
    root = project(tmp_path, "project-b")
    knowledge_bank(root, memlog_home)
    seed(memlog_home, filler(3, "patterns"))
    (memlog_home / store.DB_NAME).mkdir()  # a database nobody can open
    result = build(make_request(memlog_home, root))
    assert result.mode == "legacy"
    assert result.text.startswith(HEADER) and "semantic: disabled" in result.text
    assert any("semantic retrieval failed" in n for n in result.notes)


def test_ac7c_corrupt_database_without_catch_up(memlog_home: Path, tmp_path: Path) -> None:
    root = project(tmp_path, "project-b")
    knowledge_bank(root, memlog_home)
    (memlog_home / store.DB_NAME).write_bytes(b"this is not a database" * 100)
    result = build(make_request(memlog_home, root, catch_up=False))
    assert result.mode == "legacy" and "Skipping Reviews" in result.text
    # with catch-up the view is rebuilt from the (empty) log instead
    assert build(make_request(memlog_home, root)).mode in ("prominence", "legacy")


def test_ac12_category_balance(memlog_home: Path) -> None:
    relevant = [
        e
        for i in range(12)
        for e in entry(f"Parser pitfall {i}", f"{PARSER} Pitfall {i}.", "anti-patterns")
    ]
    seed(memlog_home, relevant, filler(3, "heuristics"), filler(3, "patterns"))
    result = build(make_request(memlog_home, None, limit=10, query=PARSER))
    categories = [c.category for c in result.chosen]
    assert len(categories) == 10
    assert categories.count("heuristics") == 3 and categories.count("patterns") == 3
    assert categories.count("anti-patterns") == 4
    # the irrelevant heuristics score below every anti-pattern left out
    final = {c.id: c.score for c in result.chosen}
    assert min(final[c.id] for c in result.chosen if c.category == "heuristics") < min(
        final[c.id] for c in result.chosen if c.category == "anti-patterns"
    )
    limited = build(make_request(memlog_home, None, limit=8, query=PARSER))
    assert {c.category for c in limited.chosen} == {"anti-patterns"}


def test_facts_are_injected_only_when_configured(memlog_home: Path) -> None:
    seed(memlog_home, filler(3, "patterns"), filler(3, "facts", topic="schema"))
    result = build(make_request(memlog_home, None))
    assert {c.category for c in result.chosen} == {"patterns"}
    assert result.total == 3 and "### Facts" not in result.text
    facts = msgspec.structs.replace(HASHING, memory_inject_facts=True)
    result = build(make_request(memlog_home, None, facts))
    assert [c.category for c in result.chosen].count("facts") == 3
    assert result.text.index("### Patterns to Follow") < result.text.index("### Facts")


def test_retired_entries_are_never_injected(memlog_home: Path) -> None:
    seed(memlog_home, filler(3, "patterns"))
    gone = content_hash("During deployment step 0 use blue rollback as patterns 0.")
    seed(memlog_home, [Retired(entry_id=gone, reason="obsolete")])
    result = build(make_request(memlog_home, None))
    assert len(result.chosen) == 2 and gone not in {c.id for c in result.chosen}


def mixed_bank(home: Path) -> None:
    seed(
        home,
        filler(4, "patterns", topic="release"),
        filler(4, "heuristics", topic="review"),
        filler(4, "anti-patterns", topic="parser"),
    )


D10_SEMANTIC = re.compile(
    r"^\*Memory: (\d+) entries from (\d+) \| semantic: active \(vector=(\d+), fts5=(\d+)\) "
    r'\| context: "(.*)\.\.\." \| model: (\S+)\*$'
)


def test_output_format_semantic(memlog_home: Path) -> None:
    mixed_bank(memlog_home)
    query = "parser pitfalls and a very long context query that goes on and on past sixty chars"
    result = build(make_request(memlog_home, None, limit=9, query=query))
    text = result.text
    assert text.startswith(HEADER + "\n\n### Anti-Patterns to Avoid\n### Anti-Pattern: parser")
    positions = [text.index(t) for t in SECTION_TITLES]
    assert positions == sorted(positions)
    body, diagnostic = text.rstrip("\n").rsplit("\n---\n", 1)
    assert text.endswith("\n") and "\n" not in diagnostic
    found = D10_SEMANTIC.match(diagnostic)
    assert found is not None, diagnostic
    assert found.groups() == ("9", "12", "12", "4", query[:60], "blake2b-words")
    headers = entry_headers(body)
    assert len(headers) == 9
    assert [h.split(":")[0] for h in headers[:3]] == ["### Anti-Pattern"] * 3
    assert all(not h.startswith("### Pattern") for h in headers[3:6])  # heuristics: no prefix
    assert [h.split(":")[0] for h in headers[6:]] == ["### Pattern"] * 3
    assert "- Observation count: 1\n- Confidence: medium" in body


def test_output_format_without_any_query(memlog_home: Path) -> None:
    mixed_bank(memlog_home)
    result = build(make_request(memlog_home, None))
    assert result.query is None and result.mode == "prominence"
    assert result.text.rstrip("\n").endswith(
        '*Memory: 12 entries from 12 | semantic: active (vector=0, fts5=0) | context: "..." '
        "| model: blake2b-words*"
    )
    assert {c.components["weight_prominence"] for c in result.chosen} == {1.0}


def test_ac1_3_to_1_5_limit_order_and_sorting(memlog_home: Path) -> None:
    seed(
        memlog_home,
        entry("few", "Observed once only.", "heuristics", confidence="high"),
        entry("many", "Observed many times over.", "heuristics", count=9),
        entry("some low", "Observed a few times, low.", "heuristics", count=3, confidence="low"),
        entry("some high", "Observed a few times, high.", "heuristics", count=3, confidence="high"),
        filler(5, "anti-patterns"),
    )
    result = build(make_request(memlog_home, None, limit=6))
    assert len(result.chosen) == 6 == len(entry_headers(result.text))  # AC-1.3
    text = result.text
    assert text.index("### Anti-Patterns to Avoid") < text.index("### Heuristics")  # AC-1.4
    # AC-1.5 as D3 restates it: within a category by prominence, where more
    # observations and higher confidence both count (count/9 + confidence/3):
    # many 1/1+2/3, some high 1/3+1, few 1/9+1, some low 1/3+1/3
    every = build(make_request(memlog_home, None, limit=-1))
    heuristics = [c.name for c in every.chosen if c.category == "heuristics"]
    assert heuristics == ["many", "some high", "few", "some low"]
    # the fillers (1/9 + 2/3) come between "few" and "some low"
    assert [c.name for c in result.chosen if c.category == "heuristics"] == heuristics[:3]


def test_ac1_7_empty_bank_injects_nothing_and_reports_nothing(
    memlog_home: Path, tmp_path: Path
) -> None:
    root = project(tmp_path, "project-b")
    request = make_request(memlog_home, root)
    result = build(request)
    assert (result.text, result.chosen, result.notes) == ("", [], [])
    assert record(request, result) == []
    assert not memlog_home.exists()
    # empty knowledge-bank files and an empty log are no error either
    (root / "docs" / "knowledge-bank").mkdir(parents=True)
    (root / "docs" / "knowledge-bank" / "patterns.md").write_text("")
    seed(memlog_home, [])
    memlog_home.mkdir()
    (memlog_home / "patterns.md").write_text("")
    assert build(request).text == ""


def test_ac4_1_default_limit_is_20(memlog_home: Path, tmp_path: Path) -> None:
    seed(memlog_home, filler(10, "patterns"), filler(10, "heuristics"), filler(10, "anti-patterns"))
    root = project(tmp_path, "project-b")
    config, _ = load_config(root, env={"MEMLOG_EMBEDDING_PROVIDER": "hashing"})
    result = build(make_request(memlog_home, root, config))
    assert len(result.chosen) == 20 and result.total == 30


def test_ac4_3_custom_limit_from_config(memlog_home: Path, tmp_path: Path) -> None:
    seed(memlog_home, filler(10, "patterns"), filler(10, "heuristics"))
    root = project(tmp_path, "project-b", "memory_injection_limit: 7")
    config, _ = load_config(root, env={})
    assert len(build(make_request(memlog_home, root, config)).chosen) == 7
    zero = msgspec.structs.replace(config, memory_injection_limit=0)
    assert build(make_request(memlog_home, root, zero)).text == ""
    every = msgspec.structs.replace(config, memory_injection_limit=-1)
    assert len(build(make_request(memlog_home, root, every)).chosen) == 20


def test_ac5_last_injection_file(memlog_home: Path, tmp_path: Path) -> None:
    mixed_bank(memlog_home)
    root = project(tmp_path, "project-b")
    request = make_request(memlog_home, root, limit=3)
    first = build(request)
    before = time.time()
    assert record(request, first) == []
    path = memlog_home / inject.LAST_INJECTION
    written = json.loads(path.read_text())
    assert written["project"] == "project-b"
    assert written["entries_injected"] == 3
    assert written["entry_names"] == [
        f"{'Anti-Pattern: ' if c.category == 'anti-patterns' else ''}"
        f"{'Heuristic: ' if c.category == 'heuristics' else ''}"
        f"{'Pattern: ' if c.category == 'patterns' else ''}{c.name}"
        for c in first.chosen
    ]
    assert written["sources"] == {"local": 0, "global": 3}
    stamp = datetime.strptime(written["timestamp"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert abs(stamp.timestamp() - before) < 5
    assert (path.stat().st_mode & 0o777) == 0o600
    other = project(tmp_path, "project-c")
    second_request = make_request(memlog_home, other, limit=1)
    record(second_request, build(second_request))
    rewritten = json.loads(path.read_text())
    assert rewritten["project"] == "project-c" and rewritten["entries_injected"] == 1
    assert len(rewritten["entry_names"]) == 1  # overwritten, not appended


def test_no_injection_writes_no_tracking_file(memlog_home: Path) -> None:
    mixed_bank(memlog_home)
    request = make_request(memlog_home, None, limit=0)
    record(request, build(request))
    assert not (memlog_home / inject.LAST_INJECTION).exists()


# -- commands ----------------------------------------------------------------------------------


def test_iflow_drop_in_prints_the_markdown_block(memlog_home: Path, tmp_path: Path) -> None:
    store_dir = tmp_path / "global-store"
    mixed_bank(store_dir)
    root = project(tmp_path, "project-b")
    runner = CliRunner()
    args = ["inject", "--project-root", str(root), "--limit", "5", "--global-store", str(store_dir)]
    done = runner.invoke(cli, args)
    assert done.exit_code == 0, done.output
    assert done.output.startswith(HEADER + "\n")
    assert len(entry_headers(done.output)) == 5
    assert "\n---\n*Memory: 5 entries from 12 | semantic: active" in done.output
    written = json.loads((store_dir / inject.LAST_INJECTION).read_text())
    assert written["project"] == "project-b" and written["entries_injected"] == 5
    assert not memlog_home.exists()  # the --global-store home, not MEMLOG_HOME

    done = runner.invoke(cli, [*args[:4], "0", *args[5:]])
    assert (done.exit_code, done.output) == (0, "")


def test_iflow_drop_in_with_semantic_off(memlog_home: Path, tmp_path: Path) -> None:
    root = project(tmp_path, "project-b", "memory_semantic_enabled: false")
    knowledge_bank(root, memlog_home)
    done = CliRunner().invoke(
        cli,
        [
            "inject",
            "--project-root",
            str(root),
            "--limit",
            "20",
            "--global-store",
            str(memlog_home),
        ],
    )
    assert done.exit_code == 0, done.output
    assert done.output.endswith(
        "\n---\n*Memory: 6 entries (4 local, 2 global) | semantic: disabled*\n"
    )


def test_search_command(memlog_home: Path) -> None:
    mixed_bank(memlog_home)
    seed(memlog_home, entry("Parser error handling", PARSER, "facts"))
    runner = CliRunner()
    done = runner.invoke(cli, ["search", "file parser error handling", "--limit", "3"])
    assert done.exit_code == 0, done.output
    lines = done.output.splitlines()
    assert len(lines) == 3
    assert lines[0].split()[1:3] == [content_hash(PARSER), "facts"]  # search includes facts
    assert float(lines[0].split()[0]) >= float(lines[1].split()[0])

    done = runner.invoke(cli, ["search", "parser", "--json", "--category", "anti-patterns"])
    assert done.exit_code == 0, done.output
    found = json.loads(done.output)
    assert len(found) == 4 and {f["category"] for f in found} == {"anti-patterns"}
    scores = [f["score"] for f in found]
    assert scores == sorted(scores, reverse=True)
    assert {"vector", "keyword", "prominence", "final"} <= set(found[0]["components"])

    done = runner.invoke(cli, ["search", "file parser", "--explain", "--limit", "2"])
    assert done.exit_code == 0, done.output
    assert "mode: semantic; query: 'file parser'" in done.output
    assert re.search(r"vector=\d\.\d{4}, .*keyword=\d\.\d{4}, .*final=\d\.\d{4}", done.output)

    done = runner.invoke(cli, ["search", "   "])
    assert done.exit_code != 0 and "empty" in done.output


def test_inject_command_json_and_explain(memlog_home: Path, tmp_path: Path) -> None:
    mixed_bank(memlog_home)
    root = project(tmp_path, "project-b")
    runner = CliRunner()
    done = runner.invoke(cli, ["inject", str(root), "--json", "--limit", "4"])
    assert done.exit_code == 0, done.output
    data = json.loads(done.output)
    assert data["mode"] == "prominence" and len(data["chosen"]) == 4
    assert data["text"].startswith(HEADER)
    assert not (memlog_home / inject.LAST_INJECTION).exists()  # no --record by default
    done = runner.invoke(cli, ["inject", str(root), "--explain", "--limit", "2"])
    assert done.exit_code == 0 and "mode: prominence; query: None" in done.output
