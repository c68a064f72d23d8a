"""Reading the SQLite view for ranking: safe FTS5 queries and bm25 over a real view."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from memlog.eventlog.events import content_hash
from memlog.home import Home
from memlog.projections.runner import catch_up
from memlog.projections.sqlite_view import reading
from memlog.tests.retrieval.helpers import (
    HASHING,
    entry,
    seed,
)

# -- fts_query ----------------------------------------------------------------------------------

FTS = sqlite3.connect(":memory:")
FTS.execute(
    "CREATE VIRTUAL TABLE t USING fts5(name, description, keywords, reasoning, "
    "tokenize='porter unicode61 remove_diacritics 2')"
)
TRICKY = (
    "-", ".", "/", ":", '"', "'", '""', "NEAR", "NEAR(", "NEAR/2", "AND", "OR", "NOT", "*", "^",
    "(", ")", "{", "}", "+", "anti-patterns:", "name:", "{name description}:", "description:x",
    "-foo", "foo*", "^bar", "a.b.c", "src/memlog/inject.py", "C++", "v1.2.3", "naïve", "日本語",
    "İstanbul", "ǅemal", "Ꭰꭰ", "ß", "\u200b", "\\", "%", "_", "__init__", "AND OR NOT",
)  # fmt: skip
noise = st.lists(st.one_of(st.text(max_size=6), st.sampled_from(TRICKY)), max_size=12).map(
    lambda parts: " ".join(parts)
)
words = st.text(
    alphabet=st.characters(categories=("Lu", "Ll", "Lt", "Lo", "Nd")), min_size=2, max_size=10
)


def matches(expression: str | None) -> list[Any]:
    if expression is None:
        return []
    return FTS.execute("SELECT rowid FROM t WHERE t MATCH ?", (expression,)).fetchall()


@settings(max_examples=400, deadline=None)
@given(noise, words, st.sampled_from(["{}", "-{}", '"{}"', "{}:", "({})", "{}*", "^{}", "x/{}"]))
@example("anti-patterns: NEAR(", "ᎠᎡ", "{}")  # Cherokee: Python lowercases it, SQLite does not
@example('"unterminated AND', "İstanbul", "-{}:")
@example("^* OR NOT", "ǅemal", "{}*")
def test_fts_query_never_errors_and_never_filters(text: str, word: str, wrap: str) -> None:
    matches(reading.fts_query(text))  # arbitrary text alone: no error
    assume(word.lower() not in reading.STOPWORDS)  # function words are left out on purpose
    FTS.execute("DELETE FROM t")
    FTS.execute(
        "INSERT INTO t(name, description, keywords, reasoning) VALUES ('zz', ?, '', '')",
        (f"before {word} after",),
    )
    half = len(text) // 2
    query = f"{text[:half]} {wrap.format(word)} {text[half:]}"
    assert matches(reading.fts_query(query)), (query, reading.fts_query(query))


def test_fts_query_quotes_every_token() -> None:
    assert reading.fts_query(None) is None
    assert reading.fts_query("") is None
    assert reading.fts_query("a - : *") is None
    # single letters say nothing and are dropped; single digits are kept
    assert reading.fts_query('anti-patterns: NEAR(x "yz") 7') == (
        '"anti" OR "patterns" OR "near" OR "yz" OR "7"'
    )
    many = " ".join(f"w{i}" for i in range(100))
    assert reading.fts_query(many).count(" OR ") == reading.MAX_TOKENS - 1
    # ASCII case variants are one token; other scripts are left to FTS5's folding
    assert reading.fts_query("Parse parse PARSE") == '"parse"'
    assert reading.fts_query("Ꭰꭰ ᎠᎠ Straße") == '"Ꭰꭰ" OR "ᎠᎠ" OR "Straße"'


def test_bm25_over_the_real_view_with_hostile_queries(memlog_home: Path) -> None:
    seed(
        memlog_home,
        entry(
            "Parser anti-patterns", "Never hand-roll a parser: use the grammar.", "anti-patterns"
        ),
        entry("Deploys", "Deploy on Tuesdays with a canary.", "patterns"),
    )
    catch_up(memlog_home, HASHING.space)
    with reading.Snapshot(Home(memlog_home)) as view:
        found = view.candidates(("anti-patterns", "heuristics", "patterns"), datetime.now(UTC))
        where = view.rowid_positions(found.ids)
        parser = found.positions()[content_hash("Never hand-roll a parser: use the grammar.")]
        for query in (
            'anti-patterns: "parser',
            "NEAR(parser",
            "name:parser",
            "-parser*",
            "^PARSER",
        ):
            scores = view.bm25(query, where)
            assert scores[parser] > 0 and scores[1 - parser] == 0, query
        assert not view.bm25("AND OR NOT", where).any()


@given(st.lists(st.tuples(st.sampled_from([0, 1, 0xDEADBEEF, 0xFFFFFFFF]),
                         st.integers(0, 2**32 - 1)), max_size=60),
       st.randoms())  # fmt: skip
def test_ids_sort_by_their_two_halves_as_strings_do(
    halves: list[tuple[int, int]], rng: Any
) -> None:
    """16-hex-digit ids sort as two big-endian numbers, the second one only among the ids
    that share the first (few first halves here: many ties)."""
    ids = sorted({f"{high:08x}{low:08x}" for high, low in halves})
    shuffled = ids[:]
    rng.shuffle(shuffled)
    array = np.array([i.encode() for i in shuffled], dtype="S16")
    assert [shuffled[n] for n in reading.id_order(array)] == ids


def test_packed_ids_read_as_a_list_of_str() -> None:
    ids = reading.PackedIds(b"0123456789abcdef" + b"fedcba9876543210")
    assert len(ids) == 2 and ids[1] == "fedcba9876543210" and ids[-2] == "0123456789abcdef"
    assert list(ids) == ["0123456789abcdef", "fedcba9876543210"] and ids[:1] == [ids[0]]
    with pytest.raises(IndexError):
        ids[2]
