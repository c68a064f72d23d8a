"""Turning input into ``entry.observed`` events: fields, JSON lines and arrays, references."""

from __future__ import annotations

import json

import pytest

from memlog.capture.observe import (
    from_fields,
    keyword_notes,
    parse_json_lines,
    to_event,
    with_references,
)
from memlog.errors import InvalidInput
from memlog.eventlog.events import content_hash

FIELDS = {
    "name": " Pin  tools ",
    "description": " Pin the versions of tools. ",
    "category": "patterns",
}


def test_fields_are_trimmed_and_the_id_is_the_description_hash() -> None:
    event = from_fields({**FIELDS, "keywords": ["Version Pinning", "tools_ci", "tools-ci", ""]})
    assert event.name == "Pin tools"
    assert event.description == "Pin the versions of tools."
    assert event.entry_id == content_hash("pin the VERSIONS of   tools.")
    assert event.keywords == ("version-pinning", "tools-ci")
    assert (event.confidence, event.source) == ("medium", "manual")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"name": "  "}, "name is empty - at `$.name`"),
        ({"description": "\n"}, "description is empty - at `$.description`"),
        ({"category": "tips"}, "Invalid enum value 'tips' - at `$.category`"),
        ({"confidence": "sure"}, "Invalid enum value 'sure' - at `$.confidence`"),
        ({"name": "bad \udcff byte"}, "name is not valid UTF-8 - at `$.name`"),
    ],
)
def test_bad_fields_are_one_clear_error(change: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        from_fields({**FIELDS, **change})
    assert str(caught.value) == message


def test_json_lines_and_a_json_array_give_the_same_events() -> None:
    items = [dict(FIELDS), {**FIELDS, "description": "Another lesson.", "project": "other"}]
    lines = "\n\n".join(json.dumps(i) for i in items).encode()
    as_lines = parse_json_lines(lines, "here")
    as_array = parse_json_lines(json.dumps(items).encode(), "here")
    assert as_lines == as_array
    assert [e.project for e in as_lines] == ["here", "other"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "no entries in the input"),
        (b"  \n ", "no entries in the input"),
        (b'{"name": "x"', "line 1: malformed JSON"),
        (b'{"name": "n", "description": "d", "category": "patterns", "extra": 1}', "line 1"),
        (b'[{"name": "n", "description": "d"}]', "input: Object missing required field"),
        (b'{"name": "n", "description": "d", "category": "patterns"}\n{"name": ""}', "line 2"),
    ],
)
def test_bad_json_input_names_where(data: bytes, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        parse_json_lines(data)


def test_with_references_keeps_order_and_drops_repeats() -> None:
    event = from_fields({**FIELDS, "references": ["a.py", " b.py "]})
    assert event.references == ("a.py", "b.py")
    assert with_references(event, ["b.py", "", "c.py"]).references == ("a.py", "b.py", "c.py")


def test_to_event_names_the_place_in_errors() -> None:
    from memlog.capture.observe import ObservationInput

    with pytest.raises(InvalidInput, match="^line 4: name is empty"):
        to_event(ObservationInput(name=" ", description="d", category="patterns"), "line 4")


# -- keywords a writer gives are kept as given (issue 12, failure 5) ------------------------------


def test_keywords_are_kept_capped_at_ten_with_a_notice() -> None:
    notes: list[str] = []
    given = ["Parser", "table cells", "zebrafish", *[f"k{i}" for i in range(9)]]
    event = from_fields({**FIELDS, "keywords": given}, notes)
    assert event.keywords == ("parser", "table-cells", "zebrafish", *[f"k{i}" for i in range(7)])
    assert notes == [
        "keywords are lowercase a-z, 0-9 and -: recorded 'Parser' as 'parser', "
        "'table cells' as 'table-cells'",
        "an entry keeps at most 10 keywords: kept the first 10 of 12 (k7, k8 dropped)",
    ]


def test_keywords_that_need_no_change_need_no_notice() -> None:
    notes: list[str] = []
    event = from_fields({**FIELDS, "keywords": ["one"]}, notes)  # one, ungrounded: kept
    assert event.keywords == ("one",) and notes == []


def test_the_notice_of_a_keyword_kept_with_its_secret_shows_neither_form() -> None:
    # --no-redact keeps the secret in the keyword; the notice is for people, and a message
    # scrubber finds AKIA... but not the lower-cased akia... it became
    secret = "AKIA" + "IOSFODNN7EXAMPLE"
    notes = keyword_notes([secret, "Parser"])
    assert len(notes) == 1 and "'Parser' as 'parser'" in notes[0]
    assert secret.lower() not in notes[0].lower(), notes


def test_json_lines_say_which_line_was_changed() -> None:
    notes: list[str] = []
    data = json.dumps({**FIELDS, "keywords": ["Big Word"]}).encode()
    parse_json_lines(data, "", notes)
    assert notes == ["line 1: keywords are lowercase a-z, 0-9 and -: recorded 'Big Word' as "
                     "'big-word'"]  # fmt: skip
