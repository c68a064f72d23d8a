"""The markdown view's files: a global store is written back as it was; each file shows
every field an entry came with, ``Last observed`` moving only when memlog observes it."""

from __future__ import annotations

from pathlib import Path

import msgspec

from memlog.capture.importer import plan_import
from memlog.eventlog.events import EventBase, Observed, Promoted, content_hash
from memlog.projections.fold import Entry, fold
from memlog.projections.markdown_view import render

STORE_DIR = Path(__file__).parents[2] / "retrieval" / "fixtures" / "memory_py" / "global-store"
HEADER = render.GLOBAL_HEADER.format(title="Heuristics")
#: a heuristics store file in odd but valid shapes: no type prefix, a key in lower case, a
#: confidence in capitals, a line of its own, a value on two lines, no count or date at all
ODD = (
    HEADER + "\n### Measure Before Tuning\nProfile the slow path first.\n"
    "- Content-Hash: sha256:" + content_hash("Profile the slow path first.") + "\n"
    "- Source: ledger, Feature #007\n- observation count: 2\n- Last observed: 2026-02-14\n"
    "- Tags: universal, performance\n- Confidence: High\n- Instead: guess, then measure\n"
    "- Example: a profile of the\n  import path\n"
    "\n### Heuristic: Bare Lesson\nNothing but a header and this line.\n- Source: webapp\n"
)
BARE = "Nothing but a header and this line."
MEASURE = "Profile the slow path first."
DAY = "2026-11-24T10:00:00.000000Z"


def stamped(events: list[EventBase], ts: str = DAY, first: int = 1) -> list[EventBase]:
    return [msgspec.structs.replace(e, ts=ts, seq=first + i) for i, e in enumerate(events)]


def imported(tmp_path: Path, name: str, text: str) -> list[EventBase]:
    path = tmp_path / name
    path.write_text(text)
    return stamped(plan_import([path], {}, None).events)


def entries(events: list[EventBase]) -> list[Entry]:
    return list(fold(events).entries.values())


def by_id(events: list[EventBase], entry_id: str) -> Entry:
    return fold(events).entries[entry_id]


def test_a_store_file_is_written_back_byte_for_byte(tmp_path: Path) -> None:
    for name in ("anti-patterns.md", "patterns.md"):
        text = (STORE_DIR / name).read_text().split("\n<!--")[0]  # the template comment aside
        events = imported(tmp_path, name, text)
        assert render.render_file(name, entries(events)) == text
    events = imported(tmp_path, "heuristics.md", ODD)
    assert render.render_file("heuristics.md", entries(events)) == ODD


def test_the_log_keeps_every_line_an_entry_came_with(tmp_path: Path) -> None:
    events = imported(tmp_path, "heuristics.md", ODD)
    observed = next(e for e in events if isinstance(e, Observed) and e.name.startswith("Measure"))
    assert observed.layout[0] == "Measure Before Tuning"
    assert observed.layout[1:] == tuple(ODD.split("first.\n", 1)[1].split("\n\n")[0].split("\n"))
    assert (observed.count, observed.confidence, observed.last_observed) == (
        2,
        "high",
        "2026-02-14",
    )
    assert observed.details == (
        "Instead: guess, then measure",
        "Example: a profile of the\nimport path",
    )
    assert (observed.project, observed.feature) == ("ledger", "Feature #007")


def test_observed_again_changes_the_count_and_the_date_and_nothing_else(tmp_path: Path) -> None:
    events = imported(tmp_path, "heuristics.md", ODD)
    again = Observed(name="Measure", description=MEASURE, category="heuristics", project="cli-tool")
    events += stamped([again], "2026-12-01T08:00:00.000000Z", len(events) + 1)
    block = render.global_block(by_id(events, content_hash(MEASURE)))
    assert block.splitlines()[2:] == [
        f"- Content-Hash: sha256:{content_hash(MEASURE)}",
        "- Source: ledger, Feature #007; cli-tool",
        "- observation count: 3",
        "- Last observed: 2026-12-01",
        "- Tags: universal, performance",
        "- Confidence: High",
        "- Instead: guess, then measure",
        "- Example: a profile of the",
        "  import path",
    ]
    bare = Observed(name="Bare", description=BARE, category="heuristics", confidence="high")
    events += stamped([bare], "2026-12-02T08:00:00.000000Z", len(events) + 1)
    block = render.global_block(by_id(events, content_hash(BARE)))
    assert block.splitlines()[2:] == [  # what the store never said, once it means something
        "- Source: webapp",
        "- Last observed: 2026-12-02",
        "- Observation count: 2",
        "- Confidence: high",
    ]


def test_a_promotion_moves_no_date(tmp_path: Path) -> None:
    lesson = Observed(name="Pin", description="Pin the parser version.", category="patterns")
    events = stamped([lesson], "2026-03-01T09:00:00.000000Z")
    promote = Promoted(entry_id=lesson.entry_id, reason="seen twice")
    events += stamped([promote], "2026-04-10T09:00:00.000000Z", 2)
    entry = by_id(events, lesson.entry_id)
    assert "- Last observed: 2026-03-01\n" in render.global_block(entry)
    assert "- Last observed: 2026-03-01\n" in render.project_block(entry)
    # an imported project entry keeps the value its file stated
    kb = "# Patterns\n\n### Pattern: Thin\nKeep it thin.\n- Used in: Feature #018\n"
    kb += "- Last observed: Feature #022\n- Observation count: 2\n"
    events = imported(tmp_path, "patterns.md", kb)
    thin = content_hash("Keep it thin.")
    events += stamped([Promoted(entry_id=thin)], "2026-04-10T09:00:00.000000Z", 9)
    block = render.global_block(by_id(events, thin))
    assert "- Last observed: Feature #022\n" in block and "- Used in: Feature #018\n" in block


def test_memlogs_own_fields_stay_out_of_the_global_store() -> None:
    lesson = Observed(
        name="Pin", description="Pin the parser version.", category="patterns",
        keywords=("parser", "pin", "version"), references=("ci.yml",), reasoning="Broke twice.",
    )  # fmt: skip
    events = stamped([lesson, Promoted(entry_id=lesson.entry_id)])
    entry = by_id(events, lesson.entry_id)
    stored = render.global_block(entry)
    assert not any(f"- {k}:" in stored for k in ("Keywords", "References", "Reasoning"))
    mirror = render.project_block(entry)
    assert all(f"- {k}:" in mirror for k in ("Keywords", "References", "Reasoning"))


def test_the_project_file_shows_every_field_of_a_store_entry(tmp_path: Path) -> None:
    events = imported(tmp_path, "heuristics.md", ODD)
    block = render.project_block(by_id(events, content_hash(MEASURE)))
    assert block.startswith("### Measure Before Tuning\nProfile the slow path first.\n")
    for line in ODD.split("first.\n", 1)[1].split("\n\n")[0].split("\n"):
        assert line in block.splitlines()
    bare = render.project_block(by_id(events, content_hash(BARE)))
    assert bare.splitlines()[2:] == [  # the project files show every field
        "- Source: webapp",
        "- Last observed: 2026-11-24",
        "- Observation count: 1",
        "- Confidence: medium",
    ]
