"""Pools a label set's queries for blind judging: a judge's file and a key.

    python benchmarks/retrieval/pool.py SET [SET …] [--out build/retrieval-pools] [--cache DIR]
                                        [--depth 20] [--seed 2108]

For each query, the first ``--depth`` entries of every candidate ranking
(``rankers.CANDIDATES``: lexical alone, vector alone, D3, fused as shipped,
FTS5 with and without a stemmer, the z-fusions) are pooled, each entry
once, and shuffled with a seed of the set, the query and ``--seed``.

The judge's file (``OUT/<set>.md``) holds, per query, only what a judge
needs: the query as the ranking sees it (the context the hook reads, or
the prompt) and each pooled entry's full text (its kind, name, description
and metadata lines, as its knowledge bank has it) under an item number.
No ranking's name, no score, no order: items are numbered in shuffled
order.  The key (``sets/<set>/pool-key.jsonl``: the pooling's settings, then a
line per query) maps item numbers to entry ids and says which rankings
(their places in the settings' list) brought each; judges never read it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import labelsets  # noqa: E402
import rankers  # noqa: E402

# The judges' files are written outside the repository's tracked tree: judges read
# them and nothing else (the key stays in the set's folder).
DEFAULT_OUT = Path(__file__).resolve().parents[2] / "build" / "retrieval-pools"
DEFAULT_CACHE = Path.home() / ".cache" / "memlog-bench-retrieval"
SEED = 2108
KINDS = {"anti-patterns": "anti-pattern", "heuristics": "heuristic", "patterns": "pattern"}

HEADER = """\
# Relevance judgements: {name}

{count} queries, {items} items to judge.  Corpus: {corpus_size} lessons learned (anti-patterns,
heuristics, patterns) that a memory tool can show a developer.

## What to judge

{situation}  For every item under a query, judge how useful that
lesson would be to the developer in that situation:

- **2 — directly useful.** The lesson's subject is this work's subject (the same component,
  technology, kind of change or failure mode) and knowing it would change what the developer
  does.
- **1 — somewhat useful.** It applies to part of the work or to a neighbouring concern, or it
  is a process lesson that this kind of work clearly triggers.
- **0 — not useful.** Unrelated, or so generic that it would not change anything here.

Queries are independent: work through them one at a time.  Judge each item on its own, from
the query text and the item text only.  The items are in
random order; there is no hint of which are likely to be relevant, and most are not.  A lesson
that names the feature it was learned in is judged by its subject, like any other.  Do not
search the corpus, do not look anything up, and do not open any other file of the benchmark.
When unsure between two grades, take the lower one.

## How to write the grades

One line per item, `QUERY ITEM GRADE`, separated by spaces, for example:

    Q01 7 2
    Q01 8 0

Every item of every query gets exactly one line, with grade 0, 1 or 2; blank lines and lines
starting with `#` are ignored.  Write them to `grades/{name}.<your-name>.txt` beside this file.
Check the file with `python benchmarks/retrieval/labels.py check {name} FILE` (run in a
memlog checkout; it reads the key, you do not).
"""

SITUATIONS = {
    "context": (
        "Each query is the context a memory hook reads when a developer starts a coding\n"
        "session: the feature being worked on (its slug, its spec's title and opening prose,\n"
        "the last phase completed) and the files the recent commits changed."
    ),
    "prompt": (
        "Each query is the first message a developer types to their coding assistant; the\n"
        "memory tool may show a few lessons beside it."
    ),
}


def pool_ids(corpus: rankers.Corpus, signals: rankers.Signals, depth: int) -> dict[str, list[str]]:
    """Each pooled entry id with the rankings that brought it, in first-brought order."""
    found: dict[str, list[str]] = {}
    for name, ranker in rankers.CANDIDATES.items():
        for entry in rankers.ranked_ids(corpus, ranker(corpus, signals), depth):
            found.setdefault(entry, []).append(name)
    return found


def shuffled(ids: list[str], seed: int, labelset: str, qid: str) -> list[str]:
    order = sorted(ids)
    random.Random(f"{seed}:{labelset}:{qid}").shuffle(order)
    return order


def show_query(query: labelsets.Query) -> list[str]:
    if query.kind == "prompt":
        return ["The developer's message:", "", *quoted(query.text)]
    shown = query.shown
    files = ", ".join(f"`{f}`" for f in shown["changed files"]) or "(none)"  # type: ignore[attr-defined]
    return [
        "The context the hook reads:",
        "",
        f"- feature slug: `{shown['slug']}`",
        f"- spec title: {shown['title'] or '(none)'}",
        f"- last phase completed: {shown['phase'] or '(none)'}",
        f"- files changed by the recent commits: {files}",
        "- the spec's opening prose:",
        "",
        *quoted(str(shown["spec prose"]) or "(none)"),
    ]


def quoted(text: str) -> list[str]:
    return [f"> {line}" if line else ">" for line in text.splitlines()]


def show_entry(entry_id: str, corpus: rankers.Corpus, parsed: dict[str, object]) -> list[str]:
    """The entry as its knowledge bank has it: header as a bold line, content hashes left out."""
    found = parsed.get(entry_id)
    kind = KINDS.get(corpus.entries[entry_id].category, corpus.entries[entry_id].category)
    if found is not None:
        lines = [ln for ln in found.raw.splitlines() if "Content-Hash:" not in ln]  # type: ignore[attr-defined]
        head = lines[0].removeprefix("### ").strip()
        return [f"({kind}) **{head}**", *(ln for ln in lines[1:] if ln.strip())]
    entry = corpus.entries[entry_id]
    return [f"({kind}) **{entry.name}**", entry.description, *(f"- {d}" for d in entry.details)]


def write_pool(
    labelset: labelsets.LabelSet, cache: Path, out: Path, depth: int, seed: int
) -> tuple[int, int]:
    """Pools the set; writes the judge's file and the key; (queries, items)."""
    queries = labelsets.queries(labelset)
    corpus = rankers.prepare(labelset, cache)
    signals = rankers.signals(corpus, queries, cache)
    parsed: dict[str, object] = dict(labelsets.corpus_entries(labelset.corpus))
    names = list(rankers.CANDIDATES)
    key: list[dict[str, object]] = [
        {"set": labelset.name, "depth": depth, "seed": seed, "rankers": names}
    ]
    body: list[str] = []
    total = 0
    for n, (query, signal) in enumerate(zip(queries, signals, strict=True), start=1):
        label = f"Q{n:02d}"
        brought = pool_ids(corpus, signal, depth)
        items = shuffled(list(brought), seed, labelset.name, query.qid)
        numbered = list(enumerate(items, start=1))
        key.append({
            "query": label, "qid": query.qid,
            "items": {str(i): entry for i, entry in numbered},
            "brought_by": {str(i): [names.index(r) for r in brought[e]] for i, e in numbered},
        })  # fmt: skip
        body += ["", "---", "", f"## {label}", "", *show_query(query), "", f"{len(items)} items."]
        for i, entry in enumerate(items, start=1):
            body += ["", f"### {label} item {i}", "", *show_entry(entry, corpus, parsed)]
        total += len(items)
    header = HEADER.format(
        name=labelset.name, count=len(queries), items=total, corpus_size=len(corpus.ids),
        situation=SITUATIONS[labelset.kind],
    )  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{labelset.name}.md").write_text(header + "\n".join(body) + "\n", encoding="utf-8")
    lines = "".join(json.dumps(row) + "\n" for row in key)
    labelset.key_file.write_text(lines, encoding="utf-8")
    return len(queries), total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sets", nargs="+", help="set names (folders of benchmarks/retrieval/sets)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--depth", type=int, default=rankers.POOL_DEPTH)
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args()
    for name in args.sets:
        labelset = labelsets.load_set(labelsets.SETS / name)
        count, items = write_pool(labelset, args.cache, args.out, args.depth, args.seed)
        print(f"{name}: {count} queries, {items} items ({items / count:.1f} a query)")


if __name__ == "__main__":
    os.environ.setdefault("MEMLOG_KEYWORD_PROVIDER", "local")
    main()
