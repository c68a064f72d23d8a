"""``--since`` / ``--until`` bounds: a sequence number or an ISO time, both inclusive."""

from __future__ import annotations

import pytest

from memlog.errors import InvalidInput
from memlog.eventlog.bounds import Bound, parse_bound, within


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("42", Bound(42, None)),
        (" 7 ", Bound(7, None)),
        ("2026-03-01", Bound(None, "2026-03-01T00:00:00.000000Z")),
        ("2026-03-01T10:20:30Z", Bound(None, "2026-03-01T10:20:30.000000Z")),
        ("2026-03-01T12:20:30+02:00", Bound(None, "2026-03-01T10:20:30.000000Z")),
        ("2026-03-01T10:20:30.5", Bound(None, "2026-03-01T10:20:30.500000Z")),
    ],
)
def test_parse_bound(text: str, expected: Bound) -> None:
    assert parse_bound(text) == expected


@pytest.mark.parametrize("text", ["", "yesterday", "-3", "2026-13-01", "1.5"])
def test_a_bad_bound_is_a_clear_input_error(text: str) -> None:
    with pytest.raises(InvalidInput, match="neither a sequence number nor an ISO time"):
        parse_bound(text)


def test_within_is_inclusive_at_both_ends_by_sequence() -> None:
    since, until = Bound(3, None), Bound(5, None)
    stamp = "2026-01-01T00:00:00.000000Z"
    assert [s for s in range(1, 8) if within(s, stamp, since, until)] == [3, 4, 5]
    assert [s for s in range(1, 4) if within(s, stamp, None, None)] == [1, 2, 3]


def test_within_is_inclusive_at_both_ends_by_time() -> None:
    stamps = [f"2026-01-0{d}T00:00:00.000000Z" for d in range(1, 6)]
    since, until = parse_bound("2026-01-02"), parse_bound("2026-01-04")
    assert [t[:10] for t in stamps if within(0, t, since, until)] == [
        "2026-01-02", "2026-01-03", "2026-01-04",
    ]  # fmt: skip


def test_the_largest_event_is_a_few_kb_entry_many_times_over() -> None:
    from memlog.eventlog.bounds import MAX_EVENT_BYTES, check_payload, payload_size, too_large

    assert 16 * 1024 <= MAX_EVENT_BYTES <= 256 * 1024
    assert not too_large(MAX_EVENT_BYTES) and too_large(MAX_EVENT_BYTES + 1)
    check_payload("x" * MAX_EVENT_BYTES)  # exactly the limit passes
    assert payload_size("é") == 2 and payload_size(b"ab") == 2
    assert payload_size({"a": "b"}) == len(b'{"a":"b"}')


@pytest.mark.parametrize(
    "payload",
    ["x" * (64 * 1024 + 1), b"\0" * (1 << 20), {"description": "é" * 40_000}, ["a" * 70_000]],
)
def test_a_payload_past_the_limit_is_one_line_of_bad_input(payload: object) -> None:
    from memlog.eventlog.bounds import check_payload

    with pytest.raises(InvalidInput, match=r"^the description is [\d.]+ KiB, more than the "
                       r"64 KiB an event may hold; nothing was stored$"):  # fmt: skip
        check_payload(payload, "the description")


def test_slices_keep_order_and_stay_within_their_budget() -> None:
    from memlog.eventlog.bounds import slices

    items = [f"{i:016x}" for i in range(5000)]
    runs = slices(items, 1000)
    assert [i for run in runs for i in run] == items
    assert all(len(run) * 19 <= 1000 for run in runs) and len(runs) > 1
    assert slices([], 1000) == [()]
    assert slices(["x" * 5000], 1000) == [("x" * 5000,)]  # one item a run, however long
