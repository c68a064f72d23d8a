"""Vectors as events: write-time embedding, reembed, provider switches, replay."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner, Result

from memlog.commands.cli import cli
from memlog.embeddings.hashing import HashingProvider
from memlog.eventlog.log import EventLog
from memlog.home import Home
from memlog.projections.sqlite_view import store
from memlog.projections.sqlite_view.reading import load_matrix
from memlog.tests.loopback import Answer, LoopbackServer
from memlog.vocabulary import Space

DIMS = 64
OPENAI = Space("openai", "text-embedding-3-small", DIMS)
HASHING = Space("hashing", "blake2b-words", 384)


class OpenAIShaped:
    """Answers like OpenAI's /v1/embeddings; ``script`` overrides answers by call number."""

    def __init__(self) -> None:
        self.calls = 0
        self.script: dict[int, Answer] = {}
        self.embedder = HashingProvider(dimensions=DIMS)

    def __call__(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> Answer:
        self.calls += 1
        if self.calls in self.script:
            return self.script[self.calls]
        request = json.loads(body)
        vectors = self.embedder.embed_batch(request["input"], "document")
        data = [{"object": "embedding", "index": i, "embedding": v.tolist()}
                for i, v in enumerate(vectors)]  # fmt: skip
        answer = {"object": "list", "data": data, "model": request["model"],
                  "usage": {"prompt_tokens": 1, "total_tokens": 1}}  # fmt: skip
        return 200, {"content-type": "application/json"}, json.dumps(answer).encode()


@pytest.fixture
def openai(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIShaped]:
    peer = OpenAIShaped()
    with LoopbackServer(peer) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setenv("MEMLOG_EMBEDDING_BASE_URL", server.url)
        monkeypatch.setenv("MEMLOG_EMBEDDING_DIMENSIONS", str(DIMS))
        yield peer


def invoke(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input)


def observe_many(n: int) -> None:
    lines = "\n".join(
        json.dumps({"name": f"Entry {i}", "description": f"Lesson {i} about topic {i % 7}",
                    "category": "heuristics"})
        for i in range(n)
    )  # fmt: skip
    result = invoke("observe", "--json", "-", input=lines)
    assert result.exit_code == 0, result.output


def pending(monkeypatch: pytest.MonkeyPatch | None = None) -> int:
    data = json.loads(invoke("stats", "--json").output)
    return int(data["embeddings"]["pending"])


def matrix(home: Path, space: Space) -> tuple[list[str], np.ndarray]:  # type: ignore[type-arg]
    db = store.connect(Home(home).db)
    try:
        found = load_matrix(db, Home(home), space)
        return found.ids, np.array(found.vectors)
    finally:
        db.close()


def reembedded_events(home: Path) -> list[tuple[str, str]]:
    return [
        (r.event.entry_id, r.event.provider)  # type: ignore[union-attr]
        for r in EventLog(home).read()
        if type(r.event).__name__ == "Reembedded"
    ]


def test_observations_are_embedded_at_write_time(memlog_home: Path) -> None:
    observe_many(5)
    assert pending() == 0
    ids, vectors = matrix(memlog_home, HASHING)
    # kept as q8: each value within half a step of its vector's scale
    assert len(ids) == 5 and np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-2)


def test_unavailable_provider_leaves_entries_pending(
    memlog_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMLOG_EMBEDDING_PROVIDER", "openai")  # no key
    result = invoke("observe", "--name", "n", "--description", "d", "--category", "patterns")
    assert result.exit_code == 0
    assert "memlog reembed will do it" in result.output
    assert pending() == 1


def test_switch_then_reembed_converges_and_spaces_never_mix(
    memlog_home: Path, monkeypatch: pytest.MonkeyPatch, openai: OpenAIShaped
) -> None:
    observe_many(12)
    monkeypatch.setenv("MEMLOG_EMBEDDING_PROVIDER", "openai")
    assert pending() == 12
    before = json.loads(invoke("search", "topic 3", "--json").output)
    assert before  # keyword + prominence still rank without vectors
    result = invoke("reembed")
    assert result.exit_code == 0, result.output
    assert "embedded 12 entries with openai/text-embedding-3-small" in result.output
    assert pending() == 0
    assert len(matrix(memlog_home, OPENAI)[0]) == 12
    old = Space("hashing", "blake2b-words", DIMS)  # the fixture's dimensions apply to both
    assert len(matrix(memlog_home, old)[0]) == 12  # the old space is kept, not mixed
    explained = invoke("search", "Lesson 3 about topic 3", "--explain").output
    assert "vector matches: 12" in explained
    assert invoke("reembed").output.startswith("nothing to embed")
    assert invoke("reembed", "--all").exit_code == 0
    assert len(reembedded_events(memlog_home)) == 12 + 12 + 12


def test_rate_limit_stops_cleanly_and_resumes(
    memlog_home: Path, monkeypatch: pytest.MonkeyPatch, openai: OpenAIShaped
) -> None:
    observe_many(60)
    monkeypatch.setenv("MEMLOG_EMBEDDING_PROVIDER", "openai")
    quota = json.dumps(
        {
            "error": {
                "message": "You exceeded your current quota",
                "type": "insufficient_quota",
                "code": "insufficient_quota",
            }
        }
    )
    openai.script[openai.calls + 2] = (429, {}, quota.encode())  # the second batch
    result = invoke("reembed")
    assert result.exit_code == 3
    assert "quota exhausted" in result.output
    assert pending() == 10
    assert invoke("reembed").exit_code == 0
    assert pending() == 0
    events = [e for e in reembedded_events(memlog_home) if e[1] == "openai"]
    assert len(events) == len(set(events)) == 60


@pytest.mark.parametrize(
    "answer",
    [
        (200, {}, b"{not json"),
        (200, {}, json.dumps({"data": [{"index": 0, "embedding": [0.1] * 3}]}).encode()),
        (500, {"Retry-After": "0"}, b"boom"),
    ],
    ids=["malformed", "wrong-dimensions", "server-error"],
)
def test_bad_answers_append_nothing(
    memlog_home: Path, monkeypatch: pytest.MonkeyPatch, openai: OpenAIShaped, answer: Answer
) -> None:
    observe_many(3)
    monkeypatch.setenv("MEMLOG_EMBEDDING_PROVIDER", "openai")
    for call in range(openai.calls + 1, openai.calls + 8):
        openai.script[call] = answer
    result = invoke("reembed")
    assert result.exit_code == 3, result.output
    assert [e for e in reembedded_events(memlog_home) if e[1] == "openai"] == []
    assert pending() == 3
    verified = invoke("verify")
    assert verified.exit_code == 0, verified.output


def test_replay_reproduces_vectors_without_any_provider(
    memlog_home: Path, monkeypatch: pytest.MonkeyPatch, openai: OpenAIShaped
) -> None:
    monkeypatch.setenv("MEMLOG_EMBEDDING_PROVIDER", "openai")
    observe_many(7)
    ids, vectors = matrix(memlog_home, OPENAI)
    assert len(ids) == 7
    monkeypatch.setenv("MEMLOG_EMBEDDING_BASE_URL", "http://127.0.0.1:9")  # nothing listens
    for path in [Home(memlog_home).db, memlog_home / "index"]:
        if path.is_dir():
            for child in path.iterdir():
                child.unlink()
        else:
            path.unlink()
    calls = openai.calls
    assert invoke("replay").exit_code == 0
    again_ids, again = matrix(memlog_home, OPENAI)
    assert again_ids == ids and np.array_equal(again, vectors)
    assert openai.calls == calls


# -- semantic relevance with the real local model (semantic memory spec AC1) -------------

PARSER = [
    ("Read samples first", "Read several real input files before writing a parser for a format."),
    ("Fail loudly on malformed input", "A parser should report the line and column of bad input."),
    ("Tokenise before parsing", "Split input into tokens first; parsing tokens is simpler."),
    ("Parser error recovery", "Let the parser skip to the next statement after an error."),
    ("Round-trip parse tests", "Test that parse then print gives back the original text."),
    ("Parser combinators for small grammars", "Small grammars are easy with parser combinators."),
    ("Fuzz the parser", "Feed random bytes to the parser to find crashes and hangs."),
    ("Streaming parse for big files", "Parse large files incrementally instead of loading them."),
    ("Parse dates strictly", "Parse timestamps with an explicit format, never guess."),
    ("Keep parser state explicit", "A parser's state machine should be a visible enum."),
    ("Grammar before code", "Write the grammar of the file format down before coding the reader."),
    ("Handle encodings at the boundary", "Decode bytes to text once, when reading the file."),
    ("Reject unknown fields", "Readers of config formats should reject keys they do not know."),
    ("Line numbers in messages", "Every syntax error message should name the line it came from."),
    ("Schema validation of input", "Validate decoded documents against a schema before use."),
    ("Lexer golden files", "Keep expected token streams for sample inputs under test."),
    ("Tolerate trailing whitespace", "Readers of text formats should ignore trailing spaces."),
    ("Decode JSON into types", "Decode JSON straight into typed structs, not loose dicts."),
    ("Recursive descent is enough", "Hand-written recursive descent handles most file formats."),
    ("Bounded recursion depth", "Limit nesting depth when reading untrusted documents."),
]
DEPLOYMENT = [
    ("Blue green deploys", "Switch traffic between two identical environments to release."),
    ("Roll back fast", "Every release needs a one-command rollback."),
    ("Pin base images", "Pin container base images by digest in production builds."),
    ("Health checks gate traffic", "Only route traffic to instances whose health check passes."),
    ("Migrate then deploy", "Run backward-compatible database migrations before the release."),
    ("Feature flags for risky changes", "Ship risky changes dark behind a flag."),
    ("Canary a small share", "Send a small share of users to a new version first."),
    ("Immutable servers", "Replace servers instead of patching them in place."),
    ("Secrets from the environment", "Inject secrets at deploy time, never bake them into images."),
    ("Deploy on weekdays", "Avoid releasing to production late on Fridays."),
    ("Infrastructure as code", "Describe cloud resources in versioned configuration."),
    ("Watch error rates after release", "Alert when error rates rise after a rollout."),
    ("Drain connections", "Drain open connections before stopping an instance."),
    ("Version every artifact", "Tag each build artifact with the commit it came from."),
    ("Staging mirrors production", "Keep staging configuration identical to production."),
    ("Limit blast radius", "Roll out region by region to limit the blast radius."),
    ("Automate the pipeline", "Releases go through the CI/CD pipeline, never by hand."),
    ("Warm caches before cutover", "Warm caches on the new fleet before switching traffic."),
    ("Zero-downtime restarts", "Restart services one instance at a time behind the balancer."),
    ("Record each release", "Keep a changelog entry and timestamp for every production release."),
]
TESTING = [
    ("Test behaviour not internals", "Tests should check observable behaviour, not private calls."),
    ("One assertion focus", "Each test should verify one idea."),
    ("Fast unit tests", "Keep unit tests fast so they run on every change."),
    ("Flaky tests get fixed", "Quarantine and fix flaky tests instead of retrying them."),
    ("Property-based tests", "Generate inputs to find the edge cases you did not think of."),
    ("Temporary directories in tests", "Tests write only to temporary directories."),
    ("Real peers over mocks", "Test against a real local server rather than a mock."),
    ("Coverage is a guide", "Use coverage to find untested code, not as a target."),
    ("Name tests after behaviour", "A test's name should state the behaviour it checks."),
    ("Deterministic seeds", "Seed random generators in tests so failures reproduce."),
]


@pytest.mark.ac("024:1")
@pytest.mark.slow
def test_local_model_finds_parser_entries(
    memlog_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMLOG_EMBEDDING_PROVIDER", "local")
    avoid = [d for _, d in PARSER if "pars" not in d.lower()]
    assert len(avoid) >= 10  # half of the parser entries never say parse/parser
    rows = [(n, d, "parser") for n, d in PARSER] + [(n, d, "deploy") for n, d in DEPLOYMENT]
    rows += [(n, d, "testing") for n, d in TESTING]
    lines = "\n".join(
        json.dumps({"name": n, "description": d, "category": c})
        for (n, d, _), c in zip(
            rows, ["anti-patterns", "heuristics", "patterns"] * 17, strict=False
        )
    )
    assert invoke("observe", "--json", "-", input=lines).exit_code == 0
    result = invoke("search", "building a file parser with error handling", "--limit", "25",
                    "--json")  # fmt: skip
    assert result.exit_code == 0, result.output
    topic = {n: t for n, _, t in rows}
    chosen = [topic[c["name"]] for c in json.loads(result.output)]
    assert chosen.count("parser") >= 15, chosen
