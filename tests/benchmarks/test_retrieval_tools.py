"""The retrieval benchmark's tools: queries read as the hook reads them, blind pools with a
key, grades checked and imported through it, and the figures the benchmark reports."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from memlog.home import Home
from memlog.retrieval.context import collect
from memlog.tests.retrieval.test_context import commit, git
from memlog.tests.support import REPO

sys.path.insert(0, str(REPO / "benchmarks" / "retrieval"))
import calibration  # noqa: E402
import labels  # noqa: E402
import labelsets  # noqa: E402
import pool  # noqa: E402
import rankers  # noqa: E402
from bm25 import Recipe, bm25  # noqa: E402

sys.path.insert(0, str(REPO / "benchmarks"))
import bench_retrieval  # noqa: E402

LESSONS = {
    "anti-patterns": [
        ("Anti-Pattern: Unbounded Retry Loops", "Retrying a failed upload forever hides outages."),
        (
            "Anti-Pattern: Parsing Before Validating",
            "Parsing a whole invoice file before checking it.",
        ),
        ("Anti-Pattern: Shared Test Database", "Parallel workers writing one database flake."),
    ],
    "heuristics": [
        (
            "Cap Backoff at a Minute",
            "Exponential backoff for uploads stops growing at sixty seconds.",
        ),
        ("Stream Large Files", "Read uploaded files line by line instead of loading them whole."),
        ("Pin the Clock in Tests", "Inject the clock so reminders are tested without sleeping."),
    ],
    "patterns": [
        (
            "Pattern: Idempotent Upload Keys",
            "Give every upload a key so a retry never duplicates it.",
        ),
        ("Pattern: Expand Then Contract", "Add the new column, backfill, then drop the old one."),
        (
            "Pattern: Quarantine Flaky Cases",
            "Move a flaky case aside with an owner and a deadline.",
        ),
    ],
}
CONTEXT = {
    "qid": "c1", "topic": "uploads", "slug": "042-resumable-uploads",
    "title": "# Resumable Uploads",
    "spec": "# Resumable Uploads\n\nLarge invoice uploads fail halfway and users start over. "
            "Uploads must resume after a dropped connection without duplicating lines.\n",
    "phase": "design", "changed_files": ["ledger/uploads/resume_handler.py", "docs/uploads.md"],
}  # fmt: skip
PROMPT = {"qid": "p1", "topic": "tests", "prompt": "the reminder test flakes on CI, can you look"}


def write_corpus(folder: Path) -> None:
    folder.mkdir(parents=True)
    for category, lessons in LESSONS.items():
        blocks = [f"### {name}\n{text}\n- Confidence: medium\n" for name, text in lessons]
        (folder / f"{category}.md").write_text(f"# {category}\n\n" + "\n".join(blocks))


def make_set(root: Path, name: str, kind: str, rows: list[dict[str, object]]) -> labelsets.LabelSet:
    folder = root / "sets" / name
    folder.mkdir(parents=True)
    (folder / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    corpus = root / "corpus"
    if not corpus.exists():
        write_corpus(corpus)
    spec = {"name": name, "kind": kind, "corpus": str(corpus), "queries": "queries.jsonl"}
    (folder / "set.json").write_text(json.dumps(spec))
    return labelsets.load_set(folder)


@pytest.fixture(autouse=True)
def local_keywords(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMLOG_KEYWORD_PROVIDER", "local")


def test_a_context_is_ranked_as_the_text_the_hook_makes_of_it(tmp_path: Path) -> None:
    labelset = make_set(tmp_path, "c", "context", [CONTEXT])
    [query] = labelsets.queries(labelset)
    # the same feature in a real project, its files changed by the last commits
    root = tmp_path / "project"
    folder = root / "docs" / "features" / "042-resumable-uploads"
    folder.mkdir(parents=True)
    (folder / "spec.md").write_text(str(CONTEXT["spec"]) + "\n")
    meta = {"slug": CONTEXT["slug"], "status": "active", "lastCompletedPhase": "design"}
    (folder / ".meta.json").write_text(json.dumps(meta))
    git(root, "init", "-q")
    commit(root, "README.md")
    commit(root, *CONTEXT["changed_files"])  # type: ignore[misc]
    hook = collect(root)
    assert query.text == hook.text("fused") and query.d3 == hook.text("d3")
    assert query.shown["changed files"] == sorted(CONTEXT["changed_files"])  # type: ignore[type-var]
    assert "Resumable Uploads" in query.text and "Files: docs/uploads.md ledger" in query.text


def test_the_pool_is_blind_shuffled_and_keyed(tmp_path: Path) -> None:
    labelset = make_set(tmp_path, "c", "context", [CONTEXT, {**CONTEXT, "qid": "c2"}])
    out, cache = tmp_path / "pools", tmp_path / "cache"
    count, items = pool.write_pool(labelset, cache, out, depth=3, seed=7)
    text = (out / "c.md").read_text()
    key = list(labelsets.read_jsonl(labelset.key_file))
    assert count == 2 and key[0]["rankers"] == list(rankers.CANDIDATES)
    rows = key[1:]
    assert sum(len(r["items"]) for r in rows) == items  # type: ignore[arg-type]
    corpus = rankers.prepare(labelset, cache)
    signals = rankers.signals(corpus, labelsets.queries(labelset), cache)
    for row, signal in zip(rows, signals, strict=True):
        pooled = {i for r in rankers.CANDIDATES.values()
                  for i in rankers.ranked_ids(corpus, r(corpus, signal), 3)}  # fmt: skip
        assert set(row["items"].values()) == pooled  # type: ignore[attr-defined]
        assert sorted(map(int, row["items"])) == list(range(1, len(pooled) + 1))  # type: ignore[arg-type]
    for name in rankers.CANDIDATES:  # no ranking named, no score, no order hint
        assert name not in text.lower() or name in ("lexical", "vector")
    assert "score" not in text.lower() and "rank" not in text.lower()
    first = rows[0]["items"]["1"]  # type: ignore[index]
    assert corpus.entries[first].description in text
    again = tmp_path / "again"
    pool.write_pool(labelset, cache, again, depth=3, seed=7)
    assert (again / "c.md").read_text() == text  # the same seed, the same file
    other = [pool.shuffled(sorted(rows[0]["items"].values()), s, "c", "c1") for s in range(5)]  # type: ignore[attr-defined]
    assert len({tuple(o) for o in other}) > 1


def test_a_prompt_pool_shows_the_prompt(tmp_path: Path) -> None:
    labelset = make_set(tmp_path, "p", "prompt", [PROMPT])
    pool.write_pool(labelset, tmp_path / "cache", tmp_path / "pools", depth=2, seed=1)
    text = (tmp_path / "pools" / "p.md").read_text()
    assert "> the reminder test flakes on CI, can you look" in text
    assert "first message a developer types" in text and "Q01 item 1" in text


def test_grades_are_checked_and_imported_through_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    labelset = make_set(tmp_path, "c", "context", [CONTEXT])
    pool.write_pool(labelset, tmp_path / "cache", tmp_path / "pools", depth=2, seed=1)
    key = labels.read_key(labelset)
    items = sorted(int(i) for i in key["Q01"]["items"])  # type: ignore[union-attr]
    lines = [f"Q01 {i} {i % 3}" for i in items]
    grades, problems = labels.parse("# judge A\n" + "\n".join(lines) + "\n", key)
    assert problems == [] and grades[("Q01", items[0])] == items[0] % 3
    bad = "\n".join([*lines[1:], f"Q01 {items[1]} 2", "Q01 999 1", "Q02 1 1", "Q01 x 3"])
    _, problems = labels.parse(bad, key)
    assert any("graded again" in p for p in problems)
    assert any("no item 999" in p for p in problems) and any(
        "Q02 has no item" in p for p in problems
    )
    assert any("expected 'QUERY ITEM GRADE'" in p for p in problems)
    assert any(f"items without a grade: [{items[0]}]" in p for p in problems)
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_text("\n".join(lines))
    second.write_text("\n".join(f"Q01 {i} {min(i % 3 + 1, 2)}" for i in items))
    argv = ["labels.py", "import", "c", str(first), str(second), "--name", "c-pooled"]
    monkeypatch.setattr(sys, "argv", argv)
    monkeypatch.setattr(labelsets, "SETS", labelset.folder.parent)
    assert labels.main() == 0
    written = list(labelsets.read_jsonl(labelset.folder / "labels" / "c-pooled.jsonl"))
    assert len(written) == len(items) and {r["qid"] for r in written} == {"c1"}
    assert {int(r["grade"]) for r in written} <= {0, 1, 2}  # type: ignore[call-overload]
    assert any(r["grade"] == 0 for r in written)  # zeros are kept: what was judged is known


def test_agreement_and_merging() -> None:
    a = {("Q01", 1): 0, ("Q01", 2): 1, ("Q01", 3): 2, ("Q01", 4): 2}
    assert labels.kappa(a, a) == 1.0
    b = {("Q01", 1): 2, ("Q01", 2): 1, ("Q01", 3): 0, ("Q01", 4): 0}
    assert labels.kappa(a, b) < 0  # worse than chance
    assert labels.merged([a, b]) == {("Q01", 1): 0, ("Q01", 2): 1, ("Q01", 3): 0, ("Q01", 4): 0}
    assert labels.merged([a, b, a]) == a


def test_figures_by_hand() -> None:
    grades = {"a": 2, "b": 1, "c": 0}
    assert rankers.ndcg(["a", "b", "x"], grades) == pytest.approx(1.0)
    ideal = 2 + 1 / np.log2(3)
    assert rankers.ndcg(["x", "a"], grades) == pytest.approx((2 / np.log2(3)) / ideal)
    assert rankers.recall(["x", "b"], grades) == 0.5 and rankers.recall([], {}) == 0.0
    assert rankers.judged(["a", "c", "x", "y"], grades, k=4) == 0.5
    low, high = rankers.bootstrap([0.2, 0.4, 0.6, 0.8])
    assert low < 0.5 < high
    assert rankers.paired_bootstrap([0.5, 0.5], [0.5, 0.5]) == (0.0, 0.0)


def test_a_plateau_prefers_the_plain_recipe() -> None:
    points = [(0.25, 0.05, 1.0, "lexical"), (1.0, 0.0, 0.0, "lexical"), (2.0, 0.0, 0.0, "fts5")]
    train = [np.array([[0.50, 0.52], [0.49, 0.51], [0.30, 0.40]])]
    assert bench_retrieval.choose(train, points, 0.0) == 0  # the peak
    assert bench_retrieval.choose(train, points, 0.02) == 1  # the plain 1:1 within 0.02
    assert bench_retrieval.choose(train, points, 0.001) == 0
    folds = bench_retrieval.folds_of(
        [labelsets.Query(str(n), t, "prompt", "x", "x") for n, t in enumerate("aabbc")]
    )
    assert [f.tolist() for f in folds] == [[0, 1], [2, 3], [4]]


def test_one_standard_error_is_the_plateau_of_the_best() -> None:
    points = [(0.25, 0.05, 1.0, "lexical"), (1.0, 0.0, 1.0, "lexical")]
    first = np.array([[0.6, 0.8, 0.7], [0.5, 0.8, 0.6]])  # best: point 0, mean 0.7
    second = np.array([[0.4, 0.6], [0.36, 0.56]])
    # each set's variance of the best's mean, added, square-rooted, over the two sets
    se = np.sqrt(np.var([0.6, 0.8, 0.7], ddof=1) / 3 + np.var([0.4, 0.6], ddof=1) / 2) / 2
    assert bench_retrieval.width([first, second], 0, "se") == pytest.approx(se)
    assert bench_retrieval.width([first, second], 0, 0.02) == 0.02
    # point 1 is 0.053 below the best: outside a plateau of 0.02, inside one of se (0.058)
    assert bench_retrieval.choose([first, second], points, 0.02) == 0
    assert bench_retrieval.choose([first, second], points, "se") == 1
    assert bench_retrieval.plateau_of("se") == "se" and bench_retrieval.plateau_of("0.01") == 0.01


def test_a_prompts_recall_by_hand() -> None:
    beta = np.array([0.0, 0.0, 1.0])  # relevance = logistic(coverage): 0.5 at coverage 0
    rows = [
        [(0.1, 1.0, 2), (0.1, 1.0, 0), (0.1, -1.0, 1), (0.1, 1.0, 1), (0.1, 1.0, 2)],
        [(0.1, -1.0, 1), (0.1, -2.0, 0)],
    ]
    shown = calibration.shown_at(rows, beta, [0, 1], 0.5)
    # the first query shows its first three passing (grades 2, 0, 1), the second nothing;
    # 4 relevant entries were among the first ten of the first and 1 of the second
    assert shown == {"shown": 3, "prompts": 1, "precision": 2 / 3, "precision_2": 1 / 3,
                     "recall": 2 / 5}  # fmt: skip


def test_the_benchmarks_own_bm25_is_the_packed_index(tmp_path: Path) -> None:
    labelset = make_set(tmp_path, "c", "context", [CONTEXT])
    corpus = rankers.prepare(labelset, tmp_path / "cache")
    from memlog.projections.sqlite_view.reading import Snapshot

    texts = [
        "Parsing invoice files: parse_invoice_file before validating, retry_upload retry",
        "UnboundedRetry loops, retrying uploads forever",
        "flaky shared test database",
    ]
    with Snapshot(Home(corpus.home)) as view:
        for text in texts:
            packed = view.lexical(text, corpus.ids)
            assert packed is not None and packed.any()
            ours = bm25(corpus.listed, text, Recipe())
            assert ours.tolist() == pytest.approx(packed.tolist(), rel=1e-5)
    apart = bm25(corpus.listed, texts[0], Recipe(groups=False, query_counts="repeats"))
    assert apart.tolist() != pytest.approx(bm25(corpus.listed, texts[0], Recipe()).tolist())


def test_every_set_is_reported_and_weights_are_chosen_across_sets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The machinery on two small labelled sets and one without labels (the grades here
    are the test's own, to drive the code, not judgements)."""
    first = make_set(tmp_path, "a", "context", [CONTEXT, {**CONTEXT, "qid": "c2", "topic": "t"}])
    second = make_set(tmp_path, "b", "prompt", [PROMPT, {**PROMPT, "qid": "p2", "topic": "u"}])
    bare = make_set(tmp_path, "c", "prompt", [PROMPT])
    cache = tmp_path / "cache"
    for labelset, pooled in ((first, True), (second, False)):
        corpus = rankers.prepare(labelset, cache)
        rows = [
            {"qid": q.qid, "id": i, "grade": (n + k) % 3, "entry_name": "", "category": ""}
            for k, q in enumerate(labelsets.queries(labelset))
            for n, i in enumerate(corpus.ids)
            if pooled or (n + k) % 3
        ]
        folder = labelset.folder / "labels"
        folder.mkdir()
        (folder / f"{labelset.name}-pooled.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in rows)
        )
    found = bench_retrieval.load([first, second, bare], cache)
    assert [j.name for j in found] == ["a (a-pooled)", "b (b-pooled)"]
    assert found[0].lists_zeros and not found[1].lists_zeros
    figures = bench_retrieval.table(found[0])
    assert set(figures) == set(rankers.CANDIDATES)
    d3 = figures["d3"]
    assert d3["vs_d3"] == 0.0 and d3["wins"] == d3["losses"] == 0  # type: ignore[index]
    assert 0.0 <= figures["fused"]["ndcg@10"] <= 1.0  # type: ignore[index]
    chosen = bench_retrieval.leave_one_set_out(found, plateau="se")
    assert set(chosen) == {"a (a-pooled)", "b (b-pooled)", "on all sets"}
    inside = bench_retrieval.within_set(found[0], plateau=0.0)
    assert len(inside["picks"]) == 2  # type: ignore[arg-type]  # one per topic
    floor = bench_retrieval.calibrate(found)
    assert set(floor) == {"context", "prompt", "prompt recall"}
    out = capsys.readouterr().out
    assert "c: 1 prompt queries, no labels yet: not pooled yet" in out
    assert "leave one set out" in out and "leave one topic out" in out
