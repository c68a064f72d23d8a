"""The knowledge-bank parser against the real iflow files and the spec's rules."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlog.projections.markdown_view.kb_parser import (
    ParsedEntry,
    ParseResult,
    content_hash,
    parse_file,
    parse_text,
)
from memlog.tests.support import FIXTURES  # noqa: E402

NEW = FIXTURES / "knowledge-bank-6bb5ea25"
OLD = FIXTURES / "knowledge-bank-ab2c282a"
#: the banks' files (each folder's README.md says where it comes from)
FIXTURE_FILES = [
    p for p in sorted(NEW.glob("*.md")) + sorted(OLD.glob("*.md")) if p.name != "README.md"
]

ANTI_PATTERNS_NEW = [
    "Working in Wrong Worktree",
    "Over-Granular Tasks",
    "Relative Paths in Hooks",
    'Skipping Workflow for "Simple" Tasks',
    "Line Number References in Sequential Tasks",
    "Frozen Artifact Contradictions",
    "Dual-Representation Dependency Graphs",
    "Bash Variable Interpolation in Inline Python",
    "Parser Against Assumed Format",
    "Post-Approval Informational Iterations",
    "Specifying a Parser Without a Complete Round-Trip Example",
    "Implementation Reviewer Flagging Pre-Existing Code as Blockers",
]
HEURISTICS_NEW = [
    "Reference File Sizing",
    "Line Budget Management",
    "AskUserQuestion Option Count",
    "Cross-Skill Coupling Depth",
    "Graph-Text Consistency as First-Pass Check",
    "Read Target Files During Task Creation",
    "Reviewer Iteration Count as Complexity Signal",
    "Circuit Breaker Hits as Assumption Signals",
    "Per-File Anchor Verification for Cross-Cutting Changes",
    "Read Real File Samples During Design When Parsing Existing Files",
    "Comprehensive Brainstorm PRDs Correlate With Fast Specify Phases",
    "Expect Extra Task Review Iterations When Plan Leaves Format Details Ambiguous",
]
PATTERNS_NEW = [
    "Context7 for Configuration Verification",
    "Follow Skill Completion Guidance",
    "Coverage Matrix for Multi-Component Work",
    "Hardened Persona for Review Agents",
    "Chain Validation Principle",
    "PROJECT_ROOT vs PLUGIN_ROOT in Hooks",
    "Hook Schema Compliance",
    "Retroactive Feature Creation as Recovery",
    "Two-Plugin Coexistence",
    "Environment Variable Bypass for Automation",
    "Parallel Subagent Delegation for Independent Research",
    "Evidence-Backed Claims in Documentation",
    "Trigger Phrase Descriptions for Skills and Agents",
    "Semantic Color Coding for Agents",
    "Thin Orchestrator + Reference Files",
    "Cross-Skill Read via Base Directory",
    "Conditional PRD Sections",
    "Zero-Code-Change State Machine Solutions",
    "Test Fixtures Must Match Tool Scan Paths",
    "Independent Iteration Budgets for Nested Cycles",
    "Heavy Upfront Review Investment",
    "Template Indentation Matching",
    "Skeptic Design Reviewer Catches Feasibility Blockers Early",
    "Detailed Rebuttals With Line-Number Evidence Resolve False Positives",
]
HEURISTICS_OLD = [
    "Reference File Sizing",
    "Line Budget Management",
    "AskUserQuestion Option Count",
    "Cross-Skill Coupling Depth",
    "Graph-Text Consistency as First-Pass Check",
    "Read Target Files During Task Creation",
    "Reviewer Iteration Count as Complexity Signal",
    "Circuit Breaker Hits as Assumption Signals",
    "Per-File Anchor Verification for Cross-Cutting Changes",
]


def sha16(text: str) -> str:
    """The content hash, written out independently of the module."""
    return hashlib.sha256(" ".join(text.lower().strip().split()).encode()).hexdigest()[:16]


def header_lines_outside_comments(path: Path) -> int:
    """``### `` lines of a file that are not inside an HTML comment."""
    text = re.sub(r"<!--.*?-->", "", path.read_text(encoding="utf-8"), flags=re.S)
    return sum(1 for line in text.split("\n") if line.startswith("### "))


def parsed(path: Path) -> list[ParsedEntry]:
    result = parse_file(path)
    assert result.warnings == []
    return result.entries


def one(text: str, path: str = "heuristics.md") -> tuple[ParsedEntry, ParseResult]:
    result = parse_text(text, path)
    assert len(result.entries) == 1, result
    return result.entries[0], result


# --- the real files ---------------------------------------------------------


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_fixture_entry_is_parsed(path: Path) -> None:
    entries = parsed(path)
    assert len(entries) == header_lines_outside_comments(path)
    assert [e.position for e in entries] == list(range(len(entries)))
    assert {e.category for e in entries} == {path.stem}
    assert not any(e.is_global for e in entries)
    assert all(e.description and e.content_hash == sha16(e.description) for e in entries)


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_raw_is_the_entry_as_written(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").split("\n")
    for entry in parsed(path):
        raw_lines = entry.raw.split("\n")
        assert lines[entry.line - 1 : entry.line - 1 + len(raw_lines)] == raw_lines
        assert raw_lines[0].startswith("### ") and raw_lines[-1].strip()
        assert "<!--" not in entry.raw and "---" not in raw_lines


def test_fixture_expected_header_counts() -> None:
    counts = {p.parent.name + "/" + p.name: len(parsed(p)) for p in FIXTURE_FILES}
    assert counts == {
        "knowledge-bank-6bb5ea25/anti-patterns.md": 12,
        "knowledge-bank-6bb5ea25/heuristics.md": 12,
        "knowledge-bank-6bb5ea25/patterns.md": 24,
        "knowledge-bank-ab2c282a/anti-patterns.md": 10,
        "knowledge-bank-ab2c282a/heuristics.md": 9,
        "knowledge-bank-ab2c282a/patterns.md": 22,
    }


def test_new_fixture_names_exact() -> None:
    assert [e.name for e in parsed(NEW / "anti-patterns.md")] == ANTI_PATTERNS_NEW
    assert [e.name for e in parsed(NEW / "heuristics.md")] == HEURISTICS_NEW
    assert [e.name for e in parsed(NEW / "patterns.md")] == PATTERNS_NEW


def test_old_fixture_names_exact() -> None:
    assert [e.name for e in parsed(OLD / "heuristics.md")] == HEURISTICS_OLD
    assert [e.name for e in parsed(OLD / "anti-patterns.md")] == ANTI_PATTERNS_NEW[:10]
    old_patterns = parsed(OLD / "patterns.md")
    assert old_patterns[0].name == "Context7 for Configuration Verification"
    assert old_patterns[5].name == "PROJECT_ROOT vs PLUGIN_ROOT in Hooks"
    assert old_patterns[-1].name == "Template Indentation Matching"


def test_header_types() -> None:
    assert {e.header_type for e in parsed(NEW / "anti-patterns.md")} == {"Anti-Pattern"}
    assert {e.header_type for e in parsed(NEW / "patterns.md")} == {"Pattern"}
    assert {e.header_type for e in parsed(NEW / "heuristics.md")} == {None}


@pytest.mark.parametrize(
    ("path", "counts"),
    [
        (NEW / "anti-patterns.md", [1, 1, 1, 1, 2, 2, 1, 2, 2, 1, 1, 1]),
        (OLD / "anti-patterns.md", [1, 1, 1, 1, 2, 2, 1, 1, 1, 1]),
        (NEW / "heuristics.md", [1, 2, 1, 1, 1, 2, 3, 2, 1, 1, 1, 1]),
        (OLD / "heuristics.md", [1, 2, 1, 1, 1, 2, 2, 1, 1]),
        (NEW / "patterns.md", [1] * 24),
    ],
    ids=["new-ap", "old-ap", "new-h", "old-h", "new-p"],
)
def test_observation_counts_exact(path: Path, counts: list[int]) -> None:
    assert [e.observation_count for e in parsed(path)] == counts


def test_confidence_as_stated_else_medium() -> None:
    high = {e.name for e in parsed(NEW / "anti-patterns.md") if e.confidence == "high"}
    assert high == set(ANTI_PATTERNS_NEW[10:])
    by_name = {e.name: e.confidence for e in parsed(NEW / "heuristics.md")}
    assert by_name[HEURISTICS_NEW[9]] == "high"
    assert by_name[HEURISTICS_NEW[10]] == "medium"
    assert by_name[HEURISTICS_NEW[0]] == "medium"
    assert {e.confidence for e in parsed(OLD / "anti-patterns.md")} == {"medium"}


def test_descriptions_by_hand() -> None:
    ap = parsed(NEW / "anti-patterns.md")
    assert ap[0].description == "Making changes in main worktree when a feature worktree exists."
    assert ap[0].content_hash == sha16(
        "making changes in MAIN worktree  when a feature worktree exists."
    )
    assert ap[0].line == 9
    assert ap[8].description.startswith("Designing parsers against assumed format without")
    assert ap[8].description.endswith("rather than reading actual files to confirm.")
    heuristics = parsed(NEW / "heuristics.md")
    assert heuristics[0].description == (
        "Target ~100-160 lines per reference file for balance between completeness and readability."
    )
    assert heuristics[0].metadata[0] == (
        "",
        "4 files at ~480 total lines is a good ratio for a thin orchestrator pattern",
    )


def test_metadata_in_order_with_continuations() -> None:
    hook = parsed(NEW / "patterns.md")[6]
    assert [key for key, _ in hook.metadata] == [
        "Discovered in",
        "Problem",
        "Key insight",
        "Validation",
        "Solution",
    ]
    assert dict(hook.metadata)["Key insight"].split("\n") == [
        "Different hook types have different valid fields:",
        "- SessionStart: `hookSpecificOutput.additionalContext`",
        "- PreToolUse: `hookSpecificOutput.permissionDecision`, `permissionDecisionReason`",
        "- PostToolUse: `hookSpecificOutput.additionalContext`",
    ]
    working = parsed(NEW / "anti-patterns.md")[0]
    assert working.last_observed == "Feature #022"
    assert working.metadata[-1] == ("Observation count", "1")


def test_content_hash_matches_design_definition() -> None:
    assert content_hash("  A\tb\n c  ") == sha16("a b c")
    assert content_hash("") == hashlib.sha256(b"").hexdigest()[:16]


# --- the global store -------------------------------------------------------

DESCRIPTION = "Making changes in main worktree when a feature\nworktree exists."
SECOND = "Breaking a single file modification into many small separate tasks."
GLOBAL_STORE = f"""# Global Anti-Patterns

Cross-project learnings promoted from retrospectives. Automatically managed by iflow.
Do not edit manually — entries are updated during /finish.

### Anti-Pattern: Working in Wrong Worktree
{DESCRIPTION}
- Content-Hash: sha256:{sha16(DESCRIPTION)}
- Source: my-ai-setup, Feature #002, other-project, Feature #7
- Observation count: 3
- Last observed: 2026-02-17
- Tags: universal
- Confidence: high

### Anti-Pattern: Over-Granular Tasks
Breaking a single file modification into many small separate tasks.
- Content-Hash: sha256:{sha16(SECOND)}
- Source: my-ai-setup, Feature #003
- Observation count: 1
- Last observed: 2026-02-18T10:00:00Z
- Tags: universal
- Confidence: low
"""


def test_global_store_file(tmp_path: Path) -> None:
    path = tmp_path / "anti-patterns.md"
    path.write_text(GLOBAL_STORE, encoding="utf-8")
    result = parse_file(path)
    assert result.warnings == []
    first, second = result.entries
    assert (first.name, first.header_type, first.category) == (
        "Working in Wrong Worktree",
        "Anti-Pattern",
        "anti-patterns",
    )
    assert first.description == DESCRIPTION
    assert first.content_hash == sha16(DESCRIPTION)
    assert dict(first.metadata)["Content-Hash"] == f"sha256:{first.content_hash}"
    assert (first.observation_count, first.confidence, first.last_observed) == (
        3,
        "high",
        "2026-02-17",
    )
    assert (second.observation_count, second.confidence) == (1, "low")
    assert second.last_observed == "2026-02-18T10:00:00Z"
    assert all(e.is_global and e.source_path == str(path) for e in result.entries)


def test_global_store_recognised_by_title_whatever_its_name() -> None:
    result = parse_text(GLOBAL_STORE, "/backup/store-copy.md")
    assert not result.skipped and result.warnings == []
    assert [e.category for e in result.entries] == ["anti-patterns", "anti-patterns"]
    assert all(e.is_global for e in result.entries)


def test_content_hash_line_alone_marks_a_global_file() -> None:
    text = "### Pattern: P\nText.\n- Content-Hash: sha256:" + sha16("Text.") + "\n"
    entry, _ = one(text, "patterns.md")
    assert entry.is_global


def test_stale_content_hash_is_warned() -> None:
    text = GLOBAL_STORE.replace("many small separate tasks.\n- Content", "many tasks.\n- Content")
    result = parse_text(text, "anti-patterns.md")
    assert len(result.entries) == 2
    assert len(result.warnings) == 1 and "anti-patterns.md:16: Content-Hash" in result.warnings[0]


def test_global_title_without_category_uses_header_type() -> None:
    text = "# Global Memory\n\n### Pattern: P\nText.\n\n### Untyped\nOther.\n"
    result = parse_text(text, "memory.md")
    assert [(e.name, e.category) for e in result.entries] == [("P", "patterns")]
    assert result.warnings == ["memory.md:6: entry 'Untyped' skipped: no category"]


# --- the rules --------------------------------------------------------------


def test_metadata_keys_case_insensitive() -> None:
    entry, result = one(
        "### H\nText.\n- observation count: 4\n- CONFIDENCE: High\n- last OBSERVED: 2026-01-01\n"
    )
    assert (entry.observation_count, entry.confidence, entry.last_observed) == (
        4,
        "high",
        "2026-01-01",
    )
    assert entry.metadata[0] == ("observation count", "4")
    assert result.warnings == []


def test_defaults_when_fields_missing() -> None:
    entry, _ = one("### H\nText.\n- Source: Feature #1\n")
    assert (entry.observation_count, entry.confidence, entry.last_observed) == (1, "medium", None)


def test_description_without_metadata_and_multiline() -> None:
    entry, _ = one("### H\n\nFirst line\n\nsecond line.\n\n", "heuristics.md")
    assert entry.description == "First line\n\nsecond line."
    assert entry.raw == "### H\n\nFirst line\n\nsecond line."


def test_type_prefix_only_when_it_names_a_category() -> None:
    text = (
        "### Heuristic: Read Before Write\nA.\n\n### Note: colons are fine\nB.\n\n"
        "### Heuristics: Plural\nC.\n\n### anti-pattern: lower case\nD.\n"
    )
    result = parse_text(text, "heuristics.md")
    assert [(e.header_type, e.name) for e in result.entries] == [
        ("Heuristic", "Read Before Write"),
        (None, "Note: colons are fine"),
        ("Heuristics", "Plural"),
        ("anti-pattern", "lower case"),
    ]
    assert result.entries[3].category == "heuristics"
    assert result.warnings == ["heuristics.md:10: header type 'anti-pattern' in a heuristics file"]


def test_headings_and_separators_are_not_entries() -> None:
    text = (
        "# Heuristics\n\n---\n\n## Section\n### A\nText A.\n- Source: x\n"
        "---\n## Next\nIntro.\n### B\nText B.\n"
    )
    result = parse_text(text, "heuristics.md")
    assert [(e.name, e.raw) for e in result.entries] == [
        ("A", "### A\nText A.\n- Source: x"),
        ("B", "### B\nText B."),
    ]
    assert result.warnings == []


def test_comments_are_skipped() -> None:
    text = (
        "### A\nText <!-- inline --> A.\n<!-- one line -->\n- Source: x\n\n"
        "<!-- Example format:\n### Anti-Pattern: Premature Optimization\nOptimizing.\n"
        "- Observation count: 9\n-->\n\n### B <!-- note -->\nText B.\n"
    )
    result = parse_text(text, "heuristics.md")
    assert [e.name for e in result.entries] == ["A", "B"]
    assert result.entries[0].description == "Text  A."
    assert result.entries[0].metadata == (("Source", "x"),)
    assert result.entries[0].raw == "### A\nText  A.\n\n- Source: x"  # the comment line is blank
    assert result.warnings == []


def test_unclosed_comment_is_warned() -> None:
    result = parse_text("### A\nText.\n<!-- open\n### B\nHidden.\n", "heuristics.md")
    assert [e.name for e in result.entries] == ["A"]
    assert result.warnings == ["heuristics.md:3: comment never closed; rest of file ignored"]


def test_crlf_and_bom() -> None:
    entry, result = one("\ufeff### A\r\nText.\r\n- Observation count: 2\r\n")
    assert (entry.name, entry.description, entry.observation_count) == ("A", "Text.", 2)
    assert "\r" not in entry.raw and result.warnings == []


# --- malformed input: warned, nothing lost -----------------------------------


def test_entry_without_description_is_kept_and_warned() -> None:
    text = "### Pattern: Same line description\n- Used in: Feature #1\n"
    entry, result = one(text, "patterns.md")
    assert entry.description == "" and entry.content_hash == sha16("")
    assert result.warnings == ["patterns.md:1: entry 'Same line description' has no description"]


def test_duplicate_names_are_kept_and_warned() -> None:
    text = "### Pattern: Twice\nOne.\n\n### Pattern: twice\nTwo.\n"
    result = parse_text(text, "patterns.md")
    assert [e.description for e in result.entries] == ["One.", "Two."]
    assert result.warnings == ["patterns.md:4: duplicate name 'twice' (first at line 1)"]


@pytest.mark.parametrize("value", ["many", "0", "-2", "2.5", "3 (twice)", ""])
def test_bad_observation_count_defaults_and_warns(value: str) -> None:
    entry, result = one(f"### H\nText.\n- Observation count: {value}\n")
    assert entry.observation_count == 1
    assert (
        len(result.warnings) == 1 and "heuristics.md:1: bad observation count" in result.warnings[0]
    )


def test_bad_confidence_defaults_and_warns() -> None:
    entry, result = one("### H\nText.\n- Confidence: very\n")
    assert entry.confidence == "medium"
    assert result.warnings == ["heuristics.md:1: bad confidence 'very'; using medium"]


def test_repeated_key_uses_first_and_warns() -> None:
    entry, result = one("### H\nText.\n- Observation count: 2\n- Observation count: 5\n")
    assert entry.observation_count == 2
    assert entry.metadata == (("Observation count", "2"), ("Observation count", "5"))
    assert result.warnings == [
        "heuristics.md:1: 'observation count' repeated; the first value is used"
    ]


def test_text_after_metadata_is_kept_raw_and_warned() -> None:
    entry, result = one("### H\nText.\n- Source: x\nStray line.\n")
    assert entry.raw.endswith("Stray line.")
    assert result.warnings == [
        "heuristics.md:4: text after the metadata of 'H' kept only in its raw text"
    ]


def test_invalid_utf8_is_replaced_and_warned(tmp_path: Path) -> None:
    path = tmp_path / "heuristics.md"
    path.write_bytes(
        b"# Heuristics\n\n### Caf\xe9 Rule\nBad \xff\xfe bytes.\n- Observation count: 2\n"
    )
    result = parse_file(path)
    assert result.warnings == [f"{path}:3: invalid UTF-8 bytes replaced by U+FFFD"]
    (entry,) = result.entries
    assert entry.name == "Caf\ufffd Rule"
    assert entry.description == "Bad \ufffd\ufffd bytes."
    assert entry.observation_count == 2


def test_lone_surrogates_do_not_break_hashing() -> None:
    entry, result = one("### H\nBad \udcff text.\n")
    assert entry.description == "Bad \ufffd text."
    assert result.warnings == ["heuristics.md: unencodable characters replaced by U+FFFD"]


@pytest.mark.parametrize(
    "name",
    ["constitution.md", "README.md", "anti-patterns.txt"],
)
def test_other_files_are_skipped_with_a_warning(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_text("### 1. KISS\nKeep it simple.\n", encoding="utf-8")
    result = parse_file(path)
    assert result.skipped and result.entries == []
    assert len(result.warnings) == 1 and result.warnings[0].startswith(f"{path}: skipped: ")


def test_constitution_is_skipped_even_with_a_global_title() -> None:
    result = parse_text(GLOBAL_STORE, "docs/knowledge-bank/constitution.md")
    assert result.skipped and result.entries == []


def test_unreadable_file_is_a_warning(tmp_path: Path) -> None:
    result = parse_file(tmp_path / "patterns.md")
    assert result.skipped and result.entries == []
    assert result.warnings[0].startswith(f"{tmp_path / 'patterns.md'}: cannot read")


def test_five_megabyte_file_parses_completely() -> None:
    source = (NEW / "anti-patterns.md").read_text(encoding="utf-8")
    body = source[source.index("### ") :]
    copies: list[str] = []
    while sum(map(len, copies)) < 5_000_000:
        copies.append(body.replace("### Anti-Pattern: ", f"### Anti-Pattern: {len(copies)}-"))
    text = "# Anti-Patterns\n\n" + "\n".join(copies)
    duplicate_line = text.count("\n") + 2
    text += "\n### Anti-Pattern: 0-Working in Wrong Worktree\nAgain.\n"
    assert len(text.encode()) > 5_000_000
    result = parse_text(text, "anti-patterns.md")
    assert len(result.entries) == 12 * len(copies) + 1
    assert [e.observation_count for e in result.entries[12:24]] == [
        1,
        1,
        1,
        1,
        2,
        2,
        1,
        2,
        2,
        1,
        1,
        1,
    ]
    assert result.entries[-2].name == f"{len(copies) - 1}-" + ANTI_PATTERNS_NEW[-1]
    assert result.warnings == [
        f"anti-patterns.md:{duplicate_line}: duplicate name "
        "'0-Working in Wrong Worktree' (first at line 3)"
    ]


# --- never raises -----------------------------------------------------------

FRAGMENTS = st.sampled_from(
    [
        "### ",
        "### Pattern: ",
        "### Heuristic:",
        "## ",
        "# Global ",
        "# Global Patterns",
        "---",
        "- ",
        "- Observation count: ",
        "- Confidence: ",
        "- Content-Hash: sha256:",
        "- Last observed: ",
        "<!--",
        "-->",
        "  ",
        "\t",
        "\n",
        "\r\n",
        "\ufeff",
        "x",
        "7",
        ":",
        "é",
        "\udcff",
    ]
)
PATHS = st.sampled_from(
    ["anti-patterns.md", "heuristics.md", "patterns.md", "x.md", "constitution.md"]
)


def check_result(result: ParseResult, text: str) -> None:
    assert len(result.entries) <= text.count("### ")
    assert all("\n" not in w and "\r" not in w for w in result.warnings)
    for entry in result.entries:
        assert entry.content_hash == sha16(entry.description)
        assert entry.observation_count >= 1
        assert entry.confidence in ("high", "medium", "low")


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=st.characters(exclude_categories=())), path=PATHS)
def test_parse_text_never_raises_on_any_text(text: str, path: str) -> None:
    check_result(parse_text(text, path), text)


@settings(max_examples=300, deadline=None)
@given(text=st.lists(FRAGMENTS, max_size=60).map("".join), path=PATHS)
def test_parse_text_never_raises_on_markdownish_text(text: str, path: str) -> None:
    check_result(parse_text(text, path), text)
