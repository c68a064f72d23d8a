"""The #023 markdown pipeline: memory.py's parse, dedup, priority sort, min-3 fill, the block."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from memlog.eventlog.events import Confidence
from memlog.home import Home
from memlog.projections.markdown_view.kb_parser import KbCategory, content_hash, parse_file
from memlog.retrieval.legacy import (
    LegacyEntry,
    allocate,
    deduplicate,
    parse_legacy,
    read_markdown_sources,
    render_legacy_block,
    select_legacy,
    sort_into_categories,
)
from memlog.tests.support import FIXTURES  # noqa: E402
from memlog.vocabulary import KB_CATEGORIES, SECTION_TITLES

NEW = FIXTURES / "knowledge-bank-6bb5ea25"


def entry(
    name: str,
    category: KbCategory = "anti-patterns",
    *,
    count: int = 1,
    confidence: Confidence = "medium",
    last_observed: str | None = None,
    position: int = 1,
    is_global: bool = False,
    description: str | None = None,
) -> LegacyEntry:
    text = f"{name} description." if description is None else description
    return LegacyEntry(
        name=name,
        header=f"### {name}",
        description=text,
        metadata="",
        category=category,
        observation_count=count,
        confidence=confidence,
        last_observed=last_observed,
        position=position,
        content_hash=content_hash(text),
        is_global=is_global,
    )


def names(entries: list[LegacyEntry]) -> list[str]:
    return [e.name for e in entries]


# --- sorting ----------------------------------------------------------------


def test_sort_by_count_then_confidence() -> None:
    pool = [
        entry("low-3", count=3, confidence="low"),
        entry("med-1", count=1),
        entry("high-1", count=1, confidence="high"),
        entry("high-3", count=3, confidence="high"),
        entry("med-3", count=3),
    ]
    ordered = sort_into_categories(pool)["anti-patterns"]
    assert names(ordered) == ["high-3", "med-3", "low-3", "high-1", "med-1"]


def test_local_recency_is_file_position_descending() -> None:
    pool = [entry("first", position=1), entry("third", position=3), entry("second", position=2)]
    assert names(sort_into_categories(pool)["anti-patterns"]) == ["third", "second", "first"]


def test_global_recency_is_last_observed_date_descending() -> None:
    pool = [
        entry("jan", last_observed="2026-01-05", position=2, is_global=True),
        entry("mar", last_observed="2026-03-01T08:00:00Z", position=0, is_global=True),
        entry("feb", last_observed="2026-02-10", position=1, is_global=True),
    ]
    assert names(sort_into_categories(pool)["anti-patterns"]) == ["mar", "feb", "jan"]


def test_dated_entries_rank_before_undated_on_a_tie() -> None:
    pool = [
        entry("local-late", position=9, last_observed="Feature #022"),
        entry("global", last_observed="2026-01-01", is_global=True),
    ]
    assert names(sort_into_categories(pool)["anti-patterns"]) == ["global", "local-late"]


def test_count_beats_recency() -> None:
    pool = [entry("new", position=5, last_observed="2026-12-31"), entry("old", count=2)]
    assert names(sort_into_categories(pool)["anti-patterns"]) == ["old", "new"]


# --- deduplication ----------------------------------------------------------


def test_dedup_keeps_the_higher_count() -> None:
    local = [entry("local", count=1, description="Same text.")]
    global_ = [entry("global", count=3, description="  same   TEXT. ", is_global=True)]
    assert names(select_legacy(local, global_, 20)) == ["global"]
    local = [entry("local", count=4, description="Same text.")]
    assert names(select_legacy(local, global_, 20)) == ["local"]


def test_dedup_tie_keeps_local() -> None:
    local = [entry("local", count=2, description="Same text.")]
    global_ = [entry("global", count=2, description="Same text.", is_global=True)]
    assert names(select_legacy(local, global_, 20)) == ["local"]


def test_empty_descriptions_share_one_hash_as_in_memory_py() -> None:
    pool = [entry("a", description=""), entry("b", description="", is_global=True)]
    assert names(deduplicate(pool)) == ["a"]
    pool.append(entry("c", description="", count=2))
    assert names(deduplicate(pool)) == ["c"]


# --- allocation -------------------------------------------------------------


def sizes(ap: int, h: int, p: int) -> dict[KbCategory, int]:
    return {"anti-patterns": ap, "heuristics": h, "patterns": p}


@pytest.mark.parametrize(
    ("available", "limit", "expected"),
    [
        # 9 >= 3*3: three each, the 10th to anti-patterns (priority fill)
        (sizes(5, 4, 4), 10, sizes(4, 3, 3)),
        # exactly 3 per category
        (sizes(5, 4, 4), 9, sizes(3, 3, 3)),
        # 8 < 9: pure priority, anti-patterns first, then heuristics
        (sizes(5, 4, 4), 8, sizes(5, 3, 0)),
        (sizes(5, 4, 4), 5, sizes(5, 0, 0)),
        # a small category gives what it has; overflow goes by priority
        (sizes(1, 5, 5), 9, sizes(1, 5, 3)),
        # two non-empty categories: the minimum needs only 6
        (sizes(0, 4, 4), 6, sizes(0, 3, 3)),
        (sizes(0, 4, 4), 5, sizes(0, 4, 1)),
        # the 15-anti-pattern example of the spec: breadth kept
        (sizes(15, 4, 4), 20, sizes(14, 3, 3)),
        # limit above the total takes everything; 0 nothing; -1 all
        (sizes(2, 1, 1), 20, sizes(2, 1, 1)),
        (sizes(2, 1, 1), 0, sizes(0, 0, 0)),
        (sizes(5, 4, 4), -1, sizes(5, 4, 4)),
        (sizes(0, 0, 0), 20, sizes(0, 0, 0)),
    ],
)
def test_allocate(
    available: dict[KbCategory, int], limit: int, expected: dict[KbCategory, int]
) -> None:
    assert allocate(available, limit) == expected


def test_select_applies_minimum_to_the_best_of_each_category() -> None:
    local = [entry(f"ap{i}", count=10 - i, position=i) for i in range(6)]
    local += [entry(f"h{i}", "heuristics", count=5 - i, position=i) for i in range(4)]
    local += [entry(f"p{i}", "patterns", position=i) for i in range(4)]
    picked = select_legacy(local, [], 10)
    assert names(picked) == ["ap0", "ap1", "ap2", "ap3", "h0", "h1", "h2", "p3", "p2", "p1"]


def test_limit_zero_and_all() -> None:
    local = [entry("a"), entry("b", "patterns")]
    assert select_legacy(local, [], 0) == []
    assert names(select_legacy(local, [], -1)) == ["a", "b"]


# --- the whole pipeline on the real knowledge bank --------------------------


def test_new_fixture_with_default_limit() -> None:
    local = [e for name in KB_CATEGORIES
             for e in parse_legacy((NEW / f"{name}.md").read_text(), name)]  # fmt: skip
    picked = select_legacy(local, [], 20)
    assert names(picked) == [
        # anti-patterns: count 2 by position desc, high-confidence 1s, then the rest
        "Parser Against Assumed Format",
        "Bash Variable Interpolation in Inline Python",
        "Frozen Artifact Contradictions",
        "Line Number References in Sequential Tasks",
        "Implementation Reviewer Flagging Pre-Existing Code as Blockers",
        "Specifying a Parser Without a Complete Round-Trip Example",
        "Post-Approval Informational Iterations",
        "Dual-Representation Dependency Graphs",
        'Skipping Workflow for "Simple" Tasks',
        "Relative Paths in Hooks",
        "Over-Granular Tasks",
        "Working in Wrong Worktree",
        # heuristics: 3 minimum + the 2 slots anti-patterns left over
        "Reviewer Iteration Count as Complexity Signal",
        "Circuit Breaker Hits as Assumption Signals",
        "Read Target Files During Task Creation",
        "Line Budget Management",
        "Expect Extra Task Review Iterations When Plan Leaves Format Details Ambiguous",
        # patterns: the minimum 3, high confidence first, newest first
        "Skeptic Design Reviewer Catches Feasibility Blockers Early",
        "Heavy Upfront Review Investment",
        "Detailed Rebuttals With Line-Number Evidence Resolve False Positives",
    ]


# --- rendering --------------------------------------------------------------

DESIGN_BLOCK = """## Engineering Memory (from knowledge bank)

### Anti-Patterns to Avoid
### Anti-Pattern: Working in Wrong Worktree
Making changes in main worktree when a feature worktree exists.
- Observed in: Feature #002
- Cost: Had to stash, move changes, re-apply in correct worktree

### Heuristics
### Line Budget Management
Target 90-95% of SKILL.md budget (450-475 of 500 lines).
- Source: Feature #018

### Patterns to Follow
### Pattern: Thin Orchestrator
Keep SKILL.md as a thin orchestrator that delegates to reference files.
- Used in: Feature #018

---"""


def test_render_matches_the_design_output() -> None:
    files = {
        "anti-patterns.md": DESIGN_BLOCK.split("\n")[3:7],
        "heuristics.md": DESIGN_BLOCK.split("\n")[9:12],
        "patterns.md": DESIGN_BLOCK.split("\n")[14:17],
    }
    local: list[LegacyEntry] = []
    for name, lines in reversed(files.items()):  # input order does not matter
        text = "# Title\n\n## Section\n\n" + "\n".join(lines) + "\n\n<!-- example -->\n"
        local += parse_legacy(text, name.removesuffix(".md"))  # type: ignore[arg-type]
    assert render_legacy_block(select_legacy(local, [], 20)) == DESIGN_BLOCK


def test_render_skips_empty_sections_and_nothing_renders_empty() -> None:
    block = render_legacy_block([entry("only", "heuristics")])
    assert block == (
        "## Engineering Memory (from knowledge bank)\n\n"
        "### Heuristics\n### only\nonly description.\n\n---"
    )
    assert render_legacy_block([]) == ""


# --- memory.py's exact order (regression of failure 4 of issue 12) ---------------------------

_TITLES = {"anti-patterns": "Anti-Patterns", "heuristics": "Heuristics", "patterns": "Patterns"}
_TYPES = {"anti-patterns": "Anti-Pattern", "heuristics": "Heuristic", "patterns": "Pattern"}


def duplicating_global_store(folder: Path) -> None:
    """A global store holding every third project entry (up to 4 per category) at a higher
    count, and two entries of its own, all equal in count, confidence and ``Last observed``:
    only the order entries were first seen in can tell them apart."""
    for category in KB_CATEGORIES:
        picked = parse_file(NEW / f"{category}.md").entries[::3][:4]
        blocks = [(e.name, e.description) for e in picked]
        blocks += [(f"Global {category} {i}", f"A global-only {category} lesson {i}.")
                   for i in range(2)]  # fmt: skip
        text = f"# Global {_TITLES[category]}\n\nCross-project learnings.\n"
        for name, description in reversed(blocks):
            text += (
                f"\n### {_TYPES[category]}: {name}\n{description}\n- Observation count: 3\n"
                "- Last observed: 2026-01-15\n- Tags: universal\n- Confidence: medium\n"
            )
        (folder / f"{category}.md").write_text(text)


#: the headers memlog prints, exactly as iflow's memory.py printed them for the same files
MEMORY_PY: dict[tuple[str, int], list[str]] = {
    ("empty", 20): [
        "Anti-Pattern: Parser Against Assumed Format",
        "Anti-Pattern: Bash Variable Interpolation in Inline Python",
        "Anti-Pattern: Frozen Artifact Contradictions",
        "Anti-Pattern: Line Number References in Sequential Tasks",
        "Anti-Pattern: Implementation Reviewer Flagging Pre-Existing Code as Blockers",
        "Anti-Pattern: Specifying a Parser Without a Complete Round-Trip Example",
        "Anti-Pattern: Post-Approval Informational Iterations",
        "Anti-Pattern: Dual-Representation Dependency Graphs",
        'Anti-Pattern: Skipping Workflow for "Simple" Tasks',
        "Anti-Pattern: Relative Paths in Hooks",
        "Anti-Pattern: Over-Granular Tasks",
        "Anti-Pattern: Working in Wrong Worktree",
        "Reviewer Iteration Count as Complexity Signal",
        "Circuit Breaker Hits as Assumption Signals",
        "Read Target Files During Task Creation",
        "Line Budget Management",
        "Expect Extra Task Review Iterations When Plan Leaves Format Details Ambiguous",
        "Pattern: Skeptic Design Reviewer Catches Feasibility Blockers Early",
        "Pattern: Heavy Upfront Review Investment",
        "Pattern: Detailed Rebuttals With Line-Number Evidence Resolve False Positives",
    ],
    ("empty", 9): [
        "Anti-Pattern: Parser Against Assumed Format",
        "Anti-Pattern: Bash Variable Interpolation in Inline Python",
        "Anti-Pattern: Frozen Artifact Contradictions",
        "Reviewer Iteration Count as Complexity Signal",
        "Circuit Breaker Hits as Assumption Signals",
        "Read Target Files During Task Creation",
        "Pattern: Skeptic Design Reviewer Catches Feasibility Blockers Early",
        "Pattern: Heavy Upfront Review Investment",
        "Pattern: Detailed Rebuttals With Line-Number Evidence Resolve False Positives",
    ],
    ("empty", 5): [
        "Anti-Pattern: Parser Against Assumed Format",
        "Anti-Pattern: Bash Variable Interpolation in Inline Python",
        "Anti-Pattern: Frozen Artifact Contradictions",
        "Anti-Pattern: Line Number References in Sequential Tasks",
        "Anti-Pattern: Implementation Reviewer Flagging Pre-Existing Code as Blockers",
    ],
    ("duplicating", 20): [
        "Anti-Pattern: Working in Wrong Worktree",
        'Anti-Pattern: Skipping Workflow for "Simple" Tasks',
        "Anti-Pattern: Dual-Representation Dependency Graphs",
        "Anti-Pattern: Post-Approval Informational Iterations",
        "Anti-Pattern: Global anti-patterns 1",
        "Anti-Pattern: Global anti-patterns 0",
        "Anti-Pattern: Parser Against Assumed Format",
        "Anti-Pattern: Bash Variable Interpolation in Inline Python",
        "Anti-Pattern: Frozen Artifact Contradictions",
        "Anti-Pattern: Line Number References in Sequential Tasks",
        "Anti-Pattern: Implementation Reviewer Flagging Pre-Existing Code as Blockers",
        "Anti-Pattern: Specifying a Parser Without a Complete Round-Trip Example",
        "Anti-Pattern: Relative Paths in Hooks",
        "Anti-Pattern: Over-Granular Tasks",
        "Heuristic: Reference File Sizing",
        "Heuristic: Cross-Skill Coupling Depth",
        "Heuristic: Read Real File Samples During Design When Parsing Existing Files",
        "Pattern: Context7 for Configuration Verification",
        "Pattern: Hardened Persona for Review Agents",
        "Pattern: Hook Schema Compliance",
    ],
    ("duplicating", 9): [
        "Anti-Pattern: Working in Wrong Worktree",
        'Anti-Pattern: Skipping Workflow for "Simple" Tasks',
        "Anti-Pattern: Dual-Representation Dependency Graphs",
        "Heuristic: Reference File Sizing",
        "Heuristic: Cross-Skill Coupling Depth",
        "Heuristic: Read Real File Samples During Design When Parsing Existing Files",
        "Pattern: Context7 for Configuration Verification",
        "Pattern: Hardened Persona for Review Agents",
        "Pattern: Hook Schema Compliance",
    ],
    ("duplicating", 5): [
        "Anti-Pattern: Working in Wrong Worktree",
        'Anti-Pattern: Skipping Workflow for "Simple" Tasks',
        "Anti-Pattern: Dual-Representation Dependency Graphs",
        "Anti-Pattern: Post-Approval Informational Iterations",
        "Anti-Pattern: Global anti-patterns 1",
    ],
}


@pytest.mark.ac("023:AC-1.3")
@pytest.mark.parametrize(("store", "limit"), sorted(MEMORY_PY), ids=lambda v: str(v))
def test_the_order_memory_py_prints(tmp_path: Path, store: str, limit: int) -> None:
    root, home = tmp_path / "project", tmp_path / "home"
    shutil.copytree(NEW, root / "docs" / "knowledge-bank")
    home.mkdir()
    if store == "duplicating":
        duplicating_global_store(home)
    local, global_ = read_markdown_sources(root, Home(home))
    block = render_legacy_block(select_legacy(local, global_, limit))
    headers = [ln[4:] for ln in block.splitlines() if ln.startswith("### ")]
    assert [h for h in headers if h not in {t[4:] for t in SECTION_TITLES.values()}] == (
        MEMORY_PY[store, limit]
    )


def test_equal_dates_keep_the_order_first_seen() -> None:
    """Equal count, confidence and ``Last observed``: file order, never reversed."""
    pool = [entry(f"g{i}", last_observed="2026-01-15", position=i, is_global=True)
            for i in range(4)]  # fmt: skip
    assert names(sort_into_categories(pool)["anti-patterns"]) == ["g0", "g1", "g2", "g3"]


# --- reading a file as memory.py read it --------------------------------------------------------


def shape(entry: LegacyEntry) -> tuple[str, str, str, str, int, str, str | None, int]:
    return (
        entry.name, entry.header, entry.description, entry.metadata, entry.observation_count,
        entry.confidence, entry.last_observed, entry.position,
    )  # fmt: skip


def test_a_heading_after_the_metadata_belongs_to_the_entry() -> None:
    """memory.py split at ``### `` only: a later ``##`` section is printed with the entry."""
    (found,) = parse_legacy(
        "### Anti-Pattern: X\nDesc\n- Cost: y\n\n## Later\n\nText\n", "patterns"
    )
    assert shape(found) == ("X", "### Anti-Pattern: X", "Desc", "- Cost: y\n\n## Later\n\nText",
                            1, "medium", None, 1)  # fmt: skip


def test_an_unclosed_comment_stays_in_the_text() -> None:
    (found,) = parse_legacy("### X\nD\n<!-- open\n- Confidence: high\n", "heuristics")
    assert (found.description, found.confidence) == ("D\n<!-- open", "high")


def test_the_last_valid_sort_field_wins_read_as_python_reads_it() -> None:
    text = (
        "### X\nD\n- Observation count: 2\n- Observation count: +4\n- observation count: x\n"
        "  - Confidence: HIGH\n- Confidence: maybe\n- Last observed: 2026-02-01\n"
        "- Last observed: Feature #3\n"
    )
    (found,) = parse_legacy(text, "patterns")
    assert (found.observation_count, found.confidence, found.last_observed) == (
        4, "high", "Feature #3",
    )  # fmt: skip


def test_only_anti_pattern_and_pattern_come_off_the_name() -> None:
    text = (
        "### Heuristic: X\nD\n### Anti-Pattern: Y\nD\n### Pattern: Z\nD\n### anti-pattern: W\nD\n"
    )
    found = parse_legacy(text, "heuristics")
    assert [e.name for e in found] == ["Heuristic: X", "Y", "Z", "anti-pattern: W"]
    assert [e.header for e in found] == [f"### {h}" for h in
                                         ("Heuristic: X", "Anti-Pattern: Y", "Pattern: Z",
                                          "anti-pattern: W")]  # fmt: skip


def test_positions_count_the_pieces_and_comments_hide_entries() -> None:
    assert [e.position for e in parse_legacy("# T\n### A\nd\n### B\nd\n", "patterns")] == [1, 2]
    hidden = parse_legacy("### A\nd\n<!-- ### Hidden\nh\n-->\n### B\nd\n", "patterns")
    assert [(e.name, e.position) for e in hidden] == [("A", 1), ("B", 2)]


def test_text_before_the_first_entry_is_an_entry_unless_a_heading() -> None:
    found = parse_legacy("Intro text\n### A\nd\n", "patterns")
    assert [shape(e)[:4] for e in found] == [
        ("Intro text", "### Intro text", "", ""), ("A", "### A", "d", ""),
    ]  # fmt: skip
    (only,) = parse_legacy("## Section only\n### A\n- Cost: only metadata\n", "patterns")
    assert (only.description, only.metadata) == ("", "- Cost: only metadata")
    block = render_legacy_block([only])
    assert "### A\n- Cost: only metadata\n\n---" in block  # no empty description line
