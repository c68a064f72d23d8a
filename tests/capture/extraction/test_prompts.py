"""Puffin's limits on what is sent, the skip rules, and the schemas."""

from __future__ import annotations

import pytest

from memlog.capture.extraction import prompts
from memlog.capture.extraction.prompts import Scope, cap, fallback, render
from memlog.capture.extraction.transcript import Turn


@pytest.mark.ac("004:transcript-truncation")
def test_each_turn_is_capped_at_2000_characters_user_and_response_independently() -> None:
    turn = Turn("u" * 2500, "r" * 1999)
    text = render([turn]).text
    assert f"User: {'u' * 1999}…\n" in text
    assert f"Assistant: {'r' * 1999}\n" in text  # under the cap: untouched
    assert len(cap("x" * 2001)) == 2000 and cap("x" * 2000) == "x" * 2000


@pytest.mark.ac("004:transcript-truncation")
def test_the_whole_transcript_is_capped_at_80000_characters_then_a_note() -> None:
    turns = [Turn(f"question {i} " + "q" * 1990, "a" * 2000) for i in range(30)]
    rendered = render(turns)
    # each turn renders to about 4,030 characters: 19 fit in 80,000
    assert rendered.kept == 19 and rendered.truncated == 11
    assert rendered.text.endswith("[...11 remaining turns truncated for length]\n")
    body = rendered.text[: rendered.text.index("[...")]
    assert len(body) <= prompts.MAX_TRANSCRIPT_CHARS
    assert "question 18 " in body and "question 19 " not in body


def test_a_short_transcript_is_not_truncated() -> None:
    rendered = render([Turn("hello there", "general kenobi")])
    assert rendered == prompts.Rendered(
        "### Turn 1\nUser: hello there\nAssistant: general kenobi\n", 1, 0
    )


@pytest.mark.ac("004:empty-trivial")
@pytest.mark.parametrize(
    ("turns", "expected"),
    [
        ([], "empty"),
        ([Turn("a question of some length here", ""), Turn("another", "  ")], "empty"),
        ([Turn("short", "ok"), Turn("x" * 20, "y" * 29)], "trivial"),
        ([Turn("x" * 20, "y" * 30)], None),  # exactly 50 combined: substantive
        ([Turn("", "z" * 50)], None),
    ],
)
def test_empty_and_trivial(turns: list[Turn], expected: str | None) -> None:
    assert fallback(turns) == expected


def test_scopes_are_named_on_turns_only_when_there_are_several() -> None:
    a, b = Scope("shop", "feature/x"), Scope("shop", "main")
    turns = [Turn("one", "1"), Turn("two", "2")]
    assert "[scope:" not in render(turns, [a, a]).text
    text = render(turns, [a, b]).text
    assert "### Turn 1 [scope: feature/x]" in text and "### Turn 2 [scope: main]" in text
    assert prompts.label(Scope("other", ""), [a, Scope("other", "")]) == "other: (no branch)"


def test_the_extraction_schema_names_scopes_only_when_several() -> None:
    one = prompts.extraction_schema(["main"])
    item = one["properties"]["extractions"]["items"]
    assert item["required"] == ["section", "content", "confidence"]
    assert item["properties"]["section"]["enum"] == [
        "facts", "architectural-decisions", "conventions", "bug-patterns",
    ]  # fmt: skip
    assert item["additionalProperties"] is False
    two = prompts.extraction_schema(["main", "feature/x"])
    scope = two["properties"]["extractions"]["items"]["properties"]["scope"]
    assert scope == {"type": "string", "enum": ["main", "feature/x"]}


def test_the_evolution_prompt_numbers_existing_items() -> None:
    prompt = prompts.evolution_prompt(
        [("conventions", "Use snake_case."), ("facts", "Python 3.11.")],
        [("facts", "Python 3.12 now.")],
        "main",
    )
    assert "[1] (conventions) Use snake_case.\n[2] (facts) Python 3.11." in prompt
    assert "- (facts) Python 3.12 now." in prompt
