"""The semantic and markdown pipelines, recall tracking and the injected block.

Acceptance criteria covered: cross-project memory spec AC-1.1…1.5, 1.7,
4.1…4.3, 5.1…5.3; semantic memory spec 2, 3, 6, 7, 12 and D10.
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest

from memlog.config import Config, load_config
from memlog.embeddings.hashing import HashingProvider
from memlog.eventlog.devices import is_per_device, to_devices
from memlog.eventlog.events import Recalled, Retired, content_hash
from memlog.eventlog.log import EventLog
from memlog.home import Home
from memlog.projections.runner import catch_up
from memlog.projections.sqlite_view import reading
from memlog.retrieval.inject import build
from memlog.retrieval.record import record
from memlog.tests.retrieval.helpers import (
    GLOBAL_AP,
    HASHING,
    HASHING_D3,
    HEADER,
    LOCAL_AP,
    LOCAL_H,
    LOCAL_P,
    PARSER,
    SECTION_TITLES,
    entry,
    entry_headers,
    filler,
    knowledge_bank,
    live_entry,
    make_request,
    mixed_bank,
    project,
    seed,
)
from memlog.vocabulary import LESSONS_NOTE

# -- the semantic pipeline --------------------------------------------------------------------


@pytest.mark.ac("024:2")
def test_ac2_entry_from_another_project_is_retrieved(memlog_home: Path, tmp_path: Path) -> None:
    seed(
        memlog_home,
        entry("Parser error handling", PARSER, "patterns", project="project-a"),
        filler(25, "patterns", project="project-c"),
        filler(5, "anti-patterns", project="project-b"),
    )
    root = project(tmp_path, "project-b", spec="We are building a file parser with error handling.")
    request = make_request(memlog_home, root, HASHING_D3, limit=3)
    result = build(request)
    assert result.mode == "semantic" and result.notes == []
    assert result.query is not None and result.query.startswith("file-parser: We are building")
    first = max(result.chosen, key=lambda c: c.score)
    assert (first.name, first.origin) == ("Parser error handling", "global")
    assert first.id == content_hash(PARSER)
    assert first.components["vector"] == 1.0 and first.components["keyword"] == 1.0
    assert result.vector_matches == 31 and result.fts_matches >= 1
    record(request, result)
    written = json.loads((memlog_home / ".last-injection.json").read_text())
    assert written["project"] == "project-b"
    assert "Pattern: Parser error handling" in written["entry_names"]


def test_a_log_kept_per_device_without_its_view_is_rebuilt_not_taken_for_empty(
    memlog_home: Path, tmp_path: Path
) -> None:
    seed(memlog_home, entry("Parser error handling", PARSER, "patterns", project="project-a"))
    assert to_devices(Home(memlog_home)) and is_per_device(Home(memlog_home))
    for path in memlog_home.glob("memory.db*"):
        path.unlink()
    root = project(tmp_path, "project-b", spec="We are building a file parser with error handling.")
    result = build(make_request(memlog_home, root, HASHING_D3, limit=3))
    assert result.mode == "semantic" and result.notes == []
    assert [c.name for c in result.chosen] == ["Parser error handling"]


@pytest.mark.ac("024:3")
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
def legacy_block(*sections: tuple[str, list[str]], local: int, global_: int) -> str:
    parts = [HEADER, LESSONS_NOTE, ""]  # (the line on what lessons are: the hook's, not #023's)
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


@pytest.mark.ac("024:6")
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
    assert not (memlog_home / "memory.db").exists()
    written = json.loads((memlog_home / ".last-injection.json").read_text())
    assert written["sources"] == {"local": 4, "global": 2}
    assert written["mode"] == "legacy"


@pytest.mark.ac("024:6")
def test_ac6_semantic_off_ignores_an_existing_view(
    memlog_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(memlog_home, filler(4, "patterns"))
    catch_up(memlog_home, HASHING.space)
    root = project(tmp_path, "project-b")
    knowledge_bank(root, memlog_home)
    spy = ConnectSpy()
    monkeypatch.setattr(sqlite3, "connect", spy)
    off = msgspec.structs.replace(HASHING, memory_semantic_enabled=False)
    result = build(make_request(memlog_home, root, off))
    assert result.mode == "legacy" and spy.calls == 0
    assert "deployment" not in result.text


@pytest.mark.ac("024:7a")
def test_ac7a_provider_unavailable_uses_keywords_and_prominence(
    memlog_home: Path, tmp_path: Path
) -> None:
    openai = ("openai", "text-embedding-3-small", 1536)
    seed(
        memlog_home,
        entry("Parser error handling", PARSER, space=openai),
        filler(6, "patterns", space=openai),
    )
    config = Config(memory_embedding_provider="openai", memory_ranking="d3")  # no OPENAI_API_KEY
    root = project(tmp_path, "project-b")
    result = build(make_request(memlog_home, root, config, query="file parser error handling"))
    assert result.mode == "keyword" and result.vector_matches == 0
    assert any("OPENAI_API_KEY" in n for n in result.notes)
    assert result.chosen[0].id == content_hash(PARSER)
    assert result.chosen[0].components["weight_vector"] == 0.0
    assert "semantic: active (vector=0, fts5=1)" in result.text


@pytest.mark.ac("024:7a")
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


@pytest.mark.ac("024:7b")
def test_ac7b_fts_unavailable_uses_vectors_and_prominence(
    memlog_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(memlog_home, entry("Parser error handling", PARSER), filler(6, "patterns"))
    catch_up(memlog_home, HASHING.space)

    def no_fts5(self: object) -> None:  # an SQLite built without FTS5
        raise sqlite3.OperationalError("no such module: fts5")

    monkeypatch.setattr(reading.Snapshot, "_fts", no_fts5)
    query = "building a file parser error handling"
    result = build(make_request(memlog_home, None, HASHING_D3, query=query))
    assert result.mode == "semantic", result.notes
    assert result.vector_matches == 7 and result.fts_matches == 0
    assert any("keyword search unavailable" in n for n in result.notes)
    assert result.chosen[0].id == content_hash(PARSER)
    assert result.chosen[0].components["weight_keyword"] == 0.0


@pytest.mark.ac("024:7c")
def test_ac7c_unreadable_database_falls_back_to_markdown(memlog_home: Path, tmp_path: Path) -> None:
    root = project(tmp_path, "project-b")
    knowledge_bank(root, memlog_home)
    seed(memlog_home, filler(3, "patterns"))
    (memlog_home / "memory.db").mkdir()  # a database nobody can open
    result = build(make_request(memlog_home, root))
    assert result.mode == "legacy"
    assert result.text.startswith(HEADER) and "semantic: disabled" in result.text
    assert any("semantic retrieval failed" in n for n in result.notes)


@pytest.mark.ac("024:7c")
def test_ac7c_corrupt_database_without_catch_up(memlog_home: Path, tmp_path: Path) -> None:
    root = project(tmp_path, "project-b")
    knowledge_bank(root, memlog_home)
    (memlog_home / "memory.db").write_bytes(b"this is not a database" * 100)
    result = build(make_request(memlog_home, root, catch_up=False))
    assert result.mode == "legacy" and "Skipping Reviews" in result.text
    # with catch-up the view is rebuilt from the (empty) log instead
    assert build(make_request(memlog_home, root)).mode in ("prominence", "legacy")


@pytest.mark.ac("024:12")
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


D10_SEMANTIC = re.compile(
    r"^\*Memory: (\d+) entries from (\d+) \| semantic: active \(vector=(\d+), fts5=(\d+)\) "
    r'\| context: "(.*)\.\.\." \| model: (\S+)\*$'
)


def test_output_format_semantic(memlog_home: Path) -> None:
    mixed_bank(memlog_home)
    query = "parser pitfalls and a very long context query that goes on and on past sixty chars"
    result = build(make_request(memlog_home, None, limit=9, query=query))
    text = result.text
    assert text.startswith(
        f"{HEADER}\n{LESSONS_NOTE}\n\n### Anti-Patterns to Avoid\n### Anti-Pattern: parser"
    )
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
    result = build(make_request(memlog_home, None, HASHING_D3))
    assert result.query is None and result.mode == "prominence"
    assert result.text.rstrip("\n").endswith(
        '*Memory: 12 entries from 12 | semantic: active (vector=0, fts5=0) | context: "..." '
        "| model: blake2b-words*"
    )
    assert {c.components["weight_prominence"] for c in result.chosen} == {1.0}


@pytest.mark.ac("023:AC-1.3", "023:AC-1.4", "023:AC-1.5")
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


@pytest.mark.ac("023:AC-1.7")
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


@pytest.mark.ac("023:AC-4.1")
def test_ac4_1_default_limit_is_20(memlog_home: Path, tmp_path: Path) -> None:
    seed(memlog_home, filler(10, "patterns"), filler(10, "heuristics"), filler(10, "anti-patterns"))
    root = project(tmp_path, "project-b")
    config, _ = load_config(root, env={"MEMLOG_EMBEDDING_PROVIDER": "hashing"})
    result = build(make_request(memlog_home, root, config))
    assert len(result.chosen) == 20 and result.total == 30


@pytest.mark.ac("023:AC-4.3")
def test_ac4_3_custom_limit_from_config(memlog_home: Path, tmp_path: Path) -> None:
    seed(memlog_home, filler(10, "patterns"), filler(10, "heuristics"))
    root = project(tmp_path, "project-b", "memory_injection_limit: 7")
    config, _ = load_config(root, env={})
    assert len(build(make_request(memlog_home, root, config)).chosen) == 7
    zero = msgspec.structs.replace(config, memory_injection_limit=0)
    assert build(make_request(memlog_home, root, zero)).text == ""
    every = msgspec.structs.replace(config, memory_injection_limit=-1)
    assert len(build(make_request(memlog_home, root, every)).chosen) == 20


@pytest.mark.ac("023:AC-5.1", "023:AC-5.2", "023:AC-5.3")
def test_ac5_last_injection_file(memlog_home: Path, tmp_path: Path) -> None:
    mixed_bank(memlog_home)
    root = project(tmp_path, "project-b")
    request = make_request(memlog_home, root, limit=3)
    first = build(request)
    before = time.time()
    assert record(request, first) == []
    path = memlog_home / ".last-injection.json"
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
    assert not (memlog_home / ".last-injection.json").exists()
