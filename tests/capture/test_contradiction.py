"""Contradictions, on lessons written against real entries of the fixtures' banks: the cheap
check tells them apart, a new lesson supersedes the held one it contradicts (with an audit
naming both and why), and no block ever carries two lessons that contradict each other."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memlog.api import capturing
from memlog.api.recall import inject
from memlog.capture.pipeline import settle
from memlog.config import Config
from memlog.eventlog.events import MemoryEvolved, Observed, Superseded, content_hash
from memlog.eventlog.log import EventLog
from memlog.projections import stance as contradiction
from memlog.projections.markdown_view.kb_parser import ParsedEntry, parse_file
from memlog.tests.support import FIXTURES, REPO
from memlog.workspace import Workspace

PAIRS = json.loads((REPO / "tests" / "capture" / "fixtures" / "contradictions.json").read_text())
BANKS = ("knowledge-bank-08a38d02", "knowledge-bank-6bb5ea25", "knowledge-bank-ab2c282a")


def bank(name: str) -> dict[str, ParsedEntry]:
    return {
        e.name: e for p in sorted((FIXTURES / name).glob("*.md")) for e in parse_file(p).entries
    }


def real(pair: dict[str, Any]) -> ParsedEntry:
    return bank(pair["bank"])[pair["name"]]


def verdicts() -> list[tuple[str, bool]]:
    found = []
    for pair in PAIRS["pairs"]:
        held, new = real(pair), pair["counterpart"]
        a = contradiction.stance(held.name, held.description, held.category)
        b = contradiction.stance(new["name"], new["description"], new["category"])
        found.append((pair["kind"], contradiction.contradicts(a, b)))
    return found


def test_the_check_tells_contradictions_from_conditions_and_restatements() -> None:
    found = verdicts()
    said = {kind: sum(v for k, v in found if k == kind) for kind in ("contradicts", "conditional",
                                                                      "same")}  # fmt: skip
    total = {kind: sum(1 for k, _ in found if k == kind) for kind in said}
    assert total == {"contradicts": 19, "conditional": 8, "same": 9}
    assert said == {"contradicts": 19, "conditional": 1, "same": 0}  # "two" against "multiple"


def test_a_real_bank_holds_one_false_alarm_among_all_its_pairs() -> None:
    flagged = []
    for name in BANKS:
        entries = list(bank(name).values())
        stances = [contradiction.stance(e.name, e.description, e.category) for e in entries]
        flagged += [(entries[i].name, entries[j].name)
                    for i in range(len(entries)) for j in range(i + 1, len(entries))
                    if contradiction.contradicts(stances[i], stances[j])]  # fmt: skip
    # an anti-pattern (continuing reviews after approval) and a heuristic (when to force an
    # approval) that agree, read as opposite stances on one topic
    assert flagged == [("Post-Approval Informational Iterations",
                        "Force-Approve Correctness Criteria")]  # fmt: skip


def held_events(pairs: list[dict[str, Any]]) -> list[Observed]:
    """The real entries the pairs were written against, as a bank's import records them."""
    seen: dict[str, Observed] = {}
    for pair in pairs:
        e = real(pair)
        seen[e.name] = Observed(name=e.name, description=e.description, category=e.category,
                                project="shop", source="import", count=1)  # fmt: skip
    return list(seen.values())


def observe(ws: Workspace, pair: dict[str, Any]) -> list[str]:
    fields = {**pair["counterpart"], "project": "shop"}
    return capturing.observe(ws, [capturing.observation(fields)], command="observe").notes


def test_a_new_lesson_supersedes_the_held_lesson_it_contradicts(
    memlog_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the local model's vectors: each new lesson is checked against the held lessons
    nearest to it (cosine 0.7 or more); one that says the opposite replaces the older, with a
    memory.evolved naming both and why; a restatement or a conditional replaces nothing."""
    monkeypatch.setenv("MEMLOG_EMBEDDING_PROVIDER", "local")
    root = tmp_path / "shop"
    (root / ".git").mkdir(parents=True)
    ws = Workspace.open(root, home=memlog_home)
    EventLog(memlog_home).append(held_events(PAIRS["pairs"]))
    settle(ws, [e.entry_id for e in held_events(PAIRS["pairs"])])  # their vectors
    for pair in PAIRS["pairs"]:
        observe(ws, pair)
    events = [r.event for r in EventLog(memlog_home).read()]
    superseded = {e.entry_id: e for e in events if isinstance(e, Superseded)}
    audits = [e for e in events if isinstance(e, MemoryEvolved) and e.mode == "contradiction"]
    named = {(op.entry_id, op.by) for a in audits for op in a.operations}
    replaced = 0
    for pair in PAIRS["pairs"]:
        old, new = content_hash(real(pair).description), content_hash(
            pair["counterpart"]["description"])  # fmt: skip
        if pair["kind"] != "contradicts":
            assert superseded.get(old) is None or superseded[old].by != new, pair["counterpart"]
            continue
        if old in superseded and superseded[old].by == new:
            replaced += 1
            assert (old, new) in named
            assert superseded[old].reason.startswith("contradicted by the newer lesson")
    # of 19: those whose vectors are near enough to be compared (three lie below 0.7); a
    # restatement observed after a contradiction supersedes that contradiction in turn
    assert replaced >= 15


def test_no_block_carries_two_lessons_that_contradict(memlog_home: Path, tmp_path: Path) -> None:
    """Every pair held at once (no supersede: imported side by side), every lesson chosen: the
    block never carries both lessons of a contradicting pair, and says why it left one out."""
    root = tmp_path / "shop"
    (root / ".claude").mkdir(parents=True)
    (root / ".claude" / "iflow-dev.local.md").write_text("---\nmemory_injection_limit: -1\n---\n")
    counterparts = [
        Observed(name=p["counterpart"]["name"], description=p["counterpart"]["description"],
                 category=p["counterpart"]["category"], project="shop", source="import", count=1)
        for p in PAIRS["pairs"]
    ]  # fmt: skip
    EventLog(memlog_home).append([*held_events(PAIRS["pairs"]), *counterparts])
    ws = Workspace.open(root, home=memlog_home)
    ws = Workspace(ws.home, ws.root, Config(memory_embedding_provider="hashing",
                                            memory_injection_limit=-1))  # fmt: skip
    result = inject(ws)
    chosen = {c.id for c in result.chosen}
    why = {o.id: o.reason for o in result.left_out}
    for pair in PAIRS["pairs"]:
        if pair["kind"] != "contradicts":
            continue
        old, new = content_hash(real(pair).description), content_hash(
            pair["counterpart"]["description"])  # fmt: skip
        dropped = {old, new} - chosen
        assert dropped, pair["name"]  # never both (the newer stays, unless a newer lesson
        # still, a restatement of the older, said the opposite of it in turn)
        assert all(
            why[d].startswith("contradicted by a newer lesson in the block") for d in dropped
        )
