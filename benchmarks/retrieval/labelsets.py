"""Label sets of the retrieval benchmark: a corpus, queries, pools and graded labels.

Each set is a folder ``sets/<name>/`` holding ``set.json``::

    {"name": "s1-iflow-08a38d02",
     "kind": "context" | "prompt",
     "corpus": "fixture:knowledge-bank-08a38d02" | "corpora/<folder>",
     "queries": "queries.jsonl",
     "features": "fixture:iflow-features-08a38d02"}     (contexts read from real features)

``fixture:`` names a folder of ``tests/fixtures``; any other path is
relative to ``benchmarks/retrieval``.  A query line is one of

- a context read from a real feature folder: ``{"qid", "feature"}``;
- a context given field by field: ``{"qid", "topic", "slug", "title", "spec", "phase",
  "changed_files"}`` (the spec's markdown, or its prose);
- a prompt: ``{"qid", "topic", "prompt"}``, the user's first message.

A context becomes what the hook sees: its spec and ``.meta.json`` are
written into a project's ``docs/features/<slug>/`` and read by memlog's own
``feature_of``, the changed files are the git signal (in the order git
lists them: by path, at most 20), and the text ranked
is ``Signals.text`` (the hook's), so every ranking here ranks what the hook
and ``memlog search`` rank.  A prompt is its own text.

Labels are ``labels/<name>.jsonl``, one line per judged (query, entry):
``{"qid", "id", "grade", "entry_name", "category"}``, grade 0, 1 or 2.
Unlisted entries count as 0; a set labelled by pooling lists its zeros too,
so what was judged is known.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from memlog.git import MAX_CHANGED
from memlog.projections.markdown_view.kb_parser import ParsedEntry, parse_file
from memlog.retrieval.context import Signals, feature_of

HERE = Path(__file__).resolve().parent
SETS = HERE / "sets"
REPO = HERE.parents[1]
FIXTURES = REPO / "tests" / "fixtures"


@dataclass(frozen=True)
class Query:
    """One query of a set, as every ranking sees it."""

    qid: str
    topic: str
    kind: str  # "context" or "prompt"
    #: the text the hook ranks (a context's ``Signals.text("fused")``) or the prompt
    text: str
    #: the D3 query (``Signals.text("d3")``) or the prompt
    d3: str
    #: what a judge reads: the context's parts, or the prompt
    shown: dict[str, object] = field(default_factory=dict)
    #: a context's signals as the hook reads them (None for a prompt)
    signals: Signals | None = None


@dataclass(frozen=True)
class LabelSet:
    name: str
    kind: str
    folder: Path
    corpus: Path
    queries_file: Path
    features: Path | None

    def labels(self) -> dict[str, Path]:
        """The label files present, by label name (``s1-reading``, ``s1-pooled`` …)."""
        folder = self.folder / "labels"
        return {p.stem: p for p in sorted(folder.glob("*.jsonl"))} if folder.is_dir() else {}

    @property
    def key_file(self) -> Path:
        return self.folder / "pool-key.jsonl"


def resolve(spec: str) -> Path:
    if spec.startswith("fixture:"):
        return FIXTURES / spec.removeprefix("fixture:")
    return HERE / spec


def load_set(folder: Path) -> LabelSet:
    data = json.loads((folder / "set.json").read_text(encoding="utf-8"))
    features = data.get("features")
    return LabelSet(
        name=data["name"],
        kind=data["kind"],
        folder=folder,
        corpus=resolve(data["corpus"]),
        queries_file=folder / data["queries"],
        features=resolve(features) if features else None,
    )


def all_sets(root: Path = SETS) -> list[LabelSet]:
    """Every set whose queries are present, in name order."""
    found = [load_set(p.parent) for p in sorted(root.glob("*/set.json"))]
    return [s for s in found if s.queries_file.exists()]


def read_jsonl(path: Path) -> Iterator[dict[str, object]]:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            yield json.loads(line)


# -- queries ------------------------------------------------------------------------------------


def queries(labelset: LabelSet) -> list[Query]:
    """The set's queries, each built as the hook or a prompt would give it."""
    with tempfile.TemporaryDirectory(prefix="memlog-labelset-") as scratch:
        return [query_of(row, labelset, Path(scratch)) for row in read_jsonl(labelset.queries_file)]


def query_of(row: dict[str, object], labelset: LabelSet, scratch: Path) -> Query:
    qid, topic = str(row["qid"]), str(row.get("topic") or "")
    if "prompt" in row:
        prompt = str(row["prompt"])
        return Query(qid, topic, "prompt", prompt, prompt, {"prompt": prompt})
    if "feature" in row:
        assert labelset.features is not None, f"{labelset.name}: no features folder"
        folder = labelset.features / str(row["feature"])
        files: tuple[str, ...] = ()
    else:
        folder = write_feature(row, scratch)
        files = changed(row.get("changed_files") or [])  # type: ignore[arg-type]
    signals = Signals(feature_of(folder), files)
    text, d3 = signals.text("fused") or "", signals.text("d3") or ""
    return Query(qid, topic, "context", text, d3, shown_context(signals), signals)


def changed(files: list[str]) -> tuple[str, ...]:
    """The changed files as the hook reads them from git: in path order, each once, at most
    ``MAX_CHANGED``."""
    return tuple(dict.fromkeys(sorted(str(f) for f in files)))[:MAX_CHANGED]


def write_feature(row: dict[str, object], scratch: Path) -> Path:
    """A feature folder for a context given field by field, as a project would hold it."""
    slug = str(row["slug"])
    folder = scratch / str(row["qid"]) / "docs" / "features" / slug
    folder.mkdir(parents=True, exist_ok=True)
    spec, title = str(row.get("spec") or ""), str(row.get("title") or "")
    if title and not any(line.startswith("# ") for line in spec.splitlines()):
        spec = f"# {title}\n\n{spec}"
    (folder / "spec.md").write_text(spec + "\n", encoding="utf-8")
    meta = {"slug": slug, "status": "active", "lastCompletedPhase": row.get("phase") or None}
    (folder / ".meta.json").write_text(json.dumps(meta), encoding="utf-8")
    return folder


def shown_context(signals: Signals) -> dict[str, object]:
    """A context's parts as the hook reads them (what a judge is shown)."""
    feature = signals.feature
    assert feature is not None
    return {
        "slug": feature.slug,
        "title": feature.title,
        "phase": feature.phase,
        "changed files": list(signals.files),
        "spec prose": feature.summary or feature.description,
    }


# -- corpus -------------------------------------------------------------------------------------


def corpus_files(corpus: Path) -> list[Path]:
    return sorted(corpus.glob("*.md")) if corpus.is_dir() else [corpus]


def corpus_entries(corpus: Path) -> dict[str, ParsedEntry]:
    """Every entry of the corpus's knowledge-bank files, by id (memlog's parser)."""
    found: dict[str, ParsedEntry] = {}
    for path in corpus_files(corpus):
        for parsed in parse_file(path).entries:
            found.setdefault(parsed.content_hash, parsed)
    return found


def copy_corpus(source: Path, target: Path) -> None:
    """A copy of a corpus folder's markdown files, byte for byte."""
    target.mkdir(parents=True, exist_ok=True)
    for path in corpus_files(source):
        shutil.copyfile(path, target / path.name)


# -- labels -------------------------------------------------------------------------------------


def read_labels(
    path: Path, known: set[str], names: dict[tuple[str, str], str]
) -> dict[str, dict[str, int]]:
    """Graded ids per query; a label whose id the corpus gives otherwise (an entry whose
    description held an inline comment) is found by category and name."""
    grades: dict[str, dict[str, int]] = {}
    for row in read_jsonl(path):
        entry = str(row["id"])
        if entry not in known:
            entry = names.get((str(row.get("category")), str(row.get("entry_name"))), "")
        if entry:
            mine = grades.setdefault(str(row["qid"]), {})
            mine[entry] = max(int(row["grade"]), mine.get(entry, 0))  # type: ignore[call-overload]
    return grades
