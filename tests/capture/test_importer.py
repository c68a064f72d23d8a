"""Importing iflow knowledge banks: every entry, exact names and counts, idempotent."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from memlog.commands.cli import cli
from memlog.eventlog.events import Observed, Promoted
from memlog.eventlog.log import EventLog
from memlog.home import Home
from memlog.projections.markdown_view.kb_parser import parse_file
from memlog.projections.sqlite_view import store
from memlog.tests.support import FIXTURES  # noqa: E402

BANKS = sorted(FIXTURES.glob("knowledge-bank-*"))
_HEADER = re.compile(r"^### (?:(?:Anti-Pattern|Pattern|Heuristic): )?(.+?)\s*$")
_COUNT = re.compile(r"^- observation count:\s*(\d+)", re.IGNORECASE)


def expected_entries(path: Path) -> list[tuple[str, int]]:
    """(name, stated count) of every ``### `` entry, read independently of the parser."""
    found: list[tuple[str, int]] = []
    text = re.sub(r"<!--.*?-->", "", path.read_text(encoding="utf-8"), flags=re.DOTALL)
    for line in text.splitlines():
        header = _HEADER.match(line)
        if header:
            found.append((header.group(1), 1))
        count = _COUNT.match(line)
        if count and found:
            found[-1] = (found[-1][0], int(count.group(1)))
    return found


def run(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def rows(home: Path) -> list[tuple[str, str, int, str]]:
    db = store.connect(Home(home).db)
    found = db.execute(
        "SELECT name, category, observation_count, origins FROM entries ORDER BY created_seq"
    ).fetchall()
    db.close()
    return found


@pytest.mark.ac("024:8")
@pytest.mark.parametrize("bank", BANKS, ids=lambda p: p.name)
def test_fixture_imports_every_entry_exactly(memlog_home: Path, bank: Path) -> None:
    run("import", str(bank))
    imported = rows(memlog_home)
    expected = [e for f in ("anti-patterns", "heuristics", "patterns")
                for e in expected_entries(bank / f"{f}.md")]  # fmt: skip
    assert len(expected) > 30
    by_name = {}
    for name, _category, count, _origins in imported:
        by_name.setdefault(name, []).append(count)
    for name, count in expected:
        assert count in by_name[name], name
    assert sorted(n for n, *_ in imported) == sorted(n for n, _ in expected)


@pytest.mark.ac("024:8")
@pytest.mark.parametrize("bank", BANKS, ids=lambda p: p.name)
def test_reimport_appends_nothing(memlog_home: Path, bank: Path) -> None:
    run("import", str(bank))
    before = _log_bytes(memlog_home)
    counts = rows(memlog_home)
    out = run("import", str(bank))
    assert "appended 0 events" in out
    assert _log_bytes(memlog_home) == before
    assert rows(memlog_home) == counts


def _log_bytes(home: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted((home / "events").glob("*.jsonl")))


def test_grown_count_is_reflected_not_summed(memlog_home: Path, tmp_path: Path) -> None:
    kb = tmp_path / "proj" / "docs" / "knowledge-bank"
    kb.mkdir(parents=True)
    entry = "### Pattern: Small Steps\nTake small steps.\n- Observation count: {n}\n"
    (kb / "patterns.md").write_text("# Patterns\n\n" + entry.format(n=2))
    run("import", str(tmp_path / "proj"))
    (kb / "patterns.md").write_text("# Patterns\n\n" + entry.format(n=5))
    run("import", str(tmp_path / "proj"))
    run("import", str(tmp_path / "proj"))
    assert [(r[0], r[2]) for r in rows(memlog_home)] == [("Small Steps", 5)]
    db = store.connect(Home(memlog_home).db)
    assert db.execute("SELECT source_project FROM entries").fetchone() == ("proj",)
    db.close()


def test_global_store_entries_are_promoted(memlog_home: Path, tmp_path: Path) -> None:
    store_file = tmp_path / "anti-patterns.md"
    store_file.write_text(
        "# Global Anti-Patterns\n\nCross-project learnings.\n\n"
        "### Anti-Pattern: Guessing Config\nGuessing configuration syntax.\n"
        "- Content-Hash: sha256:0000000000000000\n- Source: proj-a, Feature #023\n"
        "- Observation count: 3\n- Last observed: 2026-02-17\n- Tags: universal\n"
        "- Confidence: high\n"
    )
    run("import", str(store_file))
    text = (memlog_home / "anti-patterns.md").read_text()
    assert "### Anti-Pattern: Guessing Config\nGuessing configuration syntax.\n" in text
    assert "- Source: proj-a, Feature #023\n- Observation count: 3\n" in text
    assert "- Confidence: high\n" in text


def test_malformed_markdown_warns_and_loses_nothing(memlog_home: Path, tmp_path: Path) -> None:
    kb = tmp_path / "docs" / "knowledge-bank"
    kb.mkdir(parents=True)
    (kb / "heuristics.md").write_bytes(
        b"# Heuristics\n\n### No Description\n- Source: x\n\n"
        b"### Twin\nFirst twin.\n\n### Twin\nSecond twin.\n\n"
        b"### Bad Bytes\nBroken \xff\xfe text.\n"
    )
    (kb / "constitution.md").write_text("# Constitution\n")
    result = CliRunner().invoke(cli, ["import", str(kb)])
    assert result.exit_code == 0, result.output
    names = sorted(r[0] for r in rows(memlog_home))
    assert names == ["Bad Bytes", "No Description", "Twin", "Twin"]
    assert "constitution.md" in result.output
    assert "no description" in result.output.lower()


def test_large_file_imports(memlog_home: Path, tmp_path: Path) -> None:
    blocks = [
        f"### Pattern: P{i}\nDescription number {i} " + "x" * 400 + "\n" for i in range(12000)
    ]
    big = tmp_path / "patterns.md"
    big.write_text("# Patterns\n\n" + "\n".join(blocks))
    assert big.stat().st_size > 5_000_000
    run("import", str(big))
    assert len(rows(memlog_home)) == 12000


def test_a_global_store_file_keeps_every_field_in_both_views(memlog_home: Path) -> None:
    """``Last observed``, ``Source``, ``Tags`` and the rest, as the store file had them: in the
    global view (written back as it was) and in the project view of each entry."""
    store_file = (
        Path(__file__).parents[1] / "retrieval/fixtures/memory_py/global-store/anti-patterns.md"
    )
    run("import", str(store_file))
    assert (memlog_home / "anti-patterns.md").read_bytes() == store_file.read_bytes()
    events = [r.event for r in EventLog(memlog_home).read()]
    promoted = {e.entry_id: e.ts for e in events if isinstance(e, Promoted)}
    for entry in parse_file(store_file).entries:
        assert promoted[entry.content_hash]  # the promotion has a time of its own
        project = entry.metadata[1][1].split(",")[0]  # Source: project, Feature #NNN
        mirrored = parse_file(memlog_home / "projects" / project / "anti-patterns.md")
        (same,) = [e for e in mirrored.entries if e.content_hash == entry.content_hash]
        assert same.last_observed == entry.last_observed and same.last_observed.startswith(
            "2026-02"
        )
        assert set(entry.metadata) <= set(same.metadata)  # Source, Tags, Content-Hash too
        shown = run("show", entry.content_hash)
        assert f"\nlast_observed: {entry.last_observed}\n" in shown
    observed = [e for e in events if isinstance(e, Observed)]
    assert all(e.layout and e.layout[0].startswith("Anti-Pattern: ") for e in observed)
