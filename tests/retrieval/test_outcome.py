"""What an injection says of the candidates it left out (``outcome.more``)."""

from __future__ import annotations

from types import SimpleNamespace

from memlog.retrieval.outcome import Ranked, more


def ranked(raw: list[float], picked: list[int], shown: list[bool] | None = None) -> Ranked:
    ids = [f"{i:016x}" for i in range(len(raw))]
    scores = SimpleNamespace(lexical_raw=raw)
    return Ranked(ids, ["patterns"] * len(raw), picked, scores, (), 0, 0, shown)


def by_hand(found: Ranked, injected: set[str], query: bool) -> int:
    raw = found.scores.lexical_raw
    return sum(
        1
        for i, entry_id in enumerate(found.ids)
        if (not query or raw[i]) and (found.shown is None or found.shown[i])
        and entry_id not in injected
    )  # fmt: skip


def test_more_counts_what_matched_and_was_not_injected() -> None:
    raw = [0.0, 1.5, 0.0, 2.0, 0.3, 0.0, 4.0]
    shown = [True, True, False, True, True, True, False]
    for found in (ranked(raw, [6, 3, 1]), ranked(raw, [6, 3, 1], shown)):
        for injected in (set(), {found.ids[3]}, {found.ids[3], found.ids[6]}):
            for query in (False, True):
                assert more(found, injected, query) == by_hand(found, injected, query)
    found = ranked(raw, [6, 3, 1])
    assert more(found, {found.ids[3]}, query=False) == 6  # no query: every other candidate
    assert more(found, {found.ids[3]}, query=True) == 3  # 1, 4 and 6 matched
    # an injected entry that is no pick (and one that is no candidate) is still found
    assert more(found, {found.ids[4], "f" * 16}, query=True) == 3
