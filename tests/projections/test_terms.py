"""Terms for lexical retrieval: identifier splits, function words, Porter stems."""

from __future__ import annotations

from memlog.projections.terms import QUERY_K3, query_units, term_counts, terms, words


def test_identifiers_are_split_on_symbols_and_case() -> None:
    assert words("hooks/session_start.py type_id a-b.c") == [
        "hooks", "session", "start", "py", "type", "id",
    ]  # fmt: skip
    assert words("WorkflowStateEngine") == ["workflow", "state", "engine", "workflowstateengine"]
    assert words("getHTTPResponse fts5") == [
        "get",
        "httpresponse",
        "gethttpresponse",
        "fts",
        "fts5",
    ]
    assert words("SQLite") == ["sqlite"]  # an acronym prefix is not broken up


def test_numbers_short_words_and_function_words_are_dropped() -> None:
    assert words("The 017 feature of a 3.2 x release, and its tests") == [
        "feature", "release", "tests",
    ]  # fmt: skip


def test_porter_stems_join_inflections() -> None:
    assert terms("migrations migrating migrated") == ["migrat"] * 3
    assert terms("Caching caches cached") == ["cach"] * 3
    assert terms("retries retried") == ["retri", "retri"]


def test_counts_add_up_over_fields() -> None:
    counts = term_counts(["Retry the lock", "", "lock retries"])
    assert counts == {"retri": 2, "lock": 2}


def test_a_query_reads_words_alone_and_identifiers_together() -> None:
    units = query_units("Rename legacy_id in InvoiceSerializer: the invoice, invoices, invoice.")
    assert [u.terms for u in units] == [
        ("renam",), ("legaci", "id"), ("invoic", "serial", "invoiceseri"), ("invoic",),
    ]  # fmt: skip
    assert [u.weight for u in units] == [1.0, 1.0, 1.0, 1.5]  # three times: (k3 + 1)·3/(k3 + 3)


def test_repeats_saturate() -> None:
    weights = [query_units(" ".join(["lock"] * n))[0].weight for n in (1, 2, 4, 100)]
    assert weights == sorted(weights) and weights[0] == 1.0 and weights[-1] < 1.0 + QUERY_K3
    assert query_units("") == [] and query_units("the 017 a") == []
