"""The default query: what real specs offer (fixtures from the iflow repository)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memlog.retrieval import spec_text
from memlog.retrieval.context import (
    Feature,
    Signals,
    active_feature,
    context_query,
    feature_of,
    path_words,
)
from memlog.tests.support import FIXTURES

FEATURES = FIXTURES / "iflow-features-08a38d02"


def test_title_loses_its_label() -> None:
    assert spec_text.title("# Spec: Entity UUID Primary Key Migration\n") == (
        "Entity UUID Primary Key Migration"
    )
    assert spec_text.title("# Feature 089: 088 QA Round 3 Hotfix\n") == "088 QA Round 3 Hotfix"
    assert spec_text.title("# Specification: Add-to-Backlog Command") == "Add-to-Backlog Command"
    assert spec_text.title("# PRD\n\ntext") == "" and spec_text.title("no heading") == ""


def test_prose_skips_headings_tables_lists_code_and_metadata() -> None:
    text = (
        "# Spec: X\n\n**Feature:** 021-x\n**PRD:** docs/x.md\n\n## Overview\n"
        "Add a diagram to the entity page, with nodes that link to entities.\n\n"
        "| a | b |\n|---|---|\n\n- a list item that is long enough to count\n\n"
        "```\ncode that is long enough to look like prose here\n```\n\n"
        "Too short.\n\nThe second paragraph explains the fallback when rendering fails.\n"
    )
    assert spec_text.prose(text) == (
        "Add a diagram to the entity page, with nodes that link to entities. "
        "The second paragraph explains the fallback when rendering fails."
    )
    assert spec_text.prose(text, max_words=4) == "Add a diagram to"


@pytest.mark.parametrize(
    ("folder", "title", "opening"),
    [
        ("001-entity-uuid-primary-key-migrat", "Entity UUID Primary Key Migration",
         "The entity registry uses `type_id`"),
        ("007-add-to-backlog-command", "Add-to-Backlog Command", "A slash command that captures"),
        ("021-lineage-dag-visualization", "Lineage DAG Visualization",
         "Add a Mermaid.js-rendered DAG diagram"),
        ("075-phase-context-accumulation", "Phase Context Accumulation",
         "When backward travel occurs"),
    ],
)  # fmt: skip
def test_real_specs_give_title_and_prose(folder: str, title: str, opening: str) -> None:
    feature = feature_of(FEATURES / folder)
    assert feature.title == title
    assert feature.summary.startswith(opening)
    assert 20 < len(feature.summary.split()) <= spec_text.PROSE_WORDS
    query = context_query(Signals(feature, ()))
    assert query is not None and query.startswith(feature.slug.replace("-", " ") + ". " + title)
    assert "Phase:" not in query and feature.phase not in query.split(". ")[0]


def test_the_d3_query_of_the_same_spec_is_nearly_empty() -> None:
    feature = feature_of(FEATURES / "001-entity-uuid-primary-key-migrat")
    assert Signals(feature, ()).query == "entity-uuid-primary-key-migrat. Phase: finish"


def test_path_words_drop_boilerplate() -> None:
    files = ("src/memlog/retrieval/ranking.py", "tests/test_ranking.py", "docs/README.md", "a/1.py")
    assert path_words(files) == ["memlog", "retrieval", "ranking", "README"]


def test_context_query_of_an_active_feature_with_changed_files(tmp_path: Path) -> None:
    folder = tmp_path / "docs" / "features" / "031-csv-importer"
    folder.mkdir(parents=True)
    meta = {"slug": "csv-importer", "status": "active", "lastCompletedPhase": "design"}
    (folder / ".meta.json").write_text(json.dumps(meta))
    (folder / "spec.md").write_text("# Spec: CSV Importer\n\n## Problem\nImport large CSV files "
                                    "row by row without loading them whole.\n")  # fmt: skip
    feature = active_feature(tmp_path)
    assert feature == Feature(
        "csv-importer", "design", "", "CSV Importer",
        "Import large CSV files row by row without loading them whole.",
    )  # fmt: skip
    query = context_query(Signals(feature, ("src/importer/csv_reader.py",)))
    assert query == (
        "csv importer. CSV Importer. Import large CSV files row by row without loading them "
        "whole.. importer. csv. reader"
    ).replace("importer. csv. reader", "importer csv reader")
    assert context_query(Signals(None, ())) is None
