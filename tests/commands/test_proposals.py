"""Maintenance proposes retiring the lessons that do not earn their place; a person confirms
or dismisses; nothing is retired silently."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from memlog.commands.cli import cli
from memlog.eventlog.events import Influenced, Observed, Proposed, Retired, content_hash
from memlog.eventlog.log import EventLog

NEVER = "Always wrap every call in a retry decorator."
OFTEN = "Read real sample files before writing a parser."
GONE = "The importer's entry point is `src/importer.py`; keep it thin."


def judged(entry: str, applied: int, of: int) -> list[Influenced]:
    return [
        Influenced(entry_id=content_hash(entry), session_id=f"s{n}", source="extraction",
                   verdict="applied" if n < applied else "not used")
        for n in range(of)
    ]  # fmt: skip


@pytest.fixture
def shop(tmp_path: Path, memlog_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "shop"
    (root / "src").mkdir(parents=True)
    (root / "src" / "other.py").write_text("x = 1\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "one"]):
        subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t",
                        *args], check=True, capture_output=True)  # fmt: skip
    EventLog(memlog_home).append([
        Observed(name="Retry all", description=NEVER, category="heuristics", project="shop"),
        Observed(name="Real samples", description=OFTEN, category="patterns", project="shop"),
        Observed(name="Thin importer", description=GONE, category="patterns", project="shop"),
        *judged(NEVER, 0, 12), *judged(OFTEN, 3, 12),
    ])  # fmt: skip
    monkeypatch.chdir(root)
    return root


def run(*args: str) -> dict[str, list[dict[str, str]]]:
    done = CliRunner().invoke(cli, ["maintenance", *args, "--json"])
    assert done.exit_code == 0, done.output
    found: dict[str, list[dict[str, str]]] = json.loads(done.output)
    return found


def test_proposals_are_made_listed_and_decided_by_a_person(shop: Path, memlog_home: Path) -> None:
    made = run("--propose")["proposed"]
    assert sorted((p["id"], p["kind"]) for p in made) == sorted(
        [(content_hash(NEVER), "unused"), (content_hash(GONE), "stale")])  # fmt: skip
    reasons = {p["kind"]: p["reason"] for p in made}
    assert reasons["unused"] == "given and judged in 12 sessions, applied in none"
    assert reasons["stale"] == "refers to src/importer.py, gone from shop"
    assert run("--propose")["proposed"] == []  # nothing proposed twice
    awaiting = run("--proposals")["awaiting"]
    assert [a["name"] for a in awaiting] == ["Retry all", "Thin importer"]
    shown = CliRunner().invoke(cli, ["show", content_hash(NEVER)]).output
    assert "use: applied in 0 of 12 sessions" in shown and "proposed: retire (unused:" in shown
    kept = run("--dismiss", content_hash(NEVER)[:8])["kept"]
    assert [k["name"] for k in kept] == ["Retry all"]
    retired = run("--confirm", content_hash(GONE))["retired"]
    assert [r["name"] for r in retired] == ["Thin importer"]
    assert run("--propose")["proposed"] == []  # a dismissed kind is never proposed again
    events = [r.event for r in EventLog(memlog_home).read()]
    (retirement,) = [e for e in events if isinstance(e, Retired)]
    assert retirement.entry_id == content_hash(GONE)
    assert (
        retirement.reason
        == "proposed and confirmed: stale: refers to src/importer.py, gone from shop"
    )
    assert [e.dismissed for e in events if isinstance(e, Proposed)] == [False, False, True]
    assert run("--proposals")["awaiting"] == []


def test_a_lesson_without_a_proposal_is_not_confirmed(shop: Path) -> None:
    done = CliRunner().invoke(cli, ["maintenance", "--confirm", content_hash(OFTEN)])
    assert done.exit_code == 2 and "has no proposal awaiting a decision" in done.output


def test_the_weekly_maintenance_proposes(
    shop: Path, memlog_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMLOG_EXTRACTION_PROVIDER", "off")
    done = CliRunner().invoke(cli, ["maintenance", "--weekly", "--json"])
    assert done.exit_code == 0, done.output
    (weekly,) = json.loads(done.output)
    assert "proposed retiring 2 lessons" in weekly["notes"]
    assert len(run("--proposals")["awaiting"]) == 2
