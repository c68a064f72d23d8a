"""``memlog redact``: a secret that got in anyway leaves the log, every view and every copy.

The secret is put everywhere a home can hold it: events (description,
reasoning, name, keyword labels, a recall's query), ``memory.db`` and its
write-ahead log, the markdown view, a backup of a hand-edited file, the
quarantine file (a torn line), ``.last-injection.json`` and the hook's error
log.  After the redaction no file under the home holds it, the log verifies
clean, and ``show`` tells what happened.
"""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from memlog.commands.cli import cli
from memlog.eventlog import segments as seg
from memlog.eventlog.codec import encode_line
from memlog.eventlog.events import Observed, Redacted, content_hash
from memlog.eventlog.log import EventLog
from memlog.home import Home

SECRET = "Zebra-Hunter2-Staging"
LEAKY = f"Deploys to staging log in with {SECRET} until the vault is set up."
LEAKY_ID = content_hash(LEAKY)


def invoke(*args: str, stdin: str | None = None, code: int = 0) -> Result:
    result = CliRunner().invoke(cli, list(args), input=stdin)
    assert result.exit_code == code, result.output
    return result


def holders(home: Path, text: str = SECRET) -> list[str]:
    """Every file holding ``text`` (as written or JSON-escaped; the quarantine decoded)."""
    forms = {text.encode(), json.dumps(text)[1:-1].encode()}
    found = {
        str(p.relative_to(home))
        for p in home.rglob("*")
        if p.is_file() and any(f in p.read_bytes() for f in forms)
    }
    kept = [base64.b64decode(r.data) for r in seg.read_quarantine(Home(home))]
    if any(f in data for data in kept for f in forms):
        found.add("quarantine.jsonl")
    return sorted(found)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "deploy-tools"
    (root / ".claude").mkdir(parents=True)
    monkeypatch.chdir(root)
    return root


@pytest.fixture
def leaked(memlog_home: Path, project: Path) -> Path:
    """A home holding the secret in every file it can."""
    invoke("observe", "--no-redact", "--name", f"Staging login {SECRET}",
           "--description", LEAKY, "--reasoning", f"The runbook says {SECRET}.",
           "--category", "patterns", "--keyword", SECRET.lower())  # fmt: skip
    invoke("observe", "--name", "Other", "--description", "Pin the CI image by digest.",
           "--category", "patterns")  # fmt: skip
    invoke("inject", "--limit", "5", "--record")  # .last-injection.json names the entry
    # a hand-edited markdown file, kept as a backup when memlog writes it next
    view = memlog_home / "projects" / "deploy-tools" / "patterns.md"
    view.write_text(view.read_text() + "\nmy own note\n")
    # a torn line holding the secret: the next append moves it to quarantine.jsonl
    log = EventLog(memlog_home)
    with open(log.segments()[-1], "ab") as segment:
        segment.write(encode_line(Observed(name="t", description=LEAKY, category="facts"))[:-30])
    invoke("observe", "--name", "Third", "--description", "Keep deploy scripts idempotent.",
           "--category", "patterns")  # fmt: skip
    with open(memlog_home / "hook-errors.log", "a") as errors:
        errors.write(f"2026-01-01T00:00:00Z note quoting {SECRET}\n")
    found = holders(memlog_home)
    assert {"quarantine.jsonl", ".last-injection.json", "hook-errors.log"} <= set(found)
    assert any(name.endswith(".bak") for name in found)
    assert "memory.db" in found or "memory.db-wal" in found
    assert any(name.startswith("events/") for name in found)
    return memlog_home


def test_redact_match_removes_it_from_every_file(leaked: Path) -> None:
    result = invoke("redact", "--match", SECRET, "--reason", "staging password in a lesson")
    assert "redacted" in result.stdout and "views rebuilt" in result.stdout
    assert "also removed from quarantine.jsonl" in result.stdout
    assert "edited by hand" not in result.stderr  # the views were rebuilt, not scrubbed
    assert len(list(leaked.rglob("*.bak"))) == 1  # the one the hand edit made
    assert holders(leaked) == []
    assert holders(leaked, SECRET.lower()) == []  # the keyword label made from it too
    verified = invoke("verify")
    assert "log: clean" in verified.stdout and "views: match a rebuild" in verified.stdout
    # the entry keeps its id, its history and its other text
    shown = invoke("show", LEAKY_ID[:8]).stdout
    assert f"id: {LEAKY_ID}" in shown and "[REDACTED]" in shown
    assert "because staging password in a lesson" in shown
    assert "redacted on " in shown and "removed from events 1" in shown
    assert "entry.observed manual (redacted name: match; description: match; " in shown
    found = json.loads(invoke("search", "staging login vault", "--json").stdout)
    assert found[0]["id"] == LEAKY_ID


def test_the_text_can_come_from_stdin(leaked: Path) -> None:
    result = invoke("redact", "--from", "-", "--reason", "leak", "--json", stdin=SECRET + "\n")
    done = json.loads(result.stdout)
    assert done["event"]["type"] == "entry.redacted" and done["event"]["kind"] == "match"
    assert done["event"]["ids"] == [LEAKY_ID] and done["events_rewritten"] == 1
    assert "quarantine.jsonl" in done["files"] and SECRET not in result.stdout
    assert holders(leaked) == []


def test_redact_an_entry_by_what_the_rules_find(memlog_home: Path, project: Path) -> None:
    text = "Publish with NPM_TOKEN=npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789 from CI."
    invoke("observe", "--no-redact", "--name", "Publish", "--description", text,
           "--category", "patterns")  # fmt: skip
    entry = content_hash(text)
    done = json.loads(invoke("redact", entry[:6], "--reason", "npm token", "--json").stdout)
    assert done["event"]["kind"] == "detected" and done["event"]["ids"] == [entry]
    assert holders(memlog_home, "AbCdEfGhIjKlMnOpQrSt") == []
    again = invoke("redact", entry[:6], "--reason", "again", code=2)
    assert "no secret found in the events of entry" in again.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--reason", "x"], "give an entry id, --match TEXT, or both"),
        (["--match", "abc", "--reason", "x"], "--match needs at least 4 characters"),
        (["--match", "not in the log", "--reason", "x"], "is nowhere in the log"),
        (["--match", SECRET, "--reason", " "], "--reason is empty"),
        (["ffff", "--match", SECRET, "--reason", "x"], "no entry with id ffff"),
        (["--match", SECRET, "--from", "-", "--reason", "x"], "--match or --from, not both"),
    ],
)
def test_refusals_are_one_line_and_change_nothing(
    leaked: Path, args: list[str], message: str
) -> None:
    before = {p.name: p.read_bytes() for p in EventLog(leaked).segments()}
    result = CliRunner().invoke(cli, ["redact", *args], input="")
    assert result.exit_code != 0 and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert {p.name: p.read_bytes() for p in EventLog(leaked).segments()} == before


def test_the_redaction_is_in_the_log_as_an_event(leaked: Path) -> None:
    invoke("redact", "--match", SECRET, "--reason", "leak")
    events = [r.event for r in EventLog(leaked).read()]
    (redacted,) = [e for e in events if isinstance(e, Redacted)]
    assert redacted.ids == (LEAKY_ID,) and redacted.reason == "leak"
    fields = {(r.seq, r.field) for r in redacted.removed}
    assert {(1, "name"), (1, "description"), (1, "reasoning"), (1, "keywords")} <= fields
    assert [e.seq for e in events] == sorted(e.seq for e in events)
    # the rewritten lines carry their own record of it
    first = events[0]
    assert isinstance(first, Observed) and first.stable_id == LEAKY_ID
    assert {f.field for f in first.redactions} == {"name", "description", "reasoning", "keywords"}
    assert seg.read_quarantine(Home(leaked))  # the quarantine kept its records, cleaned


def test_a_snapshot_cannot_be_redacted(leaked: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # fmt: skip
    snapshot = tmp_path / "then"
    invoke("replay", "--until", "2", "--to", str(snapshot))
    monkeypatch.setenv("MEMLOG_HOME", str(snapshot))
    result = CliRunner().invoke(cli, ["redact", "--match", SECRET, "--reason", "x"])
    assert result.exit_code == 1 and "is a snapshot" in result.stderr
    shutil.rmtree(snapshot)


# -- redact finishes what it started ---------------------------------------------------------


def test_a_file_vanishing_during_the_walk_is_passed_over(
    leaked: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A recorder's marker removed while redact walks the home: redact goes on, exit 0,
    and never makes the file again."""
    from memlog.projections import scrub

    markers = leaked / ".recording"
    markers.mkdir()
    (markers / "123-456").write_bytes(b"")
    walk = scrub._files

    def vanishing(home: Path):  # type: ignore[no-untyped-def]
        for path in walk(home):
            if path.parent == markers:
                path.unlink()  # the recorder finished just then
            yield path

    monkeypatch.setattr(scrub, "_files", vanishing)
    result = invoke("redact", "--match", SECRET, "--reason", "leak")
    assert "views rebuilt" in result.stdout
    assert holders(leaked) == [] and list(markers.iterdir()) == []


def test_a_step_failing_after_the_rewrite_says_what_was_done_and_a_rerun_finishes(
    leaked: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk fills once the rewrite has committed: exit 3 (not 1: the log was changed),
    one line saying so; run again, redact finds every copy left (the views, the backup of
    a hand-edited file) though the log no longer holds the text."""
    import sqlite3

    from memlog.projections import runner

    def full(*args: object, **kw: object) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    build = runner._build_database
    monkeypatch.setattr(runner, "_build_database", full)
    result = CliRunner().invoke(cli, ["redact", "--match", SECRET, "--reason", "leak"])
    assert result.exit_code == 3, result.output
    (line,) = result.stderr.splitlines()
    assert line.startswith("Error: the text is out of the log (entry.redacted, seq ")
    assert "rebuilding the views failed: no space left on device while writing memory.db; " in (
        line
    )
    assert "nothing was lost" in line and line.endswith(
        "run the same memlog redact again to finish"
    )
    assert not any(name.startswith("events/") for name in holders(leaked))
    assert set(holders(leaked)) == {
        "memory.db",
        "projects/deploy-tools/patterns.md",
        ".redaction.journal",
    }  # (the journal: what the next command finishes removing)

    monkeypatch.setattr(runner, "_build_database", build)  # the disk has room again
    again = invoke("redact", "--match", SECRET, "--reason", "leak")
    assert again.stdout.startswith("the text was no longer in the log; removed the copies")
    assert "also removed from memory.db and the markdown view (rebuilt)" in again.stdout
    assert holders(leaked) == [] and holders(leaked, SECRET.lower()) == []
    assert "log: clean" in invoke("verify").stdout
    nowhere = CliRunner().invoke(cli, ["redact", "--match", SECRET, "--reason", "leak"])
    assert nowhere.exit_code == 2 and "nowhere in the log, the views or the other files" in (
        nowhere.stderr
    )


def test_a_backup_left_by_a_run_that_stopped_is_found_by_the_next(leaked: Path) -> None:
    """The secret in a backup only (``.edited-….bak``), the log long clean."""
    invoke("redact", "--match", SECRET, "--reason", "leak")
    backup = next(leaked.rglob("*.bak"))
    backup.write_text(backup.read_text() + f"\nagain {SECRET}\n")
    result = invoke("redact", "--match", SECRET, "--reason", "leak")
    assert f"also removed from {backup.relative_to(leaked)}" in result.stdout
    assert holders(leaked) == []


PEM = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "QyNTUxOQAAACDcQ0ir8fVb2nxN5f3m0hyS5sXq3jpQqW1XjRk3xv9EtAAAAJgAAAAAAAAAA\n"
    "-----END OPENSSH PRIVATE KEY-----"
)


def test_a_key_is_found_in_every_copy_whatever_the_whitespace(
    memlog_home: Path, project: Path, tmp_path: Path
) -> None:
    """The markdown view folds the key's newlines into spaces, so its hand-edited backup
    holds the key on one line: redact --from the key file removes that copy too."""
    invoke("observe", "--no-redact", "--name", "Deploy key", "--description",
           "Keep the deploy key out of the repository.", "--reasoning",
           f"The deploy key is\n{PEM}\nkeep it safe.", "--category", "patterns")  # fmt: skip
    view = memlog_home / "projects" / "deploy-tools" / "patterns.md"
    assert "b3BlbnNzaC1rZXktdjEA" in view.read_text()
    view.write_text(view.read_text() + "\nmy own note\n")
    invoke("observe", "--name", "Other", "--description", "Pin the CI image by digest.",
           "--category", "patterns")  # fmt: skip
    backups = list(memlog_home.rglob("*.bak"))
    assert backups and "BEGIN OPENSSH PRIVATE KEY----- b3Bl" in backups[0].read_text()
    key_file = tmp_path / "id_ed25519"
    key_file.write_text(PEM + "\n")
    done = invoke("redact", "--from", str(key_file), "--reason", "a private key")
    assert any(b.name in done.stdout for b in backups)
    body = [line for line in PEM.splitlines() if "-----" not in line]
    for path in memlog_home.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert not any(line.encode() in data for line in body), path
