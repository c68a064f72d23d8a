"""Markdown files from entries: pure functions, byte-identical for the same entries.

Two families of files:

* the global store (``anti-patterns.md``, ``heuristics.md``, ``patterns.md``)
  with the exact header and entry format of the cross-project memory spec,
  for promoted entries;
* a per-project mirror (``projects/<project>/<category>.md``) in the iflow
  knowledge-bank format, so every live entry is readable.

A file belongs to the plan as soon as any entry (live or not) belongs to it,
so retiring the last entry of a file empties it rather than leaving it stale.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from memlog import digests
from memlog.projections.fold import Entry
from memlog.projections.markdown_view import branch, layout
from memlog.vocabulary import KB_CATEGORIES, TYPE_NAMES

NO_PROJECT = "_unassigned"
_GLOBAL_TITLES = {
    "anti-patterns": "Anti-Patterns",
    "heuristics": "Heuristics",
    "patterns": "Patterns",
}
GLOBAL_HEADER = (
    "# Global {title}\n\n"
    "Cross-project learnings promoted from retrospectives. Automatically managed by iflow.\n"
    "Do not edit manually — entries are updated during /finish.\n"
)
PROJECT_HEADERS = {
    "anti-patterns": (
        "# Anti-Patterns\n\nThings to avoid. Updated through retrospectives.\n\n---\n\n"
        "## Known Anti-Patterns\n"
    ),
    "heuristics": (
        "# Heuristics\n\nDecision guides for common situations. Updated through retrospectives."
        "\n\n---\n\n## Decision Heuristics\n"
    ),
    "patterns": (
        "# Patterns\n\nApproaches that have worked well. Updated through retrospectives.\n\n---\n\n"
        "## Development Patterns\n"
    ),
    "facts": "# Facts\n\nFacts learned about this project.\n\n---\n\n## Known Facts\n",
}
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def project_dir(project: str) -> str:
    """A safe directory name for a project (never empty, never hidden or ``..``).

    A name that had to be changed gets a short hash of the original, so two
    projects (``a b`` and ``a-b``) never share a directory; a name too long for a
    file system is cut (``branch.bounded``).
    """
    if not project:
        return NO_PROJECT
    name = _UNSAFE.sub("-", project).strip(".-")
    if name == project:
        return branch.bounded(name, project)
    digest = digests.sha256(project.encode("utf-8")).hexdigest()[:8]
    return branch.bounded(f"{name or 'project'}-{digest}", project)


def global_path(category: str) -> str:
    return f"{category}.md"


def project_path(entry: Entry) -> str:
    return f"projects/{project_dir(entry.source_project)}/{entry.category}.md"


def branch_path(key: str) -> str:
    """The branch memory file of ``key`` (``project/branch``)."""
    project, name = branch.split_key(key)
    return branch.file_path(project_dir(project), name)


def branch_keys(entry: Entry, path: str) -> set[str]:
    """The branch memories of ``entry`` (ever) whose file is ``path``."""
    return {key for key in branch.stamps(entry) if branch_path(key) == path}


def paths_of(entry: Entry) -> list[str]:
    """Every markdown file ``entry`` belongs to (branch files: every one it ever joined)."""
    paths = [project_path(entry)]
    if entry.promoted and entry.category in KB_CATEGORIES:
        paths.append(global_path(entry.category))
    paths += sorted({branch_path(key) for key in branch.stamps(entry)})
    return paths


def _optional_lines(entry: Entry) -> list[str]:
    """What memlog adds of its own (the project files only: never the global store's)."""
    lines = []
    if entry.keywords:
        lines.append(f"- Keywords: {', '.join(entry.keywords)}")
    if entry.references:
        lines.append(f"- References: {', '.join(entry.references)}")
    if entry.reasoning:
        lines.append(f"- Reasoning: {' '.join(entry.reasoning.split())}")
    return lines


def _sources(entry: Entry) -> str:
    """Where the entry was seen: its provenance, and the ``Source`` lines it came with."""
    return "; ".join(layout.unnamed_places(entry, "")) or entry.source


def global_block(entry: Entry) -> str:
    """One entry in the global store format: as its store file had it, when it came from one.

    Only the spec's fields and the entry's own metadata lines: what memlog adds of its own
    (keywords, references, reasoning) stays out of the files iflow's scripts read.
    """
    if entry.layout:
        lines = [
            f"### {entry.layout[0]}",
            entry.description,
            *layout.stored_lines(entry, every=False),
        ]
        return "\n".join(lines) + "\n"
    tags = layout.keyed(entry.details, layout.TAGS)
    lines = [
        f"### {TYPE_NAMES[entry.category]}: {entry.name}",
        entry.description,
        f"- Content-Hash: sha256:{entry.id}",
        f"- Source: {_sources(entry)}",
        f"- Observation count: {entry.observation_count}",
        f"- Last observed: {layout.last_observed(entry)}",
        f"- Tags: {tags[0] if tags else 'universal'}",
        f"- Confidence: {entry.confidence}",
        *map(layout.item, layout.unkeyed(entry.details, layout.SOURCE, layout.TAGS)),
    ]
    return "\n".join(lines) + "\n"


def project_block(entry: Entry) -> str:
    """One entry in the iflow knowledge-bank format."""
    if entry.category == "heuristics":  # iflow writes heuristics without a type prefix
        header = f"### {entry.name}"
    else:
        header = f"### {TYPE_NAMES[entry.category]}: {entry.name}"
    if entry.layout:
        lines = [header, entry.description, *layout.stored_lines(entry, every=True)]
        return "\n".join(lines + _optional_lines(entry)) + "\n"
    lines = [header, entry.description, *map(layout.item, entry.details)]
    lines += _optional_lines(entry)
    lines += [
        f"- Last observed: {layout.last_observed(entry)}",
        f"- Observation count: {entry.observation_count}",
        f"- Confidence: {entry.confidence}",
    ]
    return "\n".join(lines) + "\n"


def _ordered(entries: Iterable[Entry]) -> list[Entry]:
    return sorted((e for e in entries if e.live), key=lambda e: (e.created_seq, e.id))


def render_branch(path: str, entries: Iterable[Entry]) -> str:
    """A branch memory file (two branches whose names sanitize alike share it: the first
    by name gives the title, and its memory the items)."""
    everything = list(entries)
    key = min(k for e in everything for k in branch_keys(e, path))
    return branch.branch_file(branch.split_key(key)[1], key, everything)


def render_file(path: str, entries: Iterable[Entry]) -> str:
    """The whole text of the file at ``path`` for the entries that belong to it."""
    if branch.is_branch_file(path):
        return render_branch(path, entries)
    category = path.rsplit("/", 1)[-1].removesuffix(".md")
    if path.startswith("projects/"):
        header, block = PROJECT_HEADERS[category], project_block
    else:
        header, block = GLOBAL_HEADER.format(title=_GLOBAL_TITLES[category]), global_block
    return header + "".join("\n" + block(e) for e in _ordered(entries))


def plan(entries: Iterable[Entry]) -> dict[str, str]:
    """Every file the entries make, by path relative to the view's directory."""
    members: dict[str, list[Entry]] = {}
    for entry in entries:
        for path in paths_of(entry):
            members.setdefault(path, []).append(entry)
    return {path: render_file(path, members[path]) for path in sorted(members)}


def signature(entry: Entry) -> tuple[tuple[str, ...], str]:
    """What of ``entry`` shows in markdown: a change here means its files need writing."""
    blocks = project_block(entry) + (global_block(entry) if entry.promoted else "")
    memory = f"{entry.section}|{entry.branches}|{entry.branch_stamps}"
    return tuple(paths_of(entry)), f"{entry.status}|{entry.created_seq}|{memory}|{blocks}"
