"""Adopting an iflow global store: a copy of ``knowledge-bank-ab2c282a`` laid out as the
global store in the home, before memlog has written anything."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from memlog.api.adoption import STORE_FILES, pending_store
from memlog.commands.cli import cli
from memlog.eventlog.events import Event, Observed, Promoted
from memlog.eventlog.log import EventLog
from memlog.home import Home
from memlog.hooks.recorder import settled
from memlog.projections.markdown_view.kb_parser import parse_file
from memlog.projections.sqlite_view import queries
from memlog.tests.support import FIXTURES
from memlog.vocabulary import DEFAULT_SPACES

BANK = FIXTURES / "knowledge-bank-ab2c282a"
TITLES = {
    "anti-patterns.md": ("Anti-Patterns", "Anti-Pattern"),
    "heuristics.md": ("Heuristics", "Heuristic"),
    "patterns.md": ("Patterns", "Pattern"),
}
HEADER = (
    "# Global {}\n\nCross-project learnings promoted from retrospectives. Automatically "
    "managed by iflow.\nDo not edit manually — entries are updated during /finish.\n"
)


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def logged(home: Path) -> list[Event]:
    return [r.event for r in EventLog(home).read()]


def lay_out_global_store(home: Path) -> dict[str, tuple[str, str]]:
    """The fixture's entries written in the global store format of spec #023 into ``home``
    (each with its own ``Last observed`` date); returns id -> (name, that date)."""
    home.mkdir(parents=True, exist_ok=True)
    laid: dict[str, tuple[str, str]] = {}
    for name, (title, kind) in TITLES.items():
        parts = [HEADER.format(title)]
        for n, entry in enumerate(parse_file(BANK / name).entries):
            day = f"2026-{1 + n % 9:02d}-{1 + (3 * n) % 27:02d}"
            parts.append(
                f"\n### {kind}: {entry.name}\n{entry.description}\n"
                f"- Content-Hash: sha256:{entry.content_hash}\n"
                f"- Source: ab2c282a, Feature #{n + 1:03d}\n"
                f"- Observation count: {entry.observation_count}\n"
                f"- Last observed: {day}\n- Tags: universal\n- Confidence: {entry.confidence}\n"
            )
            laid.setdefault(entry.content_hash, (entry.name, day))
        (home / name).write_text("".join(parts), encoding="utf-8")
    return laid


@pytest.fixture
def store(memlog_home: Path) -> dict[str, tuple[str, str]]:
    return lay_out_global_store(memlog_home)


def test_the_first_command_adopts_the_store(
    memlog_home: Path, store: dict[str, tuple[str, str]]
) -> None:
    originals = {name: (memlog_home / name).read_bytes() for name in STORE_FILES}
    assert [p.name for p in pending_store(Home(memlog_home))] == list(STORE_FILES)
    result = invoke("stats")
    assert result.exit_code == 0, result.output
    assert f"adopted the iflow global store in {memlog_home}" in result.stderr
    events = logged(memlog_home)
    observed = [e for e in events if isinstance(e, Observed)]
    assert {e.entry_id for e in observed} == set(store)
    assert all(e.source == "import" and e.writer and e.writer.command == "adopt" for e in observed)
    promoted = {e.entry_id for e in events if isinstance(e, Promoted)}
    assert promoted == set(store)
    for entry in queries.entries(Home(memlog_home), vectors=False):
        assert entry.last_observed == store[entry.id][1]
    # nothing the user had is lost: written back as it was (the store is in the spec's own
    # format), or else kept byte for byte beside its file
    for name, data in originals.items():
        backups = list(memlog_home.glob(f"{name}.edited-*.bak"))
        if (memlog_home / name).read_bytes() == data:
            assert backups == []
        else:
            assert [b.read_bytes() for b in backups] == [data]
        assert (memlog_home / name).read_text().startswith(HEADER.format(TITLES[name][0]))
        for entry in parse_file(memlog_home / name).entries:  # each its own date
            assert entry.last_observed == store[entry.content_hash][1]
    rewritten = "".join((memlog_home / name).read_text() for name in STORE_FILES)
    assert all(f": {title}\n" in rewritten for title, _ in store.values())
    assert "- Keywords:" not in rewritten
    again = invoke("stats")
    assert "adopted" not in again.stderr and len(logged(memlog_home)) == len(events)
    assert pending_store(Home(memlog_home)) == []


def test_adopted_lessons_are_found_and_recency_counts_from_last_observed(
    memlog_home: Path, store: dict[str, tuple[str, str]]
) -> None:
    result = invoke("search", "feature worktree stash changes", "--json")
    assert result.exit_code == 0, result.output
    found = json.loads(result.stdout)
    names = [c["name"] for c in found]
    assert "Working in Wrong Worktree" in names
    now = datetime.now(UTC).replace(tzinfo=None)
    for chosen in found:
        day = datetime.fromisoformat(store[chosen["id"]][1])
        expected = 1 / (1 + max((now - day).total_seconds(), 0) / 86400 / 30)
        assert chosen["components"]["recency"] == pytest.approx(expected, abs=1e-3)
        assert chosen["components"]["recency"] < 0.99  # not the time of the import


def test_adoption_comes_before_the_first_write(
    memlog_home: Path, store: dict[str, tuple[str, str]]
) -> None:
    result = invoke("observe", "--name", "New", "--description", "A new lesson", "--category",
                    "patterns")  # fmt: skip
    assert result.exit_code == 0, result.output
    commands = [e.writer.command for e in logged(memlog_home) if e.writer]
    first_other = next(i for i, c in enumerate(commands) if c != "adopt")
    assert set(commands[:first_other]) == {"adopt"} and "observe" in commands[first_other:]
    assert (
        len({e.entry_id for e in logged(memlog_home) if isinstance(e, Observed)}) == len(store) + 1
    )


def test_raw_knowledge_bank_files_in_the_home_are_adopted_as_the_global_store(
    memlog_home: Path,
) -> None:
    memlog_home.mkdir(parents=True)
    for name in STORE_FILES:
        (memlog_home / name).write_bytes((BANK / name).read_bytes())
    assert invoke("stats").exit_code == 0
    events = logged(memlog_home)
    ids = {e.entry_id for e in events if isinstance(e, Observed)}
    assert ids and ids == {e.entry_id for e in events if isinstance(e, Promoted)}


def test_files_memlog_wrote_are_never_adopted(memlog_home: Path) -> None:
    lay_out_global_store(memlog_home)
    assert invoke("stats").exit_code == 0
    for path in (memlog_home / "events").iterdir():
        path.unlink()  # a log lost, the files memlog wrote still there
    assert pending_store(Home(memlog_home)) == []


def test_the_hook_adopts_then_injects(
    memlog_home: Path, store: dict[str, tuple[str, str]], tmp_path: Path
) -> None:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    with (memlog_home / "patterns.md").open("a") as kept:
        kept.write("\n<!-- my own note -->\n")  # rewritten: the original is kept as a backup
    payload = {"session_id": "s-1", "cwd": str(project), "source": "startup"}
    env = {**os.environ, "MEMLOG_HOME": str(memlog_home)}
    done = subprocess.run(
        [sys.executable, "-m", "memlog", "hook", "session-start"], input=json.dumps(payload),
        capture_output=True, text=True, env=env, cwd=project, timeout=60, check=True,
    )  # fmt: skip
    output = json.loads(done.stdout)
    context = output["hookSpecificOutput"]["additionalContext"]
    # the user is told, as the CLI tells it on stderr; a backup kept is no hook error
    told = output["systemMessage"]
    assert f"memlog: adopted the iflow global store in {memlog_home}" in told
    assert "patterns.md was not written by memlog; kept a copy as patterns.md.edited-" in told
    assert not (memlog_home / "hook-errors.log").exists()
    assert settled(Home(memlog_home))
    assert "## Engineering Memory" in context
    injected = [ln[4:].split(": ", 1)[-1] for ln in context.splitlines() if ln.startswith("### ")]
    assert set(injected) & {name for name, _ in store.values()}
    assert any(e.writer and e.writer.command == "adopt" for e in logged(memlog_home))
    # the vectors follow in a detached `memlog reembed`
    space = DEFAULT_SPACES["hashing"]
    deadline = time.monotonic() + 60
    while queries.pending_count(Home(memlog_home), space) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert queries.pending_count(Home(memlog_home), space) == 0


@pytest.mark.slow
def test_two_first_commands_at_once_adopt_once(
    memlog_home: Path, store: dict[str, tuple[str, str]]
) -> None:
    env = {**os.environ, "MEMLOG_HOME": str(memlog_home)}
    runs = [
        subprocess.Popen([sys.executable, "-m", "memlog", "stats"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(3)
    ]  # fmt: skip
    outputs = [run.communicate(timeout=120) for run in runs]
    assert all(run.returncode == 0 for run in runs), outputs
    assert sum("adopted the iflow global store" in err for _, err in outputs) == 1
    observed = [e for e in logged(memlog_home) if isinstance(e, Observed)]
    assert len(observed) == len({e.entry_id for e in observed}) == len(store)
