"""Secrets never land: every way text enters memlog, then a grep of every file of the home.

Regression of failure 2 of issue 12: of 11 realistic secrets given to
``memlog observe``, 5 reached the log, ``memory.db`` and the markdown (a
Stripe live key, a JWT, ``password=…``, the password of a postgres URL,
``aws_secret_access_key = …``).  Here each secret goes in through every
entry point — command-line options, a ``--json`` input file and stdin, an
imported knowledge bank, a retrospective for ``promote``, the MCP server's
``store_memory`` — and afterwards no file under the home holds any
secret's distinctive part, while the caller was told what was removed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from memlog.commands.cli import cli
from memlog.eventlog.events import Observed
from memlog.eventlog.log import EventLog
from memlog.tests.capture.extraction.helpers import extraction, item, write_transcript
from memlog.tests.messages_api import MessagesAPI

#: (what it is, the text as a user would paste it, its distinctive part)
CORPUS: list[tuple[str, str, str]] = [
    ("stripe live key", "sk_live_51HxQkLm2eZvKYlo2C8pQ7dRtW", "51HxQkLm2eZvKYlo2C8p"),
    (
        "jwt",
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJhZG1pbiIsImV4cCI6MTcwMH0."
        "Xq8Zr2Lw9Vt4Ns7Kp1Mj6Hc3Gb5Fd0Sa",
        "Xq8Zr2Lw9Vt4Ns7Kp1Mj",
    ),
    ("password assignment", "password=Tr0ub4dor-PROD-77", "Tr0ub4dor-PROD"),
    ("postgres url", "postgres://billing:Pg9-rEd-Fox-12@db.internal:5432/billing", "Pg9-rEd-Fox"),
    (
        "aws secret",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzqLrT9uK",
        "wJalrXUtnFEMI/K7MDENG",
    ),
    ("aws key id", "AKIAZ7QW3ERT5YUI9OPL", "AKIAZ7QW3ERT5YUI9OPL"),
    ("github token", "ghp_Zq8Xw7Vu6Ts5Rq4Po3Nm2Lk1Jh0Gf9Ed8Cb7", "Zq8Xw7Vu6Ts5Rq4Po3Nm"),
    ("slack token", "xoxb-884211-9917263-QpWoEiRuTyAlSkDj", "9917263-QpWoEiRuTyAlSkDj"),
    ("openai key", "sk-proj-Mn8Bv7Cx6Zl5Kj4Hg3Fd2Sa1Qw0Er9Ty", "Mn8Bv7Cx6Zl5Kj4Hg3Fd"),
    ("anthropic key", "sk-ant-api03-Lp0Ok9Ij8Uh7Yg6Tf5Rd4Es3Wa2Qz1", "Lp0Ok9Ij8Uh7Yg6Tf5Rd"),
    ("google key", "AIzaSyC-4kLm9Np2Qr5St8Uv1Wx3Yz6Ab0Cd7E", "4kLm9Np2Qr5St8Uv1Wx3"),
    (
        "pem block",
        "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----",
        "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
    ),
    ("env line", "DEPLOY_TOKEN=Vb7Nm3Qw9Zx1Lp5K", "Vb7Nm3Qw9Zx1Lp5K"),
    (
        "azure connection string",
        "DefaultEndpointsProtocol=https;AccountName=billingprod;AccountKey="
        "Qm9vbXZhcjJrTm9yZFd5ZWxsb3dGb3hKdW1wc092ZXJMYXp5RG9nczEyMzQ1Njc4OTAxMjM0NTY3OD"
        "kwYWJjZGVmZ2g=;EndpointSuffix=core.windows.net",
        "Qm9vbXZhcjJrTm9yZFd5ZWxsb3dGb3hK",
    ),
    (
        "azure sas token",
        "https://billingprod.blob.core.windows.net/exports/x.csv?sv=2022-11-02&ss=b&srt=o"
        "&sp=r&se=2026-01-01T00:00:00Z&sig=Zk9wQ2xNbTdUczRSaDJWajhZcEUzZ1F1NlhiTjFjQTA%3D",
        "Zk9wQ2xNbTdUczRSaDJWajhZcEUz",
    ),
    ("shopify token", "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", "0f1e2d3c4b5a69788796a5b4c3d2e1f0"),
]
IDS = [c[0].replace(" ", "-") for c in CORPUS]


def description(i: int, secret: str) -> str:
    return f"Lesson {i}: the staging deploy failed until we set {secret} in the runner."


def reasoning(secret: str) -> str:
    return f"Found in the CI log, which printed {secret} verbatim."


def assert_nowhere(home: Path, distinctive: str) -> None:
    """No file under the home (the log, memory.db and its WAL, vectors, markdown, state,
    quarantine, backups) holds the secret's distinctive part, as text or JSON-escaped."""
    forms = {distinctive.encode(), json.dumps(distinctive)[1:-1].encode()}
    files = [p for p in home.rglob("*") if p.is_file()]
    assert any(p.parent.name == "events" for p in files)  # the log was written
    hits = [str(p.relative_to(home)) for p in files for f in forms if f in p.read_bytes()]
    assert hits == [], f"{distinctive!r} found in {hits}"


def invoke(*args: str, stdin: str | None = None) -> Any:
    result = CliRunner().invoke(cli, list(args), input=stdin)
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "billing-service"
    (root / ".claude").mkdir(parents=True)
    monkeypatch.chdir(root)
    return root


@pytest.mark.parametrize(("kind", "secret", "distinctive"), CORPUS, ids=IDS)
def test_command_line_options(
    memlog_home: Path, project: Path, kind: str, secret: str, distinctive: str
) -> None:
    result = invoke(
        "observe", "--name", f"Deploy needs {kind}", "--category", "anti-patterns",
        "--description", description(1, secret), "--reasoning", reasoning(secret),
        "--reference", f"https://ci.example/logs?q={secret}",
    )  # fmt: skip
    assert "(redacted description: " in result.stdout and "reasoning: " in result.stdout
    invoke("inject", "--limit", "5", "--record")  # the injection record and the recall event too
    assert_nowhere(memlog_home, distinctive)


@pytest.mark.parametrize("stdin", [False, True], ids=["file", "stdin"])
def test_json_input(memlog_home: Path, project: Path, tmp_path: Path, stdin: bool) -> None:
    lines = [
        json.dumps(
            {
                "name": f"Lesson {i}",
                "description": description(i, secret),
                "reasoning": reasoning(secret),
                "category": "patterns",
                "references": [f"notes/{secret}.txt"],
            }
        )  # fmt: skip
        for i, (_, secret, _) in enumerate(CORPUS)
    ]
    data = "\n".join(lines) + "\n"
    if stdin:
        result = invoke("observe", "--json", "-", stdin=data)
    else:
        (tmp_path / "lessons.jsonl").write_text(data)
        result = invoke("observe", "--json", str(tmp_path / "lessons.jsonl"))
    assert result.stdout.count("(redacted ") == len(CORPUS)
    for _, _, distinctive in CORPUS:
        assert_nowhere(memlog_home, distinctive)


def test_import_of_a_knowledge_bank(memlog_home: Path, project: Path) -> None:
    bank = project / "docs" / "knowledge-bank"
    bank.mkdir(parents=True)
    blocks = [
        f"### Anti-Pattern: Leak {i}\n{description(i, secret)}\n"
        f"- Observed in: Feature #0{i:02d}\n- Cost: {reasoning(secret)}\n"
        for i, (_, secret, _) in enumerate(CORPUS)
        if "\n" not in secret  # a knowledge-bank entry is one block of lines
    ]
    (bank / "anti-patterns.md").write_text(
        "# Anti-Patterns\n\nThings to avoid.\n\n---\n\n## Known Anti-Patterns\n\n"
        + "\n".join(blocks)
    )
    result = invoke("import", str(bank))
    assert result.stderr.count("secrets replaced by [REDACTED]") == len(blocks)
    for _, secret, distinctive in CORPUS:
        if "\n" not in secret:
            assert_nowhere(memlog_home, distinctive)


def test_a_retrospective_for_promote(memlog_home: Path, project: Path) -> None:
    lines = [
        json.dumps(
            {
                "name": f"Retro {i}",
                "description": description(i, secret),
                "reasoning": reasoning(secret),
                "category": "heuristics",
                "scope": "universal",
                "reason": "seen in two services",
            }
        )  # fmt: skip
        for i, (_, secret, _) in enumerate(CORPUS)
    ]
    result = invoke("promote", "--json", "-", stdin="\n".join(lines))
    assert result.stderr.count("secrets replaced by [REDACTED]") == len(CORPUS)
    assert (memlog_home / "heuristics.md").exists()  # the global store was written too
    for _, _, distinctive in CORPUS:
        assert_nowhere(memlog_home, distinctive)


def test_extraction_of_a_session(
    memlog_home: Path, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session whose transcript holds every secret, extracted through the Messages API
    (a loopback peer) by a model that repeats them in its answer: none is sent, none kept."""
    subprocess.run(["git", "init", "-q", "-b", "feature/billing", str(project)], check=True)
    claude = tmp_path / "claude"
    folder = claude / "projects" / "".join(c if c.isalnum() else "-" for c in str(project))
    folder.mkdir(parents=True)
    pairs = [(f"Why did deploy {i} fail with {secret}?", f"{description(i, secret)} "
              f"{reasoning(secret)} " * 2) for i, (_, secret, _) in enumerate(CORPUS)]  # fmt: skip
    write_transcript(folder / "sess-1.jsonl", project, "feature/billing", pairs)
    said = [item(f"{description(i, secret)} Keep it in the vault.") for i, (_, secret, _)
            in enumerate(CORPUS)]  # fmt: skip
    with MessagesAPI(structured=extraction(*said)) as api:
        for name, value in {"MEMLOG_EXTRACTION_PROVIDER": "anthropic",
                            "ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": api.url,
                            "CLAUDE_CONFIG_DIR": str(claude)}.items():  # fmt: skip
            monkeypatch.setenv(name, value)
        result = invoke("memorize", "--session", "sess-1")
    assert "sess-1  extracted:" in result.output and api.messages
    assert "[REDACTED]" in json.dumps(api.messages)  # the transcript went, cleaned
    sent = json.dumps(api.messages)
    stored = [e for e in EventLog(memlog_home).read() if isinstance(e.event, Observed)]
    assert len(stored) >= len(CORPUS) // 2  # the model's answer was kept, cleaned
    assert any("[REDACTED]" in r.event.description for r in stored)
    for _, _, distinctive in CORPUS:
        assert distinctive not in sent and json.dumps(distinctive)[1:-1] not in sent
        assert_nowhere(memlog_home, distinctive)


def test_mcp_store_memory(memlog_home: Path, project: Path, tmp_path: Path) -> None:
    async def main() -> list[Any]:
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "memlog", "serve-mcp"], cwd=project,
            env={"MEMLOG_HOME": str(memlog_home), "MEMLOG_EMBEDDING_PROVIDER": "hashing",
                 "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
        )  # fmt: skip
        with open(tmp_path / "server.log", "w", encoding="utf-8") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as client:
                    await client.initialize()
                    return [
                        await client.call_tool(
                            "store_memory",
                            {
                                "name": f"Leak {i}",
                                "description": description(i, secret),
                                "reasoning": reasoning(secret),
                                "category": "anti-patterns",
                                "references": [f"ci/{secret}"],
                            },
                        )  # fmt: skip
                        for i, (_, secret, _) in enumerate(CORPUS)
                    ]

    results = anyio.run(main)
    for result in results:
        assert not result.is_error, result
        stored = result.structured_content
        assert any(n.startswith("secrets replaced by [REDACTED]: ") for n in stored["notes"])
        assert {"description", "reasoning"} <= {r.split(":")[0] for r in stored["redacted"]}
        assert "redacted" not in stored["keywords"]
    for _, _, distinctive in CORPUS:
        assert_nowhere(memlog_home, distinctive)


@pytest.mark.slow
def test_the_real_executable(memlog_home: Path, project: Path) -> None:
    """The installed command, in its own process, as a user runs it."""
    secrets = " and ".join(secret for _, secret, _ in CORPUS if "\n" not in secret)
    done = subprocess.run(
        [sys.executable, "-m", "memlog", "observe", "--name", "Everything leaked",
         "--description", description(0, secrets), "--reasoning", reasoning(secrets),
         "--category", "anti-patterns"],
        capture_output=True, text=True, cwd=project, timeout=120,
        env={**os.environ, "MEMLOG_HOME": str(memlog_home)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    for _, secret, distinctive in CORPUS:
        if "\n" not in secret:
            assert_nowhere(memlog_home, distinctive)
