"""Reading Claude Code transcripts: the shared fixtures, real ones, and fixtures of our own.

``fixtures/real_*.jsonl`` were written by the real Claude Code 2.1.197 (npm
``@anthropic-ai/claude-code``) run offline against a loopback API; see
``fixtures/README.md``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from memlog.capture.extraction.transcript import clean, read_transcript
from memlog.tests.support import FIXTURES

HERE = Path(__file__).parent / "fixtures"
SHARED = FIXTURES / "claude-code-transcripts"


def turns_of(path: Path, offset: int = 0) -> list[tuple[str, str]]:
    return [(t.user, t.response) for t in read_transcript(path, offset).turns]


# -- the shared fixtures (daaain/claude-code-log) ---------------------------------------


def test_rewind_keeps_only_the_path_to_the_last_line_and_compaction_uses_the_summary() -> None:
    found = read_transcript(SHARED / "dag_compact_after_rewind.jsonl")
    assert found.compacted
    assert [(t.user, t.response, t.summary) for t in found.turns] == [
        ("(earlier turns, compacted)", "the user asked for a plan.", True),
        ("After compaction", "Final answer", False),
    ]
    text = json.dumps([t.user + t.response for t in found.turns])
    assert "First attempt" not in text and "First answer" not in text  # rewound away


def test_edge_cases_bad_lines_duplicates_and_command_tags() -> None:
    turns = turns_of(SHARED / "edge_cases.jsonl")
    users = [u for u, _ in turns]
    assert users[0].startswith("Here's a message with some **markdown**")
    assert any(u.startswith("Let's test a very long message") for u in users)
    assert users[-1].startswith("Testing special characters: café")  # edge_011, once
    flat = json.dumps(turns)
    assert "Caveat: The messages below" not in flat
    assert "test-command" not in flat and "Command output here" not in flat
    assert "[FailingTool]" in flat and "[error] Error: Tool execution failed" in flat


def test_tool_pairs_render_short_text() -> None:
    turns = turns_of(SHARED / "representative_messages.jsonl")
    assert len(turns) == 4
    _, run = turns[2]
    assert (
        "[Bash] Run the decorator example to show output | python /tmp/decorator_example.py" in run
    )
    assert "[result] Hello, Alice!" in run
    assert turns[3] == (
        "This is really helpful! Let me try to implement a timing decorator myself. Can you "
        "help me if I get stuck?",
        "",
    )


def test_a_last_line_without_newline_counts_when_it_is_whole(tmp_path: Path) -> None:
    path = SHARED / "session_b.jsonl"
    assert not path.read_bytes().endswith(b"\n")
    found = read_transcript(path)
    assert found.end == path.stat().st_size
    assert found.turns[-1].user.startswith("Perfect! This should appear")


def test_todo_writes_and_string_prompts() -> None:
    turns = turns_of(SHARED / "todowrite_examples.jsonl")
    assert [u for u, _ in turns] == [
        "Can you help me implement a new feature with proper task management?",
        "Can you add a task for security review as well?",
    ]
    assert turns[0][1].count("[TodoWrite]") == 2


# -- real transcripts of Claude Code 2.1.197 ------------------------------------------------


def test_streamed_blocks_are_one_message_and_thinking_is_dropped() -> None:
    found = read_transcript(HERE / "real_tool_use_session.jsonl")
    assert [(t.user, t.branch, t.cwd) for t in found.turns] == [
        ("run echo", "feature/x", "/tmp/proj-tx")
    ]
    assert found.turns[0].response == (
        "I will run a command.\n[Bash] say hi | echo hi-from-bash\n[result] hi-from-bash\n"
        "The command printed hi-from-bash."
    )
    assert "let me think" not in found.turns[0].response
    assert not found.sdk  # entrypoint sdk-cli is `claude -p`, a person's own session


def test_real_compaction_summary_stands_for_unread_turns() -> None:
    found = read_transcript(HERE / "real_resume_compact_session.jsonl")
    assert found.compacted
    assert [(t.response, t.summary) for t in found.turns] == [("SUMMARY OF CONVO", True)]


def test_turns_read_before_a_compaction_are_not_read_again() -> None:
    path = HERE / "real_resume_compact_session.jsonl"
    data = path.read_bytes()
    boundary = data.index(b'"subtype":"compact_boundary"')
    offset = data.rindex(b"\n", 0, boundary) + 1  # everything before it was read
    found = read_transcript(path, offset)
    assert not found.compacted and found.turns == []  # no summary of what was read


# -- fixtures of our own ----------------------------------------------------------------------


def test_branch_switch_sidechain_meta_api_error_private_secret_duplicate_and_torn_tail() -> None:
    path = HERE / "branch_switch.jsonl"
    found = read_transcript(path)
    assert [(t.branch, t.cwd) for t in found.turns] == [
        ("feature/csv-bom", "/work/shop"), ("main", "/work/shop"),
    ]  # fmt: skip
    first, second = found.turns
    assert first.user.endswith("some CSV files? [private]")
    assert "Acme" not in first.user and "4411" not in first.user
    assert "utf-8-sig" in first.response and "Probably a byte order mark" not in first.response
    assert "[Bash] Find where CSV files are opened" in first.response
    assert "[result] 12:" in first.response
    flat = json.dumps([first.user, first.response, second.user, second.response])
    assert "SIDECHAIN" not in flat and "/model" not in flat and "API Error" not in flat
    assert "Caveat" not in flat and "switched branches" not in flat
    assert "sk-ant-api03" not in flat and "[REDACTED]" in second.user
    assert second.response.count("PRICE_API_KEY") == 1  # the line written twice counts once
    data = path.read_bytes()
    assert found.end == data.rindex(b"\n") + 1  # the torn last line is left for later
    assert found.end < len(data)


def test_the_torn_line_is_read_once_complete(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    shutil.copy(HERE / "branch_switch.jsonl", path)
    first = read_transcript(path)
    with open(path, "ab") as handle:
        handle.write(b'e zone?"},"uuid":"late-1","cwd":"/work/shop","gitBranch":"main"}\n')
    later = read_transcript(path, first.end)
    assert [(t.user, t.branch) for t in later.turns] == [("and the time zone?", "main")]
    assert later.end == path.stat().st_size


def test_reading_from_an_offset_reads_only_what_came_after() -> None:
    path = HERE / "branch_switch.jsonl"
    data = path.read_bytes()
    cut = data.index(b"Now on main")
    offset = data.rindex(b"\n", 0, cut) + 1
    found = read_transcript(path, offset)
    assert [t.branch for t in found.turns] == ["main"]


def test_agent_sdk_sessions_are_marked() -> None:
    assert read_transcript(HERE / "sdk_session.jsonl").sdk


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a <private>secret plan</private> b", "a [private] b"),
        ("open <PRIVATE>never closed", "open [private]"),
        ("<system-reminder>x</system-reminder>kept", "kept"),
        ("key sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx", "key [REDACTED]"),
        ("<local-command-stdout>done</local-command-stdout>", ""),
    ],
)
def test_clean(text: str, expected: str) -> None:
    assert clean(text) == expected
