"""Promotion: which entries a retrospective sends to the global store.

Each entry is universal (it goes to the global store) or project-specific
(it stays with its project).  The retrospective's own judgement decides
when it gives one; otherwise ``classify`` does, deterministically: an entry
whose name or description names a file path, the project itself, or a name
found in the project tree is project-specific, everything else universal
(the spec's default).  References are not classified: retrospectives fill
them from the git diff, so every entry would look project-specific.
"""

from __future__ import annotations

import os
import re
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import msgspec

from memlog.capture.observe import ObservationInput, decode_items, to_event
from memlog.errors import InvalidInput
from memlog.eventlog.events import Observed, Promoted
from memlog.vocabulary import Scope

UNIVERSAL_LABEL = "Universal"
PROJECT_LABEL = "Project-specific"
NO_REFERENCES = "no project-specific references detected"
JUDGED = "judged so by the retrospective"

#: bounds of the project walk: it runs on every promotion and must stay quick
MAX_ENTRIES = 20_000
MAX_DIR_ENTRIES = 2_000
MAX_DEPTH = 8
MIN_NAME = 4
SKIP_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__", ".mypy_cache",
        ".pytest_cache", ".ruff_cache", ".tox", ".nox", ".cache", ".next", ".idea", ".vscode",
        "dist", "build", "target", "site-packages", ".eggs",
    }
)  # fmt: skip
#: tree names that are everyday engineering words, not evidence of a project
GENERIC_NAMES = frozenset(
    """
    about admin agent agents always analysis android api app apps archive assets auth backend
    backup base bench benchmarks build cache changelog check checks client code commands
    common components conf config configs context contributing core data database debug
    default deploy design dist docs domain error errors event events example examples export
    feature features file files fixtures format frontend generated guide handlers helper
    helpers history home hook hooks html images import include index init inject install
    internal issues java javascript json layout legacy libs license local lock logs main
    makefile manifest markdown master media memory migrations misc mock mocks model models
    module modules notes observe output package packages parse parser pages patterns plugin
    plugins project projects public python query queries readme reader release render replay
    repo requirements resources retire review rules schema schemas script scripts search
    server service services session sessions settings setup shared skill skills source spec
    specs stats static status storage store style styles support task tasks template
    templates test testing tests text tool tools types update utils util vendor verify
    version view views website workflow workflows writer
    """.split()
)
_EXTENSIONS = (
    "py|pyi|sh|bash|zsh|fish|js|jsx|ts|tsx|mjs|cjs|json|jsonl|md|rst|txt|yaml|yml|toml|ini|"
    "cfg|conf|lock|go|rs|rb|java|kt|swift|c|h|cc|cpp|hpp|cs|php|sql|html|css|scss|vue|svelte|"
    "xml|csv|env|ipynb|lua|exs|erl|hs|scala|dart|gradle|tf"
)
_SEGMENT = r"[A-Za-z0-9_][\w.-]*"
#: a path with a directory part: ``src/x.py``, ``a/b/c``, ``./run``, ``~/x``, ``/etc/hosts``
_DIR_PATH = re.compile(
    rf"(?<![\w:/.~-])(?:(?:\.{{1,2}}/|~/)(?:{_SEGMENT}/)*{_SEGMENT}|/?(?:{_SEGMENT}/)+{_SEGMENT})"
)
#: a bare file name with a known extension: ``foo.sh``, ``hooks.json``
_FILE_NAME = re.compile(rf"(?<![\w/.-])[\w-]+(?:\.[\w-]+)*\.(?:{_EXTENSIONS})(?![\w-])", re.I)
_WORD = re.compile(r"[A-Za-z0-9_](?:[\w.-]*[A-Za-z0-9_])?")
_FEW = 3


class Verdict(NamedTuple):
    scope: Scope
    reason: str


class ProjectContext(NamedTuple):
    """What the classifier knows of the project: its name and the names in its tree."""

    name: str
    names: frozenset[str]


class Candidate(NamedTuple):
    """One entry a retrospective recorded, with the scope it gave (if any)."""

    event: Observed
    scope: Scope | None
    reason: str


class PromotionInput(ObservationInput, forbid_unknown_fields=True):
    """One JSON line of ``memlog promote --json``: an observation plus its scope."""

    scope: Scope | None = None
    reason: str = ""


# -- the project tree --------------------------------------------------------


def _skip_dir(entry: os.DirEntry[str]) -> bool:
    if entry.name in SKIP_DIRS or entry.name.endswith(".egg-info"):
        return True
    return os.path.exists(os.path.join(entry.path, "pyvenv.cfg"))  # a virtualenv


def _listing(path: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(path) as found:
            entries = sorted(found, key=lambda e: e.name)
    except OSError:
        return []
    return [] if len(entries) > MAX_DIR_ENTRIES else entries


def walk_names(root: Path) -> Iterator[str]:
    """Base names under ``root``, breadth first and bounded (skips VCS, venvs, big dirs)."""
    queue: deque[tuple[str, int]] = deque([(str(root), 0)])
    seen = 0
    while queue and seen < MAX_ENTRIES:
        path, depth = queue.popleft()
        for entry in _listing(path):
            seen += 1
            if seen > MAX_ENTRIES:
                return
            is_dir = entry.is_dir(follow_symlinks=False)
            if is_dir and _skip_dir(entry):
                continue
            yield entry.name
            if is_dir and depth + 1 < MAX_DEPTH:
                queue.append((entry.path, depth + 1))


def name_forms(name: str) -> set[str]:
    """The forms a tree name may take in prose: itself, its stem, the part before any dot."""
    lowered = name.lower()
    forms = {lowered, lowered.rsplit(".", 1)[0], lowered.split(".", 1)[0]}
    return {f for f in forms if len(f) >= MIN_NAME and f not in GENERIC_NAMES}


def scan_project(root: Path | None, name: str = "") -> ProjectContext:
    """The classifier's view of the project at ``root`` (no tree when there is none)."""
    names: set[str] = set()
    if root is not None:
        for base in walk_names(root):
            names |= name_forms(base)
    return ProjectContext(name or (root.name if root is not None else ""), frozenset(names))


# -- classification ------------------------------------------------------------


def file_paths(text: str) -> list[str]:
    """File paths named in ``text`` (``src/x.py``, ``a/b/c``, ``foo.sh``), URLs left out."""
    found = []
    for match in _DIR_PATH.finditer(text):
        path = match.group(0).rstrip(".")
        if _looks_like_path(path):
            found.append(path)
    found += [m.group(0) for m in _FILE_NAME.finditer(text) if not _is_library(m.group(0))]
    unique: dict[str, str] = {}
    for path in found:
        if "://" not in path:
            unique.setdefault(path.lower(), path)
    return list(unique.values())


def _is_library(name: str) -> bool:
    """``Node.js``, ``Vue.js``: names of libraries, not files."""
    stem, _, ext = name.rpartition(".")
    return ext.lower() == "js" and stem.istitle() and "." not in stem


def _looks_like_path(path: str) -> bool:
    """``a/b/c``, ``./x`` or ``dir/file.ext``: not ``and/or``, ``read/write`` or dates."""
    if not any(c.isalpha() for c in path):
        return False
    if path.startswith(("./", "../", "~/", "/")) or path.count("/") >= 2:
        return True
    return _FILE_NAME.fullmatch(path.rsplit("/", 1)[-1]) is not None


def _mentions_project(text: str, project: str) -> bool:
    if len(project) < MIN_NAME or project.lower() in GENERIC_NAMES:
        return False  # ``api`` or ``main`` are words before they are project names
    pattern = rf"(?<![\w-]){re.escape(project)}(?![\w-])"
    return re.search(pattern, text, re.IGNORECASE) is not None


def tree_names(text: str, context: ProjectContext) -> list[str]:
    """Whole words of ``text`` that are names in the project tree."""
    found: dict[str, str] = {}
    for match in _WORD.finditer(text):
        word = match.group(0)
        if word.lower() in context.names:
            found.setdefault(word.lower(), word)
    return list(found.values())


def classify(text: str, context: ProjectContext) -> Verdict:
    """Universal unless ``text`` names a file path, the project, or a name in its tree."""
    paths = file_paths(text)
    findings = [f"names file path `{p}`" for p in paths[:_FEW]]
    if _mentions_project(text, context.name):
        findings.append(f"names the project `{context.name}`")
    covered = {part.lower() for p in paths for part in p.split("/")}
    names = [n for n in tree_names(text, context) if n.lower() not in covered]
    findings += [f"names `{n}`, which exists in the project tree" for n in names[:_FEW]]
    if findings:
        return Verdict("project", because("project", "; ".join(findings)))
    return Verdict("universal", because("universal", NO_REFERENCES))


def because(scope: Scope, reason: str) -> str:
    """``Universal because: …`` (a reason already in that form is kept as it is)."""
    label = UNIVERSAL_LABEL if scope == "universal" else PROJECT_LABEL
    text = " ".join(reason.split())
    if text.lower().startswith(f"{label.lower()} because"):
        return text
    return f"{label} because: {text or JUDGED}"


def entry_text(name: str, description: str) -> str:
    """What the classifier reads of an entry."""
    return f"{name}\n{description}"


def decide(candidate: Candidate, context: ProjectContext) -> Verdict:
    """The retrospective's scope when it gave one, else the classifier's."""
    if candidate.scope is not None:
        return Verdict(candidate.scope, because(candidate.scope, candidate.reason))
    event = candidate.event
    return classify(entry_text(event.name, event.description), context)


def promotion(entry_id: str, verdict: Verdict, project: str, feature: str) -> Promoted:
    return Promoted(
        entry_id=entry_id, scope=verdict.scope, reason=verdict.reason, project=project,
        feature=feature,
    )  # fmt: skip


# -- input ---------------------------------------------------------------------

_LINE = msgspec.json.Decoder(PromotionInput)
_ARRAY = msgspec.json.Decoder(list[PromotionInput])


def parse_candidates(data: bytes, project: str = "", feature: str = "") -> list[Candidate]:
    """Candidates for every JSON object in ``data`` (one per line, or one JSON array)."""
    pairs = decode_items(data, _LINE, _ARRAY)
    return [_candidate(item, where, project, feature) for where, item in pairs]


def _candidate(item: PromotionInput, where: str, project: str, feature: str) -> Candidate:
    if item.reason.strip() and item.scope is None:
        raise InvalidInput(f"{where}: reason given without scope - at `$.reason`")
    filled = msgspec.structs.replace(
        item, project=item.project or project, feature=item.feature or feature
    )
    return Candidate(to_event(filled, where), item.scope, item.reason)


# -- report --------------------------------------------------------------------


def report(named: list[tuple[str, Verdict]]) -> list[str]:
    """The summary line of the spec, then one reason line per entry."""
    universal = sum(1 for _, v in named if v.scope == "universal")
    lines = [
        f"Memory promotion: {universal} universal entries promoted to global store, "
        f"{len(named) - universal} project-specific entries kept local."
    ]
    return lines + [f"- {name}: {verdict.reason}" for name, verdict in named]
