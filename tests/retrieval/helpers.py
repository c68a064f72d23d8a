"""Building logs and projects for retrieval tests: entries with vectors, fillers, requests."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from memlog.config import Config
from memlog.embeddings.hashing import HashingProvider
from memlog.eventlog.events import Observed, Reembedded, content_hash
from memlog.eventlog.log import EventLog
from memlog.home import Home
from memlog.projections.runner import catch_up
from memlog.projections.sqlite_view import store
from memlog.retrieval.request import Request
from memlog.workspace import Workspace

HASHING = Config(memory_embedding_provider="hashing")
#: the spec #024 ranking, kept exactly under ``memory_ranking: d3``
HASHING_D3 = Config(memory_embedding_provider="hashing", memory_ranking="d3")
HASHING_SPACE = ("hashing", "blake2b-words", 384)
HEADER = "## Engineering Memory (from knowledge bank)"
SECTION_TITLES = ("### Anti-Patterns to Avoid", "### Heuristics", "### Patterns to Follow")
_EMBEDDER = HashingProvider()


def vector_of(text: str, dims: int = 384) -> bytes:
    if dims == 384:
        return _EMBEDDER.embed(text, "document").astype("<f4").tobytes()
    values = np.random.default_rng(len(text)).standard_normal(dims).astype("<f4")
    return (values / np.linalg.norm(values)).astype("<f4").tobytes()


def entry(
    name: str,
    description: str,
    category: str = "patterns",
    project: str = "project-a",
    space: tuple[str, str, int] | None = HASHING_SPACE,
    **extra: Any,
) -> list[Any]:
    """An ``entry.observed`` event and, unless ``space`` is None, its vector event."""
    observed = Observed(
        name=name, description=description, category=category, project=project, **extra
    )
    events: list[Any] = [observed]
    if space is not None:
        provider, model, dims = space
        events.append(
            Reembedded(
                entry_id=observed.entry_id,
                provider=provider,
                model=model,
                dimensions=dims,
                vector=vector_of(f"{name} {description}", dims),
            )
        )
    return events


def seed(home: Path, *groups: list[Any]) -> None:
    EventLog(home).append([e for group in groups for e in group])


def filler(count: int, category: str, topic: str = "deployment", **extra: Any) -> list[Any]:
    words = ("blue", "green", "canary", "rollback", "health", "checks", "traffic", "regions")
    return [
        e
        for i in range(count)
        for e in entry(
            f"{topic} {category} {i}",
            f"During {topic} step {i} use {words[i % 8]} {words[(i + 3) % 8]} as {category} {i}.",
            category,
            **extra,
        )
    ]


def project(
    parent: Path, name: str, settings_yaml: str | None = None, spec: str | None = None
) -> Path:
    """A project folder (with ``.claude``), its config and, given a spec, an active feature."""
    root = parent / name
    (root / ".claude").mkdir(parents=True)
    if settings_yaml is not None:
        (root / ".claude" / "iflow-dev.local.md").write_text(f"---\n{settings_yaml}\n---\n")
    if spec is not None:
        feature = root / "docs" / "features" / "042-file-parser"
        feature.mkdir(parents=True)
        meta = {"slug": "file-parser", "status": "active", "lastCompletedPhase": "design"}
        (feature / ".meta.json").write_text(json.dumps(meta))
        (feature / "spec.md").write_text(f"# Spec\n\n{spec}\n\n## Details\n\nmore\n")
    return root


def make_request(home: Path, root: Path | None, config: Config = HASHING, **extra: Any) -> Request:
    return Request(Workspace(Home(home), root, config), deadline=time.monotonic() + 30, **extra)


def entry_headers(text: str) -> list[str]:
    """The ``### `` lines of a block that open entries (section titles left out)."""
    return [ln for ln in text.splitlines() if ln.startswith("### ") and ln not in SECTION_TITLES]


def live_entry(home: Path, entry_id: str) -> Any:
    catch_up(home, HASHING.space)
    with store.opened(home / "memory.db") as db:
        return store.load_entries(db, [entry_id])[entry_id]


PARSER = "Building a file parser needs error handling for every malformed line it reads."


LOCAL_AP = [
    "### Anti-Pattern: Working in Wrong Worktree\n"
    "Making changes in main worktree when a feature worktree exists.\n"
    "- Observed in: Feature #002\n"
    "- Cost: Had to stash and re-apply\n"
    "- Observation count: 2",
    "### Anti-Pattern: Skipping Reviews\n"
    "Merging without review leads to regressions.\n"
    "- Observed in: Feature #005\n"
    "- Confidence: high",
]
LOCAL_H = [
    "### Line Budget Management\n"
    "Target 90-95% of the SKILL.md budget.\n"
    "- Source: Feature #018\n"
    "- Confidence: low",
    "### Read Before Write\n"
    "Always read the target file before writing a parser.\n"
    "- Source: Feature #020\n"
    "- Confidence: high",
]
LOCAL_P = [
    "### Pattern: Thin Orchestrator\n"
    "Keep SKILL.md as a thin orchestrator.\n"
    "- Used in: Feature #018",
]
GLOBAL_AP = [
    "### Anti-Pattern: Skipping Reviews\n"
    "Merging without review leads to regressions.\n"
    f"- Content-Hash: sha256:{content_hash('Merging without review leads to regressions.')}\n"
    "- Source: project-a, Feature #005\n"
    "- Observation count: 3\n"
    "- Last observed: 2026-01-10\n"
    "- Tags: universal\n"
    "- Confidence: high",
    "### Anti-Pattern: Unpinned Dependencies\n"
    "Unpinned dependencies break builds without any code change.\n"
    "- Content-Hash: sha256:"
    f"{content_hash('Unpinned dependencies break builds without any code change.')}\n"
    "- Source: project-c, Feature #001\n"
    "- Observation count: 1\n"
    "- Last observed: 2026-02-01\n"
    "- Tags: universal\n"
    "- Confidence: medium",
]
GLOBAL_HEAD = (
    "# Global Anti-Patterns\n\nCross-project learnings promoted from retrospectives. "
    "Automatically managed by iflow.\nDo not edit manually — entries are updated during /finish.\n"
)


def knowledge_bank(root: Path, home: Path) -> None:
    bank = root / "docs" / "knowledge-bank"
    bank.mkdir(parents=True)
    heads = {
        "anti-patterns": "# Anti-Patterns\n\n## Known Anti-Patterns\n",
        "heuristics": "# Heuristics\n\n## Decision Heuristics\n",
        "patterns": "# Patterns\n\n## Development Patterns\n",
    }
    for name, blocks in (
        ("anti-patterns", LOCAL_AP),
        ("heuristics", LOCAL_H),
        ("patterns", LOCAL_P),
    ):
        (bank / f"{name}.md").write_text(heads[name] + "\n" + "\n\n".join(blocks) + "\n")
    home.mkdir(parents=True, exist_ok=True)
    (home / "anti-patterns.md").write_text(GLOBAL_HEAD + "\n" + "\n\n".join(GLOBAL_AP) + "\n")


def mixed_bank(home: Path) -> None:
    seed(
        home,
        filler(4, "patterns", topic="release"),
        filler(4, "heuristics", topic="review"),
        filler(4, "anti-patterns", topic="parser"),
    )
