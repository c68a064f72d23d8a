"""Context signals of the project at hand, composed into a retrieval query.

Active feature: the ``docs/features/*/.meta.json`` whose status is active
(the newest if several): its slug, ``lastCompletedPhase`` and the first
paragraph (≤100 words) of its ``spec.md`` (else ``prd.md``).  Changed files:
``git diff --name-only HEAD~3..HEAD``, falling back to ``HEAD~1`` and then
to none, within a bounded time.  Query:
``"{slug}: {description}. Phase: {phase}. Files: {files}"``; no signal, no query.
That is the D3 query (``memory_ranking: d3``).  The default ranking asks
``context_query``: the slug's words, the spec's title and opening prose
(``spec_text``) and the words of the changed files' paths, without the
phase label or path boilerplate (``src``, ``py``, ``tests`` …).

One ranking for one text: the hook does not rank its signals directly but
the text they make (``context_text``: ``{slug}: {title}. {prose}``, then
``Phase: …`` and ``Files: …`` lines; the D3 query under ``d3``), through
``query_of``, the same function ``memlog search TEXT`` (the page, MCP) ranks
its text through.  So a hook-shaped text given to search ranks exactly as
the hook ranks the context it was made from; any other text is its own query.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import msgspec

from memlog.git import CONTEXT_TIMEOUT, MAX_CHANGED, recently_changed
from memlog.retrieval import spec_text
from memlog.untrusted import Refused, load_json, read_bytes, read_text

MAX_WORDS = 100
#: the most of a feature's ``.meta.json`` read (a few fields), and of its spec (the opening)
MAX_META_BYTES = 64 << 10
MAX_SPEC_BYTES = 64 << 10
#: the feature folders looked at for the active one
MAX_FEATURES = 1000
MAX_FILES = MAX_CHANGED
GIT_TIMEOUT = CONTEXT_TIMEOUT


class Feature(msgspec.Struct, frozen=True):
    slug: str
    phase: str
    description: str
    #: the spec's title line and opening prose (``spec_text``)
    title: str = ""
    summary: str = ""


class Signals(msgspec.Struct, frozen=True):
    feature: Feature | None
    files: tuple[str, ...]

    @property
    def query(self) -> str | None:
        return compose_query(self)

    @property
    def context_query(self) -> str | None:
        return context_query(self)

    def text(self, ranking: str) -> str | None:
        """The text the hook ranks for these signals under ``ranking`` (``fused`` or ``d3``)."""
        return compose_query(self) if ranking == "d3" else context_text(self)


def _meta(path: Path) -> dict[str, object] | None:
    try:  # a repository's file: read within bounds (``untrusted``)
        data = load_json(read_bytes(path, MAX_META_BYTES))
    except (OSError, Refused):
        return None
    return data if isinstance(data, dict) else None


def _spec(path: Path) -> str:
    """The start of a spec (its first ``MAX_SPEC_BYTES``: its title and opening are all
    that is read from it); OSError when it cannot be read."""
    try:
        return read_text(path, MAX_SPEC_BYTES, whole=False)
    except Refused as exc:  # not a regular file
        raise OSError(str(exc)) from None


def active_feature(root: Path) -> Feature | None:
    """The active feature of the project, or None (among its first ``MAX_FEATURES``)."""
    found: list[tuple[float, str, Path, dict[str, object]]] = []
    metas = (root / "docs" / "features").glob("*/.meta.json")
    for path in itertools.islice(metas, MAX_FEATURES):
        meta = _meta(path)
        if meta is not None and str(meta.get("status", "")).lower() == "active":
            found.append((path.stat().st_mtime, str(path), path, meta))
    if not found:
        return None
    _, _, path, meta = max(found, key=lambda item: item[:2])
    return feature_of(path.parent, meta)


def feature_of(folder: Path, meta: dict[str, object] | None = None) -> Feature:
    """The feature in ``folder`` (its ``.meta.json`` read when ``meta`` is not given)."""
    meta = meta if meta is not None else (_meta(folder / ".meta.json") or {})
    slug = str(meta.get("slug") or folder.name)
    phase = str(meta.get("lastCompletedPhase") or "")
    texts = spec_texts(folder)
    title = next((t for t in map(spec_text.title, texts) if t), "")
    summary = next((p for p in map(spec_text.prose, texts) if p), "")
    return Feature(slug, phase, feature_description(folder), title, summary)


def first_paragraph(text: str, max_words: int = MAX_WORDS) -> str:
    """The first paragraph before the first ``##`` heading, without headings, ≤ max words."""
    body = re.split(r"^##\s", text, maxsplit=1, flags=re.MULTILINE)[0]
    for block in re.split(r"\n\s*\n", body):
        lines = [ln for ln in block.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
        if lines:
            return " ".join(" ".join(lines).split()[:max_words])
    return ""


def feature_description(folder: Path) -> str:
    for name in ("spec.md", "prd.md"):
        try:
            text = _spec(folder / name)
        except OSError:
            continue
        paragraph = first_paragraph(text)
        if paragraph:
            return paragraph
    return ""


def spec_texts(folder: Path) -> list[str]:
    """The texts of the feature's spec.md and prd.md that can be read, in that order."""
    texts = []
    for name in ("spec.md", "prd.md"):
        try:
            texts.append(_spec(folder / name))
        except OSError:
            continue
    return texts


def changed_files(root: Path, timeout: float = GIT_TIMEOUT) -> tuple[str, ...]:
    """Files changed by the last three commits (or one), at most 20; none on any failure."""
    return recently_changed(root, timeout)


def collect(root: Path | None) -> Signals:
    if root is None:
        return Signals(None, ())
    return Signals(active_feature(root), changed_files(root))


def compose_query(signals: Signals) -> str | None:
    parts: list[str] = []
    feature = signals.feature
    if feature is not None:
        head = f"{feature.slug}: {feature.description}" if feature.description else feature.slug
        parts.append(head)
        if feature.phase:
            parts.append(f"Phase: {feature.phase}")
    if signals.files:
        parts.append(f"Files: {' '.join(signals.files)}")
    return ". ".join(parts) if parts else None


#: path words that name a kind of file or folder, not a subject
PATH_BOILERPLATE = frozenset(
    "src lib libs test tests spec specs doc docs py pyi md txt json yaml yml toml ini cfg js ts "
    "jsx tsx mjs cjs sh rs go java kt rb php html css scss lock init main index mod pkg dist "
    "build out tmp".split()
)


def path_words(files: tuple[str, ...]) -> list[str]:
    """The words of file paths, split on ``/ . _ -``, without boilerplate, each once."""
    words = (w for path in files for w in re.split(r"[^A-Za-z0-9]+", path) if w)
    kept = (w for w in words if len(w) > 1 and not w.isdigit())
    kept = (w for w in kept if w.lower() not in PATH_BOILERPLATE)
    return list(dict.fromkeys(kept))


def context_query(signals: Signals) -> str | None:
    """The default ranking's query: slug words, spec title and prose, changed files' words."""
    parts: list[str] = []
    feature = signals.feature
    if feature is not None:
        parts += [feature.slug.replace("-", " ").replace("_", " "), feature.title]
        parts.append(feature.summary or feature.description)
    parts.append(" ".join(path_words(signals.files)))
    kept = [p.strip() for p in parts if p and p.strip()]
    return ". ".join(kept) if kept else None


def text_and_query(
    root: Path | None, given: str | None, ranking: str
) -> tuple[str | None, str | None]:
    """The text to rank (``given``, a searcher's; else the hook's, from the project at
    ``root``) and the query ``ranking`` asks for it: one function for every caller."""
    text = given if given is not None else collect(root).text(ranking)
    return text, query_of(text, ranking)


def context_text(signals: Signals) -> str | None:
    """The hook-shaped text of the signals: ``{slug}: {title}. {prose}``, then
    ``Phase: {phase}`` and ``Files: {paths}`` on lines of their own."""
    lines: list[str] = []
    feature = signals.feature
    if feature is not None:
        parts = (feature.title, feature.summary or feature.description)
        body = ". ".join(p.strip() for p in parts if p and p.strip())
        lines.append(f"{feature.slug}: {body}" if body else f"{feature.slug}:")
        if feature.phase:
            lines.append(f"Phase: {feature.phase}")
    if signals.files:
        lines.append(f"Files: {' '.join(signals.files)}")
    return "\n".join(lines) if lines else None


#: a label of a hook-shaped text: on a line of its own, or after ``. `` (the D3 query's form)
_LABEL = r"(?:\A|\n|(?<=\.)(?P<inline>[ \t]+)){}:[ \t]*"
#: its last part, ``Files: …``, then its ``Phase: …``
_FILES = re.compile(_LABEL.format("Files") + r"(?P<value>[^\n]*)\s*\Z")
_PHASE = re.compile(_LABEL.format("Phase") + r"(?P<value>[^\n]*?)\s*\Z")
#: and its first word when it is a slug: ``{slug}:`` (no space, no colon in it)
_SLUG = re.compile(r"\A\s*([^\s:]+):(?:[ \t]+|\n|\Z)")


def query_of(text: str | None, ranking: str = "fused") -> str | None:
    """The query a ranking asks for ``text``, the hook's own or a searcher's.

    Under ``d3`` the text itself.  Under ``fused``, a hook-shaped text
    (``context_text``, or the D3 query's one-line form) gives what
    ``context_query`` gives for its signals: the slug's words, the text, the
    files' path words, no phase label.  Any other text is its own query.
    """
    if not text or ranking == "d3":
        return text
    rest, files, labelled, inline = text, "", False, False
    for label in (_FILES, _PHASE):
        found = label.search(rest)
        if found is not None:
            rest, labelled = rest[: found.start()], True
            inline = inline or found.group("inline") is not None
            files = found.group("value") if label is _FILES else files
    slug = _SLUG.match(rest)
    if slug is None and not labelled:
        return text
    head = slug.group(1).replace("-", " ").replace("_", " ") if slug is not None else ""
    body = (rest[slug.end() :] if slug is not None else rest).strip()
    if inline:  # ``desc. Phase: p``: the full stop ends the part, not the text
        body = body.removesuffix(".").rstrip()
    parts = (head, body, " ".join(path_words(tuple(files.split()))))
    kept = [p.strip() for p in parts if p and p.strip()]
    return ". ".join(kept) if kept else None
