"""Text that tries to reach the terminal, and secrets that try to reach a message.

A memory may hold anything a tool or a model stored (ESC, NUL, bidirectional
overrides): what the commands print for people shows those escaped, as git and ls do.
Every field is scanned for secrets as it was given, before keywords are lower-cased;
no message, error or notice repeats a secret.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from memlog.commands.cli import cli
from memlog.eventlog.events import Observed
from memlog.eventlog.log import EventLog

AWS = "AKIAIOSFODNN7EXAMPLE"
GITHUB = "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"
AZURE = "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=" + "Zm9v" * 22 + "=="


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def raw_entry(home: Path) -> str:
    """An entry holding control characters, appended as a tool could (no command)."""
    name = "Title\x1b]0;pwned\x07 \x1b[2J\x00end\u202eevil"
    event = Observed(
        name=name, description="Reset \x1b[31mred\x1b[0m and \x9b31m C1 too.", category="facts",
        reasoning="bell\x07 backspace\x08 del\x7f", keywords=("k\x1bw",),
    )  # fmt: skip
    return EventLog(home).append([event])[0].entry_id


def terminal_safe(output: str) -> None:
    for raw in ("\x1b", "\x00", "\x07", "\x08", "\x7f", "\x9b", "\u202e"):
        assert raw not in output, repr(raw)


def test_list_show_search_and_log_print_control_characters_escaped(memlog_home: Path) -> None:
    entry_id = raw_entry(memlog_home)
    listed = run("list", "--status", "any")  # (held for its hidden characters: not live)
    terminal_safe(listed.output)
    assert "Title\\x1b]0;pwned\\x07" in listed.output and "\\u202eevil" in listed.output
    shown = run("show", entry_id[:10])
    terminal_safe(shown.output)
    assert "Reset \\x1b[31mred" in shown.output and "del\\x7f" in shown.output
    for args in (["search", "Reset red"], ["log"], ["retire", entry_id[:10], "--reason", "x"]):
        done = run(*args)
        assert done.exit_code == 0, done.output
        terminal_safe(done.output)
    as_json = json.loads(run("show", entry_id[:10], "--json").output)  # JSON keeps the text
    assert as_json["entry"]["name"].startswith("Title\x1b]0;pwned")


def test_a_name_given_with_control_characters_is_escaped_when_printed(memlog_home: Path) -> None:
    done = run("observe", "--name", "Bad\x1b[5mname", "--description", "Plain text.",
               "--category", "facts")  # fmt: skip
    assert done.exit_code == 0, done.output
    terminal_safe(done.output)
    assert "Bad\\x1b[5mname" in done.output


@pytest.mark.parametrize(
    "secret", [AWS, GITHUB, "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJl"]
)
def test_a_keyword_is_scanned_as_given_and_never_shown(memlog_home: Path, secret: str) -> None:
    done = run("observe", "--name", "Deploy", "--description", "Deploy with the usual key.",
               "--category", "facts", "--keyword", secret, "--keyword", "CSV Headers")  # fmt: skip
    assert done.exit_code == 0, done.output
    assert secret not in done.output and secret.lower() not in done.output
    assert "recorded 'CSV Headers' as 'csv-headers'" in done.output
    assert "(redacted keywords:" in done.output
    log = b"".join(p.read_bytes() for p in (memlog_home / "events").glob("*.jsonl"))
    assert secret.encode() not in log and secret.lower().encode() not in log.lower()
    stored = [r.event for r in EventLog(memlog_home).read()][0]
    assert isinstance(stored, Observed) and stored.keywords == ("csv-headers",)
    assert "keywords" in stored.redacted


def test_every_field_is_scanned_before_it_is_folded(memlog_home: Path, tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({
        "name": f"Key {AWS}", "description": f"Storage: {AZURE}", "category": "facts",
        "keywords": [GITHUB], "references": [f"https://x.example/?token={GITHUB}"],
        "project": "p", "feature": f"feature {AWS}",
    }) + "\n")  # fmt: skip
    done = run("observe", "--from", str(source))
    assert done.exit_code == 0, done.output
    stored = [r.event for r in EventLog(memlog_home).read()][0]
    assert isinstance(stored, Observed)
    text = json.dumps([stored.name, stored.description, stored.keywords, stored.references,
                       stored.feature])  # fmt: skip
    for secret in (AWS, GITHUB, "Zm9vZm9v"):
        assert secret not in text and secret.lower() not in text.lower(), secret
    kinds = {(f.field, f.kind) for f in stored.redactions}
    assert ("description", "azure-storage-key") in kinds and ("keywords", "github-token") in kinds


def test_no_redact_keeps_a_keyword_and_redact_match_finds_it(memlog_home: Path) -> None:
    kept = run("observe", "--name", "Deploy", "--description", "Deploy with the usual key.",
               "--category", "facts", "--keyword", AWS, "--no-redact")  # fmt: skip
    assert AWS.lower() not in kept.output.lower(), kept.output  # the notice shows neither form
    done = run("redact", "--match", AWS, "--reason", "a key in a keyword")
    assert done.exit_code == 0, done.output
    assert AWS not in done.output
    log = b"".join(p.read_bytes() for p in (memlog_home / "events").glob("*.jsonl"))
    assert AWS.lower().encode() not in log.lower()


@pytest.mark.parametrize(
    "args",
    [
        ["observe", "--name", "n", "--description", "d", "--category", AWS],
        ["show", GITHUB],
        ["list", "--status", GITHUB],
        ["redact", "--match", "sk_live_51HxQkLm2eZvKYlo2C8pQ7dRt", "--reason", "r"],
    ],
)
def test_no_message_prints_a_secret(memlog_home: Path, args: list[str]) -> None:
    run("observe", "--name", "Seed", "--description", "Seed entry.", "--category", "facts")
    done = run(*args)
    assert done.exit_code != 0
    for secret in (AWS, GITHUB, "51HxQkLm2eZvKYlo"):
        assert secret not in done.output, done.output


@pytest.mark.parametrize("command", ["observe", "promote", "redact"])
def test_input_that_is_not_utf8_is_one_line_at_every_door(
    memlog_home: Path, tmp_path: Path, command: str
) -> None:
    source = tmp_path / "input"
    source.write_bytes(b'{"name": "a", "description": "\xff\xfe", "category": "facts"}\n')
    run("observe", "--name", "Seed", "--description", "Seed entry.", "--category", "facts")
    extra = ["--reason", "r"] if command == "redact" else []
    done = CliRunner().invoke(cli, [command, "--from", str(source), *extra])
    assert done.exit_code == 2, done.output
    lines = [line for line in done.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "UTF-8" in lines[0] and "internal error" not in lines[0]
