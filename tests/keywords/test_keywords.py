"""Keyword labels: the rules, the local extractor, the tiers, and ``entry.labelled`` events."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memlog.capture.label import build_tiers, label_entries, needs_labels
from memlog.commands.cli import cli
from memlog.config import Config
from memlog.errors import ProviderUnavailable
from memlog.eventlog.events import Labelled, Observed
from memlog.eventlog.log import EventLog
from memlog.keywords import (
    CallerKeywords,
    LocalKeywords,
    Tiered,
    extract,
)
from memlog.keywords.local import eligible_words
from memlog.keywords.remote import HaikuKeywords, parse_answer, prompt_for
from memlog.keywords.rules import Grounding, related, repair
from memlog.projections.fold import Entry
from memlog.projections.markdown_view.kb_parser import ParsedEntry, parse_file
from memlog.tests.loopback import LoopbackServer

# Acceptance criterion 5, written out again here so the tests do not trust the code.
AC5_STOPWORDS = {
    "code", "development", "software", "system", "application", "implementation",
    "feature", "project", "function", "method", "file", "data", "error", "bug", "fix",
    "update", "change",
}  # fmt: skip
from memlog.tests.support import FIXTURES  # noqa: E402

LABEL = re.compile(r"[a-z0-9-]+")
TIMEOUT = 0.3
SLACK = 1.0

DESCRIPTION = (
    "The markdown table parser splits rows on every pipe, so a pipe inside a backtick "
    "span breaks the row into too many cells."
)
REASONING = "Found while parsing knowledge-bank tables with inline shell pipelines."
HAIKU_TEXT = '["markdown-table", "parser", "pipe", "backtick", "cells", "escaping"]'


def literal(keywords: list[str], description: str, reasoning: str) -> list[str]:
    text = f"{description}\n{reasoning}".lower()
    return [k for k in keywords if k in text]


def assert_ac5(keywords: list[str], description: str, reasoning: str) -> None:
    assert 3 <= len(keywords) <= 10, keywords
    assert len(set(keywords)) == len(keywords), keywords
    assert all(LABEL.fullmatch(k) for k in keywords), keywords
    assert not AC5_STOPWORDS & set(keywords), keywords
    assert len(literal(keywords, description, reasoning)) >= 3, keywords


# -- the local extractor on every entry of every knowledge bank of the fixtures -------------


def fixture_entries() -> list[ParsedEntry]:
    files = sorted(FIXTURES.glob("knowledge-bank-*/*.md"))
    return [entry for path in files for entry in parse_file(path).entries]


FIXTURE_ENTRIES = fixture_entries()


def test_every_fixture_bank_is_there() -> None:
    banks = {e.source_path.split("/")[-2] for e in FIXTURE_ENTRIES}
    assert {"knowledge-bank-6bb5ea25", "knowledge-bank-ab2c282a"} <= banks
    assert "knowledge-bank-08a38d02" in banks  # the 265 real entries of the retrieval benchmark
    assert len(FIXTURE_ENTRIES) > 300


@pytest.mark.parametrize(
    "entry", FIXTURE_ENTRIES, ids=[f"{e.source_path[-30:]}:{e.line}" for e in FIXTURE_ENTRIES]
)
@pytest.mark.ac("024:5")
def test_local_labels_of_every_fixture_entry_meet_criterion_5(entry: ParsedEntry) -> None:
    # imported entries have no reasoning: the description alone must do
    keywords = extract(entry.name, entry.description, "")
    assert_ac5(keywords, entry.description, "")


def test_local_labels_are_deterministic_and_topical() -> None:
    first = extract("Markdown table pipes", DESCRIPTION, REASONING)
    assert first == extract("Markdown table pipes", DESCRIPTION, REASONING)
    assert_ac5(first, DESCRIPTION, REASONING)
    assert {"pipe", "backtick"} <= set(first)
    assert not {"the", "every", "too", "many"} & set(first)


def test_local_pairs_and_variants() -> None:
    text = "A content-hash names each entry; the content-hash is checked on import."
    assert "content-hash" in extract("Content hash", text, "")
    # one stem only: its other forms make up the three labels
    assert extract("", "parse parser parsing", "") == ["parse", "parser", "parsing"]
    # fewer than three eligible words: every one of them, nothing made up
    assert extract("", "The code has a bug in the parser.", "") == ["parser"]
    assert extract("", "", "") == []


# -- hypothesis: the extractor never fails and keeps the rules whenever it can -----------

content_words = st.from_regex(r"[a-z]{3,10}", fullmatch=True)
filler = st.sampled_from(
    [*AC5_STOPWORDS, "the", "and", "of", "use", "using", "errors", "files", "--", ",", "(", "42"]
)
separators = st.sampled_from([" ", "  ", "-", "\n", ", ", ". ", "_", "/", "é "])


@st.composite
def prose(draw: st.DrawFn) -> str:
    tokens = draw(st.lists(st.one_of(content_words, filler), max_size=40))
    return "".join(t + draw(separators) for t in tokens)


def check_extract(name: str, description: str, reasoning: str) -> None:
    keywords = extract(name, description, reasoning)
    assert len(keywords) <= 10
    assert len(set(keywords)) == len(keywords)
    assert all(LABEL.fullmatch(k) for k in keywords)
    assert not AC5_STOPWORDS & set(keywords)
    if len(eligible_words(f"{description}\n{reasoning}")) >= 3:
        assert_ac5(keywords, description, reasoning)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=300), st.text(max_size=300), st.text(max_size=300))
def test_extract_never_fails_on_any_text(name: str, description: str, reasoning: str) -> None:
    check_extract(name, description, reasoning)


@pytest.mark.ac("024:5")
@settings(max_examples=300, deadline=None)
@given(prose(), prose(), prose())
def test_extract_meets_criterion_5_on_prose(name: str, description: str, reasoning: str) -> None:
    check_extract(name, description, reasoning)


# -- the rules: repair and grounding ---------------------------------------------------


def test_repair_normalises_filters_and_caps() -> None:
    grounding = Grounding(DESCRIPTION, REASONING)
    raw = ["Markdown Table", "PARSER", "code", "errors", "the", "parser", "x", "42", "pipe_char"]
    assert repair(raw, grounding) == ["markdown-table", "parser", "pipe-char"]
    many = [f"unrelated{i}" for i in range(12)] + ["pipe", "cells", "backtick"]
    capped = repair(many, grounding)
    assert len(capped) == 10 and {"pipe", "cells", "backtick"} <= set(capped)


@pytest.mark.parametrize(
    ("first", "second"),
    [("parse", "parsing"), ("parse", "parser"), ("parsers", "parsing"), ("validate", "validation"),
     ("retrieve", "retrieval"), ("embedding", "embed"), ("caches", "cached")],
)  # fmt: skip
def test_morphological_variants(first: str, second: str) -> None:
    assert related(first, second)


def test_grounding_accepts_variants_and_spaced_pairs() -> None:
    grounding = Grounding("Parsing markdown tables", "")
    assert grounding.grounded("parser")
    assert grounding.grounded("markdown-tables")
    assert grounding.grounded("table")
    assert not grounding.grounded("deployment")


# -- the caller tier -------------------------------------------------------------------


def entry_id(description: str) -> str:
    return Observed(name="n", description=description, category="patterns").entry_id


def test_caller_keywords_are_taken_when_valid() -> None:
    supplied = {entry_id(DESCRIPTION): ["Markdown", "pipe", "backtick", "zebrafish"]}
    chain = Tiered([CallerKeywords(supplied), LocalKeywords()])
    found = chain.pick("n", DESCRIPTION, REASONING)
    assert found is not None and found.provider == "caller"
    assert found.keywords == ["markdown", "pipe", "backtick", "zebrafish"]


@pytest.mark.parametrize(
    "given_",
    [["code", "data", "markdown"], ["zebrafish", "giraffe", "okapi"], ["pipe", "cells"], []],
)
def test_caller_keywords_are_rejected_when_invalid(given_: list[str]) -> None:
    supplied = {entry_id(DESCRIPTION): given_}
    chain = Tiered([CallerKeywords(supplied), LocalKeywords()])
    found = chain.pick("n", DESCRIPTION, REASONING)
    assert found is not None and found.provider == "local"
    assert bool(chain.notes) == bool(given_)


# -- the HTTP tiers against a real loopback server -------------------------------------


def haiku_answer(text: str) -> bytes:
    return json.dumps(
        {
            "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
            "type": "message",
            "role": "assistant",
            "model": "claude-haiku-5-5",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 310, "output_tokens": 24},
        }
    ).encode()


def ollama_answer(text: str) -> bytes:
    return json.dumps(
        {
            "model": "llama3.2",
            "created_at": "2026-11-20T19:22:45.499127Z",
            "response": text,
            "done": True,
            "done_reason": "stop",
            "context": [1, 2, 3],
            "total_duration": 5043500667,
            "load_duration": 5025959,
            "prompt_eval_count": 26,
            "prompt_eval_duration": 325953000,
            "eval_count": 29,
            "eval_duration": 4709213000,
        }
    ).encode()


def answering(body: bytes, status: int = 200) -> LoopbackServer:
    return LoopbackServer(lambda *_: (status, {}, body))


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client() as http:
        yield http


def env_for(
    haiku: LoopbackServer | None = None, ollama: LoopbackServer | None = None
) -> dict[str, str]:
    env = {"ANTHROPIC_API_KEY": "sk-ant-test-key"}
    if haiku is not None:
        env["MEMLOG_ANTHROPIC_BASE_URL"] = haiku.url
    env["MEMLOG_OLLAMA_BASE_URL"] = ollama.url if ollama is not None else "http://127.0.0.1:9"
    return env


def chain_for(mode: str, client: httpx.Client, env: Mapping[str, str]) -> Tiered:
    return Tiered(build_tiers(mode, {}, client, env, TIMEOUT))


def test_haiku_sends_the_messages_request_and_reads_the_text_block(client: httpx.Client) -> None:
    with answering(haiku_answer(HAIKU_TEXT)) as server:
        found = chain_for("haiku", client, env_for(server)).pick("Pipes", DESCRIPTION, REASONING)
    assert found is not None and found.provider == "haiku"
    assert found.keywords == json.loads(HAIKU_TEXT)
    (request,) = server.requests
    assert (request.method, request.path) == ("POST", "/v1/messages")
    assert request.headers["x-api-key"] == "sk-ant-test-key"
    assert request.headers["anthropic-version"] == "2023-06-01"
    body = request.json()
    assert body["model"] == "claude-haiku-5-5" and body["max_tokens"] > 0
    assert body["thinking"] == {"type": "disabled"} and "temperature" not in body
    assert body["messages"][0]["role"] == "user"
    assert DESCRIPTION in body["messages"][0]["content"]
    assert "JSON array" in body["messages"][0]["content"]


def test_haiku_skips_a_leading_thinking_block(client: httpx.Client) -> None:
    answer = json.loads(haiku_answer(HAIKU_TEXT))
    answer["content"].insert(0, {"type": "thinking", "thinking": "", "signature": "EqQB"})
    with answering(json.dumps(answer).encode()) as server:
        labels = HaikuKeywords(client, env=env_for(server), timeout=TIMEOUT).label(
            "n", DESCRIPTION, REASONING
        )
    assert labels == json.loads(HAIKU_TEXT)


def test_ollama_sends_a_generate_request(client: httpx.Client) -> None:
    text = 'Here you go:\n```json\n["parser", "pipe", "backtick", "table"]\n```'
    with answering(ollama_answer(text)) as server:
        found = chain_for("ollama", client, env_for(ollama=server)).pick("n", DESCRIPTION, "")
    assert found is not None and found.provider == "ollama"
    assert found.keywords == ["parser", "pipe", "backtick", "table"]
    (request,) = server.requests
    assert (request.method, request.path) == ("POST", "/api/generate")
    body = request.json()
    assert body["model"] == "llama3.2" and body["stream"] is False
    assert DESCRIPTION in body["prompt"]


@pytest.mark.parametrize(
    "text",
    ["Sure! Keywords: parser, pipe, markdown", '["code", "data", "parser"]', '{"a": 1}', ""],
)
def test_invalid_haiku_output_falls_through_to_local(client: httpx.Client, text: str) -> None:
    with answering(haiku_answer(text)) as haiku:
        chain = chain_for("haiku", client, env_for(haiku))
        found = chain.pick("n", DESCRIPTION, REASONING)
    assert found is not None and found.provider == "local"
    assert chain.notes and chain.notes[0].startswith("haiku: ")


def test_invalid_ollama_output_falls_through_to_local(client: httpx.Client) -> None:
    with answering(ollama_answer("parser pipe markdown")) as server:
        chain = chain_for("ollama", client, env_for(ollama=server))
        found = chain.pick("n", DESCRIPTION, REASONING)
    assert found is not None and found.provider == "local"
    assert found.keywords == extract("n", DESCRIPTION, REASONING)


def test_a_slow_haiku_falls_through_within_the_timeout(client: httpx.Client) -> None:
    with LoopbackServer(lambda *_: (200, {}, haiku_answer(HAIKU_TEXT)), delay=3.0) as slow:
        chain = chain_for("haiku", client, env_for(slow))
        started = time.monotonic()
        found = chain.pick("n", DESCRIPTION, REASONING)
        elapsed = time.monotonic() - started
        # the slow tier is not asked again in the same batch
        again = chain.pick("n", DESCRIPTION, REASONING)
    assert found is not None and found.provider == "local"
    assert again is not None and again.provider == "local"
    assert elapsed < TIMEOUT + SLACK
    assert len(slow.requests) == 1
    assert chain.notes == [f"haiku: no answer within {TIMEOUT:g} s"]


def test_a_slow_ollama_falls_through_to_local_within_the_timeout(client: httpx.Client) -> None:
    with LoopbackServer(lambda *_: (200, {}, ollama_answer(HAIKU_TEXT)), delay=3.0) as slow:
        chain = chain_for("ollama", client, env_for(ollama=slow))
        started = time.monotonic()
        found = chain.pick("n", DESCRIPTION, REASONING)
    assert time.monotonic() - started < TIMEOUT + SLACK
    assert found is not None and found.provider == "local"


@pytest.mark.parametrize("mode", ["local", "auto"])
def test_only_a_named_remote_labeller_is_asked(client: httpx.Client, mode: str) -> None:
    """An API key in the environment is no consent: the default labels locally."""
    with answering(haiku_answer(HAIKU_TEXT)) as server, answering(ollama_answer("[]")) as ollama:
        env = {**env_for(server, ollama), "ANTHROPIC_BASE_URL": server.url}
        found = chain_for(mode, client, env).pick("n", DESCRIPTION, REASONING)
    assert found is not None and found.provider == "local"
    assert server.requests == [] and ollama.requests == []


def test_a_named_haiku_without_a_key_is_reported(client: httpx.Client) -> None:
    with answering(haiku_answer(HAIKU_TEXT)) as server:
        named = chain_for("haiku", client, {**env_for(server), "ANTHROPIC_API_KEY": ""})
        assert named.pick("n", DESCRIPTION, REASONING).provider == "local"  # type: ignore[union-attr]
    assert server.requests == []
    assert named.notes == ["haiku: set ANTHROPIC_API_KEY to use this tier"]


@pytest.mark.parametrize("memlog_override", [False, True])
def test_haiku_goes_where_anthropic_base_url_says(
    client: httpx.Client, memlog_override: bool
) -> None:
    """The gateway Claude Code is pointed at, unless memlog's own variable says otherwise."""
    with answering(haiku_answer(HAIKU_TEXT)) as gateway, answering(haiku_answer(HAIKU_TEXT)) as own:
        env = {"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": gateway.url + "/v1"}
        if memlog_override:
            env["MEMLOG_ANTHROPIC_BASE_URL"] = own.url
        labels = HaikuKeywords(client, env=env, timeout=TIMEOUT).label("n", DESCRIPTION, "")
    assert labels == json.loads(HAIKU_TEXT)
    asked, spared = (own, gateway) if memlog_override else (gateway, own)
    assert [r.path for r in asked.requests] == ["/v1/messages"] and spared.requests == []


def test_a_refused_key_is_reported(client: httpx.Client) -> None:
    refusal = (
        b'{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}'
    )
    with answering(refusal, status=401) as server:
        with pytest.raises(
            ProviderUnavailable, match="401.*authentication_error: invalid x-api-key"
        ):
            HaikuKeywords(client, env=env_for(server), timeout=TIMEOUT).label("n", DESCRIPTION, "")


def test_ollama_without_the_model_is_unavailable(client: httpx.Client) -> None:
    missing = b'{"error":"model \\"llama3.2\\" not found, try pulling it first"}'
    with answering(missing, status=404) as server:
        chain = chain_for("ollama", client, env_for(ollama=server))
        assert chain.pick("n", DESCRIPTION, REASONING).provider == "local"  # type: ignore[union-attr]
    assert chain.notes and chain.notes[0].startswith("ollama: llama3.2 not found at")


def test_parse_answer_shapes() -> None:
    assert parse_answer('["a", "b"]') == ["a", "b"]
    assert parse_answer('```json\n["a"]\n```') == ["a"]
    assert parse_answer('{"keywords": ["a", "b"]}') == ["a", "b"]
    assert parse_answer("a, b, c") is None
    assert parse_answer("[1, 2]") is None


def test_prompt_asks_for_a_json_array_of_3_to_10_lowercase_keywords() -> None:
    prompt = prompt_for("Name", DESCRIPTION, "")
    assert "3 to 10 keywords" in prompt and "JSON array" in prompt and "lowercase" in prompt
    assert all(word in prompt for word in AC5_STOPWORDS)


# -- label_entries: one entry.labelled event per entry ----------------------------------


def entry(description: str, keywords: list[str] | None = None) -> Entry:
    return Entry(
        id=entry_id(description),
        name="Name",
        description=description,
        category="patterns",
        keywords=keywords or [],
        created_at="2026-01-01T00:00:00Z",
        updated_at="2026-01-01T00:00:00Z",
        source="manual",
    )


def labelled_events(home: Path) -> list[Labelled]:
    return [r.event for r in EventLog(home).read() if isinstance(r.event, Labelled)]


def test_label_entries_appends_one_event_per_entry(memlog_home: Path) -> None:
    entries = [entry(DESCRIPTION), entry("Deployment scripts need a lock around the release.")]
    supplied = {entries[0].id: ["markdown", "pipe", "backtick"]}
    outcome = label_entries(
        EventLog(memlog_home), entries, Config(memory_keyword_provider="local"), supplied
    )
    stored = labelled_events(memlog_home)
    assert stored == outcome.events
    assert [(e.entry_id, e.provider) for e in stored] == [
        (entries[0].id, "caller"),
        (entries[1].id, "local"),
    ]
    assert stored[0].keywords == ("markdown", "pipe", "backtick")


@pytest.mark.parametrize("mode", ["off", "caller"])
def test_modes_that_generate_nothing(memlog_home: Path, mode: str) -> None:
    outcome = label_entries(
        EventLog(memlog_home), [entry(DESCRIPTION)], Config(memory_keyword_provider=mode)
    )
    assert outcome.events == [] and labelled_events(memlog_home) == []


def test_needs_labels() -> None:
    """Only an entry without keywords is labelled: keywords a writer gave are kept."""
    assert needs_labels(entry(DESCRIPTION), {})
    done = entry(DESCRIPTION, ["markdown", "pipe", "backtick"])
    assert not needs_labels(done, {})
    assert not needs_labels(done, {done.id: ["cells", "row", "span"]})
    assert not needs_labels(entry(DESCRIPTION), {done.id: ["zebrafish"]})
    assert not needs_labels(entry(DESCRIPTION, ["only-one"]), {})


# -- end to end: memlog observe, memlog search ------------------------------------------


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


@pytest.fixture
def no_ollama(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMLOG_OLLAMA_BASE_URL", "http://127.0.0.1:9")


@pytest.mark.usefixtures("no_ollama")
def test_observe_records_labels_that_search_finds(memlog_home: Path) -> None:
    result = invoke(
        "observe", "--name", "Table pipes", "--description", DESCRIPTION,
        "--reasoning", REASONING, "--category", "patterns",
        "--keyword", "markdown", "--keyword", "pipe", "--keyword", "backtick",
        "--keyword", "zebrafish",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    other = invoke(
        "observe", "--name", "Release lock", "--category", "heuristics",
        "--description", "Deployment scripts need a lock around the release step.",
    )  # fmt: skip
    assert other.exit_code == 0, other.output
    events = labelled_events(memlog_home)
    # the writer's keywords are kept as given (no entry.labelled); the other entry is labelled
    assert [e.provider for e in events] == ["local"]
    assert_ac5(
        list(events[0].keywords), "Deployment scripts need a lock around the release step.", ""
    )
    (given,) = [r.event for r in EventLog(memlog_home).read() if isinstance(r.event, Observed)][:1]
    assert given.keywords == ("markdown", "pipe", "backtick", "zebrafish")
    # "zebrafish" is only a label: search finds the entry through its indexed keywords
    found = invoke("search", "zebrafish", "--json")
    assert found.exit_code == 0, found.output
    chosen = json.loads(found.stdout)
    assert chosen[0]["id"] == given.entry_id
    assert chosen[0]["components"]["lexical_raw"] > 0
    assert all(c["components"]["lexical_raw"] == 0 for c in chosen[1:])


@pytest.mark.usefixtures("no_ollama")
def test_observing_again_does_not_label_again(memlog_home: Path) -> None:
    args = ("observe", "--name", "Pipes", "--description", DESCRIPTION, "--category", "patterns")
    assert invoke(*args).exit_code == 0
    assert invoke(*args).exit_code == 0
    assert len(labelled_events(memlog_home)) == 1


def test_caller_mode_generates_nothing(memlog_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMLOG_KEYWORD_PROVIDER", "caller")
    args = ("observe", "--name", "Pipes", "--description", DESCRIPTION, "--category", "patterns")
    assert invoke(*args).exit_code == 0
    assert labelled_events(memlog_home) == []
