"""One ranking for one text: ``memlog search`` ranks a hook-shaped text as the hook ranks
the context it builds (same ids, same order, same scores), whatever the path (numpy or
plain), the ranking (fused or D3) and the categories a search shows."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from memlog.api import recall
from memlog.commands.cli import cli
from memlog.config import Config
from memlog.retrieval import plain
from memlog.retrieval.context import (
    Feature,
    Signals,
    collect,
    compose_query,
    context_query,
    context_text,
    query_of,
)
from memlog.retrieval.request import Injection
from memlog.tests.retrieval.helpers import HASHING, HASHING_D3, PARSER, entry, filler, seed
from memlog.tests.retrieval.test_context import commit, git
from memlog.tests.retrieval.test_light import Frozen
from memlog.workspace import Workspace

# -- the text and its query ---------------------------------------------------------------------

WORDS = st.text(st.sampled_from("abcdefgh XYZ-_.:/"), max_size=40)
SLUGS = st.from_regex(r"[a-z0-9][a-z0-9-]{0,20}", fullmatch=True)
PATHS = st.lists(st.from_regex(r"[a-z]{1,6}(/[a-zA-Z_]{1,8}){0,2}\.py", fullmatch=True), max_size=4)


@given(SLUGS, WORDS, WORDS, WORDS, WORDS, PATHS)
def test_the_hook_text_gives_the_context_query(
    slug: str, phase: str, description: str, title: str, summary: str, files: list[str]
) -> None:
    phase = " ".join(phase.split())  # a phase is a word or two, on one line
    feature = Feature(slug, phase, description, " ".join(title.split()), " ".join(summary.split()))
    for signals in (Signals(feature, tuple(files)), Signals(None, tuple(files))):
        assert query_of(context_text(signals)) == context_query(signals)


def test_the_hook_text_reads_as_a_person_would_write_it() -> None:
    feature = Feature("file-parser", "design", "Parse it.", "File Parser", "Parse every line.")
    signals = Signals(feature, ("src/parser/core_reader.py", "tests/test_reader.py"))
    text = context_text(signals)
    assert text == (
        "file-parser: File Parser. Parse every line.\nPhase: design\n"
        "Files: src/parser/core_reader.py tests/test_reader.py"
    )
    query = "file parser. File Parser. Parse every line.. parser core reader"
    assert query_of(text) == context_query(signals) == query
    assert query_of(query) == query  # the query given back is its own query
    # the D3 query's one-line form (``slug: paragraph. Phase: p. Files: …``) reads the same way
    assert query_of(compose_query(signals)) == "file parser. Parse it.. parser core reader"
    assert query_of(compose_query(signals), "d3") == compose_query(signals)  # D3: the text itself


@pytest.mark.parametrize(
    "text", ["retry provider timeouts", "how do I fix the parser? it fails", "http://x/y.py down"]
)
def test_any_other_text_is_its_own_query(text: str) -> None:
    assert query_of(text) == text


# -- the hook and search, through the library and the CLI ---------------------------------------

VECTORS = HASHING  # fused, query embedded: the numpy ranking
PLAIN = msgspec.structs.replace(HASHING, memory_fusion_vector_weight=0.0)  # the plain one
CONFIGS = {"fused": VECTORS, "fused-plain": PLAIN, "d3": HASHING_D3}
SPEC = (
    "# Spec: Streaming File Parser\n\n## Problem\n\n"
    "The file parser reads the whole upload into memory before it checks a single line, "
    "so malformed lines surface late and large files exhaust the worker.\n"
)


@pytest.fixture(autouse=True)
def frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    """One moment for every ranking: recency must not move between the hook and search."""
    from memlog.retrieval import light, semantic

    monkeypatch.setattr(light, "datetime", Frozen)
    monkeypatch.setattr(semantic, "datetime", Frozen)


def settings(config: Config, limit: int = 7) -> str:
    fields = msgspec.structs.replace(config, memory_injection_limit=limit)
    return "\n".join(f"{k}: {json.dumps(v)}" for k, v in msgspec.structs.asdict(fields).items())


@pytest.fixture
def bank(memlog_home: Path) -> Path:
    """Entries of every category, facts among them (not injected: the hook never ranks them)."""
    seed(
        memlog_home,
        entry("Parser error handling", PARSER, "anti-patterns"),
        entry("Stream large uploads", "Read uploads line by line, hold no file.", "patterns"),
        entry("Upload limit fact", "The worker's upload limit is 512 MB for the parser.", "facts"),
        filler(5, "patterns", topic="parser"),
        filler(5, "heuristics", topic="upload"),
        filler(5, "anti-patterns", topic="release"),
        filler(4, "facts", topic="parser"),
    )
    return memlog_home


def feature_project(parent: Path, config: Config) -> Path:
    """A git project whose active feature is the streaming parser, with recent changes."""
    root = parent / "project"
    folder = root / "docs" / "features" / "007-streaming-parser"
    folder.mkdir(parents=True)
    (root / ".claude").mkdir()
    (root / ".claude" / "iflow-dev.local.md").write_text(f"---\n{settings(config)}\n---\n")
    meta = {"slug": "streaming-parser", "status": "active", "lastCompletedPhase": "design"}
    (folder / ".meta.json").write_text(json.dumps(meta))
    (folder / "spec.md").write_text(SPEC)
    git(root, "init", "-q")
    commit(root, "README.md")
    commit(root, "src/parser/line_reader.py", "tests/test_line_reader.py")
    return root


def ranked(result: Injection) -> list[tuple[str, str, float]]:
    return [(c.id, c.category, c.score) for c in result.chosen]


def hook_choice(searched: Injection, limit: int) -> list[tuple[str, str, float]]:
    """What the hook must choose, given search's ranking of every entry: the injected
    categories only, category balance, grouped by category (``plain.select``)."""
    kept = [r for r in ranked(searched) if r[1] != "facts"]
    picks = plain.select([r[1] for r in kept], [r[2] for r in kept], limit, balanced=True)
    return [kept[i] for i in picks]


def hook_ranking(home: Path, root: Path) -> Injection:
    ws = Workspace.open(root, home=home)
    return recall.for_hook(ws, time.monotonic() + 30, keep=lambda _: None)  # nothing recorded


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_search_of_the_hook_text_ranks_as_the_hook(bank: Path, tmp_path: Path, name: str) -> None:
    root = feature_project(tmp_path, CONFIGS[name])
    hook = hook_ranking(bank, root)
    ws = Workspace.open(root, home=bank)
    assert hook.context == collect(root).text(ws.config.memory_ranking)
    assert hook.context is not None and "Files: src/parser/line_reader.py" in hook.context
    searched = recall.search(ws, hook.context, limit=-1)
    assert searched.query == hook.query and searched.mode == hook.mode
    assert {c.category for c in searched.chosen} >= {"facts"}  # search shows facts too
    assert ranked(hook) == hook_choice(searched, 7)  # same ids, same order, same scores
    by_id = {c.id: c.components for c in searched.chosen}
    for chosen in hook.chosen:
        assert chosen.components.items() <= by_id[chosen.id].items()
    # a search of one category scores its entries as the whole ranking does
    patterns = recall.search(ws, hook.context, limit=-1, categories=["patterns"])
    assert ranked(patterns) == [r for r in ranked(searched) if r[1] == "patterns"]
    assert patterns.total == len(patterns.chosen)


def test_the_cli_search_of_inject_context_ranks_as_inject(
    bank: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = feature_project(tmp_path, VECTORS)
    monkeypatch.chdir(root)  # search reads the configuration of the project it is run in
    runner = CliRunner()
    done = runner.invoke(cli, ["inject", str(root), "--json", "--limit", "-1"])
    assert done.exit_code == 0, done.output
    injected: dict[str, Any] = json.loads(done.output)
    assert injected["context"].startswith("streaming-parser: Streaming File Parser.")
    args = ["search", injected["context"], "--json", "--limit", "-1"]
    done = runner.invoke(cli, args)
    assert done.exit_code == 0, done.output
    found = {f["id"]: f["score"] for f in json.loads(done.output) if f["category"] != "facts"}
    assert {c["id"]: c["score"] for c in injected["chosen"]} == found
