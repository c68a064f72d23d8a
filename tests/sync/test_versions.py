"""Checking one version of a segment, and joining two."""

from __future__ import annotations

import msgspec
import pytest

from memlog.eventlog.codec import encode_line
from memlog.eventlog.events import Observed
from memlog.sync import versions

NAME = "aa/00000000000000000001.jsonl"


def event(seq: int, batch_end: int = 0, reasoning: str = "", ident: str = "") -> Observed:
    return Observed(
        seq=seq, id=ident or f"id-{seq}", ts="2026-05-01T09:00:00.000000Z", batch_end=batch_end,
        name=f"L{seq}", description=f"Lesson {seq}.", category="facts", reasoning=reasoning,
    )  # fmt: skip


def data(*events: Observed) -> bytes:
    return b"".join(encode_line(e) for e in events)


def test_a_good_version_parses() -> None:
    lines = versions.parse(NAME, data(event(1), event(2, 3), event(3, 3)))
    assert [line.seq for line in lines] == [1, 2, 3]


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        (data(event(1))[:-1], "torn last line"),
        (data(event(1)).replace(b"Lesson 1", b"Lesson 9"), "checksum mismatch"),
        (data(event(2), event(1)), "seq 1 after 2"),
        (data(event(1), event(1)), "seq 1 after 1"),
        (data(event(1), event(2, 3)), "cut short"),
        (data(event(1, 3), event(3, 3)), "cut short"),
        (b"not json\n", "no checksum"),
    ],
)
def test_a_bad_version_is_refused(raw: bytes, why: str) -> None:
    with pytest.raises(versions.Refused, match=why):
        versions.parse(NAME, raw)


def test_a_version_must_start_where_its_name_says() -> None:
    with pytest.raises(versions.Refused, match="before its name says"):
        versions.parse("aa/00000000000000000002.jsonl", data(event(1)))


def lines(*events: Observed) -> list[versions.Line]:
    return versions.parse(NAME, data(*events))


def test_the_longer_version_wins_either_way() -> None:
    short, long = lines(event(1)), lines(event(1), event(2))
    for ours, theirs in ((short, long), (long, short)):
        joined = versions.join(NAME, short, ours, theirs, own=False)
        assert versions.joined_bytes(joined) == versions.joined_bytes(long)


def test_a_rewritten_line_wins_over_the_old_one() -> None:
    old = lines(event(1, reasoning="hunter2"), event(2))
    redacted = msgspec.structs.replace(event(1), reasoning="[REDACTED]", redacted=("reasoning",))
    new = lines(redacted, event(2))
    grown = lines(event(1, reasoning="hunter2"), event(2), event(3))
    # the remote redacted, this home grew: both changes are kept, whichever side joins
    assert versions.joined_bytes(versions.join(NAME, old, grown, new, own=True)) == data(
        redacted, event(2), event(3)
    )
    one_way = versions.join(NAME, old, new, grown, own=False)
    other_way = versions.join(NAME, old, grown, new, own=False)
    assert versions.joined_bytes(one_way) == versions.joined_bytes(other_way)


def test_two_rewrites_of_one_line_resolve_alike_on_both_sides() -> None:
    base = lines(event(1, reasoning="a b"))
    one = lines(
        msgspec.structs.replace(event(1), reasoning="[REDACTED] b", redacted=("reasoning",))
    )
    two = lines(event(1, reasoning="a c"))
    for ours, theirs in ((one, two), (two, one)):
        joined = versions.join(NAME, base, ours, theirs, own=False)
        assert versions.joined_bytes(joined) == versions.joined_bytes(one)


def test_another_event_under_the_same_seq_is_refused() -> None:
    ours, theirs = lines(event(1)), lines(event(1, ident="forged"))
    with pytest.raises(versions.Refused, match="seq 1 is event forged"):
        versions.join(NAME, [], ours, theirs, own=False)


def test_the_remote_cannot_add_events_to_this_device() -> None:
    with pytest.raises(versions.Refused, match="same device id"):
        versions.join(NAME, [], lines(event(1)), lines(event(1), event(2)), own=True)


def test_overlapping_segments_are_found() -> None:
    first, second = lines(event(1), event(2)), lines(event(2))
    assert versions.in_order([("a", first), ("b", second)]) is not None
    assert versions.in_order([("a", first), ("b", lines(event(3)))]) is None


def test_secrets_are_found() -> None:
    found = versions.secret_in(lines(event(1), event(2, reasoning="key AKIAABCDEFGHIJKLMNOP")))
    assert found is not None and found.seq == 2


def test_the_good_end_stops_before_what_fails() -> None:
    good = data(event(1), event(2, 3), event(3, 3))
    assert versions.good_end(NAME, good) == (len(good), "")
    torn = good + data(event(4, 5))  # a batch still being written
    assert versions.good_end(NAME, torn) == (len(good), "")
    bad = good + data(event(4)).replace(b"Lesson", b"Lesxon") + data(event(5))
    end, why = versions.good_end(NAME, bad)
    assert end == len(good) and "checksum mismatch" in why
    cut = data(event(1), event(2, 3)) + data(event(4))  # a batch cut short by a later line
    assert versions.good_end(NAME, cut) == (len(data(event(1))), versions.good_end(NAME, cut)[1])
    assert "cut short" in versions.good_end(NAME, cut)[1]
    secret = good + data(event(4, reasoning="AKIAABCDEFGHIJKLMNOP"))
    assert versions.good_end(NAME, secret) == (len(good), f"{NAME} seq 4: a secret")
    # from the middle: only the new lines are checked, after the sequence given
    assert versions.good_end(NAME, torn, len(good), 3) == (len(good), "")
