"""What reaches a session, once: the start's block passes over what the session holds
(a CLAUDE.md, Claude Code's auto memory, the Branch Memory block, what it received), and
a prompt's recall gives a few entries past the relevance floor, or nothing."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from memlog import claude_files
from memlog.api import recall
from memlog.eventlog.devices import device_id
from memlog.eventlog.events import Observed, Promoted, Recalled
from memlog.eventlog.log import EventLog
from memlog.home import Home
from memlog.retrieval import in_context, received
from memlog.retrieval.budget import size
from memlog.tests.retrieval.helpers import entry, filler, seed
from memlog.workspace import Workspace

CSV = "Open every user-supplied CSV file with encoding utf-8-sig."
BOM = "Excel exports start with a BOM that sticks to the first header."
PIN = "Pin every tool version in CI so a release builds the same way twice."
LOCK = "Take the lock file's hash into the cache key of dependency installs in CI."
NEW = "Run the migrations of a release on a copy of production data first."


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), "-c", "user.email=t@t", "-c", "user.name=t", *args],
                   check=True, capture_output=True)  # fmt: skip


@pytest.fixture
def shop(tmp_path: Path, memlog_home: Path) -> Path:
    """A repository on feature/x whose branch memory holds CSV and BOM, in a home that also
    holds lessons of its own."""
    root = tmp_path / "shop"
    root.mkdir()
    git(root, "init", "-q", "-b", "feature/x")
    git(root, "commit", "-q", "--allow-empty", "-m", "start")
    seed(
        memlog_home,
        entry("CSV encoding", CSV, "patterns", project="shop", section="conventions",
              branch="feature/x"),
        entry("BOM header", BOM, "anti-patterns", project="shop", section="bug-patterns",
              branch="feature/x"),
        entry("Pin versions", PIN, "patterns"), entry("Cache on the lock", LOCK, "heuristics"),
        filler(4, "patterns"), filler(4, "heuristics"), filler(4, "anti-patterns"),
    )  # fmt: skip
    return root


def start(root: Path, home: Path, session: str = "", trigger: str = "startup") -> recall.Injection:
    ws = Workspace.open(root, home=home)
    return recall.for_hook(ws, time.monotonic() + 30, session, keep=lambda _: None,
                           trigger=trigger, cwd=str(root))  # fmt: skip


def test_a_branch_lesson_arrives_once_in_the_branch_memory_block(
    shop: Path, memlog_home: Path
) -> None:
    result = start(shop, memlog_home)
    assert result.text.count(CSV) == 1 and result.text.count(BOM) == 1
    engineering, branch = result.text.split("## Branch Memory (auto-extracted)")
    assert CSV not in engineering and PIN in engineering
    ids = {Observed(name="x", description=d, category="patterns").entry_id for d in (CSV, BOM)}
    assert set(result.branch_ids) == ids


def test_another_branchs_memory_is_not_given(shop: Path, memlog_home: Path) -> None:
    git(shop, "checkout", "-q", "-b", "main")
    result = start(shop, memlog_home)
    assert CSV not in result.text and BOM not in result.text and "Branch Memory" not in result.text
    csv_id = Observed(name="x", description=CSV, category="patterns").entry_id
    EventLog(memlog_home).append([Promoted(entry_id=csv_id, reason="universal")])
    assert start(shop, memlog_home).text.count(CSV) == 1  # promoted: a lesson for all


def test_what_a_claude_md_holds_is_not_given_again(shop: Path, memlog_home: Path) -> None:
    (shop / "CLAUDE.md").write_text(
        f"# Shop\n\n<!-- memlog:branch-memory:start -->\n- {CSV}\n<!-- end -->\n\n{PIN}\n"
    )
    result = start(shop, memlog_home)
    assert CSV not in result.text and PIN not in result.text and BOM in result.text
    ws = Workspace.open(shop, home=memlog_home)
    page = recall.preview(ws, recall.Request.interactive(ws))
    reasons = {o.name: o.reason for o in page.left_out}
    assert reasons["Pin versions"] == in_context.IN_CLAUDE_MD


def test_a_resumed_session_is_not_given_what_it_received(shop: Path, memlog_home: Path) -> None:
    first = start(shop, memlog_home, "s1")
    assert PIN in first.text
    resumed = start(shop, memlog_home, "s1", "resume")
    assert resumed.text == "" and not resumed.chosen  # its transcript still holds them all
    EventLog(memlog_home).append([Observed(name="New", description=NEW, category="patterns")])
    again = start(shop, memlog_home, "s1", "resume")
    assert [c.name for c in again.chosen] == ["New"] and PIN not in again.text
    compacted = start(shop, memlog_home, "s1", "compact")  # the context was summarised
    assert PIN in compacted.text and CSV in compacted.text
    other = start(shop, memlog_home, "s2")
    assert PIN in other.text


def test_a_resumed_session_is_not_given_what_the_budget_left_out_of_its_start(
    tmp_path: Path, memlog_home: Path
) -> None:
    """The limit chose more than the budget holds: a fresh start gives what fits, and a
    resume, less what the session received, gives nothing (not the entries the budget
    left out at the start, which no fresh start would give either)."""
    root = tmp_path / "project"
    (root / ".claude").mkdir(parents=True)
    (root / ".claude" / "iflow-dev.local.md").write_text(
        "---\nmemory_injection_max_chars: 1500\nmemory_injection_limit: 20\n---\n"
    )
    seed(memlog_home, filler(10, "patterns"), filler(10, "heuristics"))
    first = start(root, memlog_home, "s1")
    assert first.chosen and any(o.reason == recall.NO_ROOM for o in first.left_out)
    resumed = start(root, memlog_home, "s1", "resume")
    assert resumed.text == "" and not resumed.chosen
    fresh = start(root, memlog_home, "s2")
    assert {c.id for c in fresh.chosen} == {c.id for c in first.chosen}


def test_the_auto_memory_claude_code_loads_is_not_given_again(
    shop: Path, memlog_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = claude_files.memory_folder(str(shop))
    device = device_id(Home(memlog_home))
    native = Observed(
        name="pin-versions", description="Pin versions of every CI tool", category="heuristics",
        source="claude-code", origin=claude_files.origin(device, folder / "pin.md"),
        reasoning="A release must build the same way twice.",
    )  # fmt: skip
    elsewhere = Observed(
        name="other-project", description="Name test files after the module they test",
        category="heuristics", source="claude-code",
        origin=claude_files.origin(device, tmp_path / "elsewhere" / "memory" / "n.md"),
    )  # fmt: skip
    EventLog(memlog_home).append([native, elsewhere])
    ws = Workspace.open(shop, home=memlog_home)
    found = recall.inject(ws, limit=-1)
    assert "Pin versions of every CI tool" not in found.text  # MEMORY.md lists it already
    assert "Name test files after the module" in found.text  # another project's: ranked here
    monkeypatch.setenv("CLAUDE_CODE_DISABLE_AUTO_MEMORY", "1")
    assert "Pin versions of every CI tool" in recall.inject(ws, limit=-1).text


# -- recall at the prompt ----------------------------------------------------------------------


def prompt(root: Path, home: Path, text: str, session: str = "s1") -> recall.Injection:
    ws = Workspace.open(root, home=home)

    def keep(r: recall.Recall) -> None:
        event = Recalled(ids=tuple(r.ids), session_id=r.session_id, trigger=r.trigger)
        EventLog(home).append([event])

    return recall.for_prompt(ws, text, time.monotonic() + 30, session, str(root), keep=keep)


def test_a_prompt_on_a_remembered_topic_recalls_it(shop: Path, memlog_home: Path) -> None:
    found = prompt(
        shop, memlog_home, "how should the CI cache key for dependency installs be built?"
    )
    assert [c.name for c in found.chosen][:1] == ["Cache on the lock"]
    assert found.text.startswith("## Engineering Memory (recalled for this prompt)")
    assert size(found.text) <= 2500 and len(found.chosen) <= 3
    assert all(c.components["relevance"] >= 0.2 for c in found.chosen)
    (event,) = [r.event for r in EventLog(memlog_home).read() if isinstance(r.event, Recalled)]
    assert event.trigger == "prompt" and event.session_id == "s1"
    again = prompt(shop, memlog_home, "and the CI cache key for dependency installs, again?")
    assert LOCK not in again.text  # never one the session already received


def test_an_unrelated_or_empty_prompt_recalls_nothing(shop: Path, memlog_home: Path) -> None:
    for text in ("What is the weather like in Paris this weekend?", "yes", "", "go on then"):
        found = prompt(shop, memlog_home, text)
        assert found.text == "" and not found.chosen, text
    assert not [r for r in EventLog(memlog_home).read() if isinstance(r.event, Recalled)]
    assert received.received(Home(memlog_home), "s1") == set()


def test_the_start_block_is_not_recalled_again_at_the_prompt(shop: Path, memlog_home: Path) -> None:
    first = start(shop, memlog_home, "s1")
    assert LOCK in first.text
    found = prompt(
        shop, memlog_home, "how should the CI cache key for dependency installs be built?"
    )
    assert LOCK not in found.text


def test_the_floor_is_the_configured_one(shop: Path, memlog_home: Path) -> None:
    (shop / ".claude").mkdir()
    (shop / ".claude" / "iflow-dev.local.md").write_text("---\nmemory_relevance_floor: 1\n---\n")
    found = prompt(
        shop, memlog_home, "how should the CI cache key for dependency installs be built?"
    )
    assert found.text == ""
    assert json.dumps(found.notes) == "[]"
