"""What a lesson cites of its project's code, and whether the project still has it.

A lesson names files, paths and symbols: in backticks (```retrieval/render.py```,
```_render_block```, ```Lexicon.score()```), on its provenance lines
(``Observed in: generators/_md_insert.py _render_block``, ``File:``,
``References:``), among its references, and as paths in its prose
(``hooks/session_start.py``).  ``cited`` finds them:

* a **file** is a relative path or a file name with a known extension
  (``py``, ``md``, ``ts`` …), or a path ending in ``/`` (a folder); URLs,
  absolute paths and ``~`` are not the project's;
* a **symbol** is an identifier that looks like code (an underscore, camelCase,
  call parentheses, or the last part of a dotted name), in backticks or on a
  provenance line.

``Tree`` is a project's working tree at its current commit: a cited file
resolves when a tracked file (``git ls-files``) is that path, ends with it or
has that name (a folder when a tracked file lies under it), a symbol when
``git grep -w`` finds it in a tracked file.  Answers are cached per HEAD and
index (``$MEMLOG_CACHE_DIR/stale/``), so a session start pays once per
commit: every later start reads one small file.

A lesson is **stale** when it cites at least one file, none of its files
resolves, and none of the symbols it cites is found (a function that moved
with a renamed file keeps the lesson current).  A lesson that cites no file is
never stale.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from memlog import digests
from memlog.git import MAX_PACKED_REFS_BYTES, pointer, quick_output
from memlog.home import resolve_cache
from memlog.untrusted import read_bytes

#: extensions that make a word a file name
EXTENSIONS = frozenset(
    "py pyi md rst txt json jsonl yaml yml toml ini cfg conf sh bash zsh js mjs cjs ts tsx jsx "
    "go rs java kt swift rb php c h cc cpp hpp cs sql html css scss vue svelte lock xml proto "
    "gradle tf mk dockerfile env csv ipynb".split()
)
#: provenance lines whose values name files and symbols
WHERE_KEYS = frozenset(
    {"observed in", "file", "files", "references", "used in", "discovered in", "location",
     "where", "path", "paths", "code"}
)  # fmt: skip
_TICKED = re.compile(r"`([^`\n]{1,200})`")
_PATH = re.compile(r"^[A-Za-z0-9_.@+\-]+(?:/[A-Za-z0-9_.@+\-]+)*/?$")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PROSE_PATH = re.compile(r"(?<![\w/.:-])((?:[A-Za-z0-9_.@+\-]+/)+[A-Za-z0-9_.@+\-]+)")
_TRAILING = ".,;:!?)]}'\""
#: seconds the checks may take when not given (a start passes its own)
CHECK_SECONDS = 2.0
CACHE_FOLDER = "stale"


class Cited(NamedTuple):
    """The files and symbols a lesson cites."""

    files: tuple[str, ...]
    symbols: tuple[str, ...]

    def __bool__(self) -> bool:
        return bool(self.files or self.symbols)


def _file(token: str, bare: bool) -> str | None:
    """``token`` as a cited file (``bare``: a name alone counts), or None."""
    text = token.strip().rstrip(_TRAILING).removeprefix("./")
    text = re.sub(r":\d+(?::\d+)?$", "", text)  # ``path.py:12``
    if not text or text.startswith(("/", "~", "-", "..")) or "://" in text:
        return None
    if text.startswith(".") and not text[1:2].isalpha():  # ``.github/…`` is a path, ``.5`` not
        return None
    if not _PATH.match(text) or not re.search(r"[A-Za-z]", text):
        return None
    if text.endswith("/"):
        return text if text.count("/") >= 1 and len(text) > 2 else None
    name = text.rsplit("/", 1)[-1]
    stem, dot, extension = name.rpartition(".")
    if not dot or not stem or extension.lower() not in EXTENSIONS:
        return None
    return text if bare or "/" in text else None


def _symbol(token: str) -> str | None:
    """``token`` as a cited symbol (its last dotted part, without call parentheses)."""
    text = re.sub(r"\([^()]*\)$", "", token.strip().rstrip(".,;:!?'\"")).rstrip(_TRAILING)
    dotted = "." in text
    last = text.rsplit(".", 1)[-1]
    if not _IDENTIFIER.match(last) or len(last) < 3:
        return None
    if not all(_IDENTIFIER.match(p) for p in text.split(".")):
        return None
    looks = "_" in last or re.search(r"[a-z][A-Z]", last) or token.rstrip().endswith(")")
    return last if looks or dotted else None


def _one(token: str, files: list[str], symbols: list[str], bare: bool) -> None:
    found = _file(token, bare)
    if found is not None:
        files.append(found)
        return
    symbol = _symbol(token)
    if symbol is not None:
        symbols.append(symbol)


def cited(
    description: str, reasoning: str = "", details: Sequence[str] = (),
    references: Sequence[str] = (),
) -> Cited:  # fmt: skip
    """The files and symbols a lesson's text cites, each once, in order."""
    files: list[str] = []
    symbols: list[str] = []
    for text in (description, reasoning, *details):
        for span in _TICKED.findall(text):
            if " " not in span.strip():
                _one(span, files, symbols, bare=True)
        for path in _PROSE_PATH.findall(_TICKED.sub(" ", text)):
            found = _file(path, bare=False)
            if found is not None:
                files.append(found)
    for line in details:
        key, colon, value = line.partition(":")
        if colon and key.strip().lower() in WHERE_KEYS:
            for token in re.split(r"[\s,;]+", _TICKED.sub(" ", value)):
                _one(token, files, symbols, bare=True)
    for reference in references:
        found = _file(reference, bare=True)
        if found is not None:
            files.append(found)
    kept = set(files)
    return Cited(tuple(dict.fromkeys(files)),
                 tuple(s for s in dict.fromkeys(symbols) if s not in kept))  # fmt: skip


class Checked(NamedTuple):
    """What of a lesson's citations its project no longer has."""

    cited: Cited
    #: the cited files and symbols the working tree does not have
    gone_files: tuple[str, ...]
    gone_symbols: tuple[str, ...]

    @property
    def stale(self) -> bool:
        """Every cited file gone, and no cited symbol found either."""
        files, symbols = self.cited
        return bool(files) and len(self.gone_files) == len(files) and (
            len(self.gone_symbols) == len(symbols))  # fmt: skip

    @property
    def partly(self) -> bool:
        """Some of what it cites is gone, not all."""
        return not self.stale and bool(self.gone_files or self.gone_symbols)

    def mark(self) -> str:
        """The few words the injected block adds to a stale lesson."""
        gone = list(self.gone_files)
        if len(gone) == 1:
            return f"refers to {gone[0]}, gone"
        if len(gone) <= 3:
            return f"refers to {', '.join(gone[:-1])} and {gone[-1]}, all gone"
        return f"refers to {gone[0]} and {len(gone) - 1} more files, all gone"


# -- the working tree ----------------------------------------------------------------------


def _gitdir(root: Path) -> Path | None:
    git = root / ".git"
    try:
        if git.is_file():
            line = pointer(git)  # a repository is anyone's: its files read within bounds
            if not line.startswith("gitdir:"):
                return None
            git = (root / line.split(":", 1)[1].strip()).resolve()
        return git if git.is_dir() else None
    except (OSError, ValueError):
        return None


def head_of(root: Path) -> str | None:
    """The commit checked out at ``root`` and a stamp of its index (the tracked files
    change with either), read from ``.git`` without a subprocess; None without one."""
    gitdir = _gitdir(root)
    if gitdir is None:
        return None
    try:
        head = pointer(gitdir / "HEAD")
        common = gitdir
        if (gitdir / "commondir").is_file():
            common = (gitdir / pointer(gitdir / "commondir")).resolve()
        if head.startswith("ref:"):
            head = _ref(common, head.split(":", 1)[1].strip()) or ""
        index = os.stat(gitdir / "index")
        stamp = f"{index.st_mtime_ns}-{index.st_size}"
    except (OSError, ValueError):  # ValueError: not UTF-8, or refused (``untrusted``)
        return None
    return f"{head}:{stamp}" if head else None


def _ref(common: Path, name: str) -> str | None:
    loose = common / name
    if loose.is_file():
        return pointer(loose)
    packed = common / "packed-refs"
    if packed.is_file():
        data = read_bytes(packed, MAX_PACKED_REFS_BYTES).decode("utf-8")
        for line in data.splitlines():
            sha, _, ref = line.partition(" ")
            if ref.strip() == name:
                return sha
    return None


class Tree:
    """A project's working tree at its commit: which cited files and symbols it has,
    answered from the cache where it can."""

    def __init__(self, root: Path, cache: Path | None = None,
                 env: Mapping[str, str] | None = None) -> None:  # fmt: skip
        self.root = root
        self.head = head_of(root)
        folder = (cache or resolve_cache(dict(env) if env is not None else None)) / CACHE_FOLDER
        key = digests.sha256(str(root.resolve()).encode()).hexdigest()[:24]
        self.answers_path = folder / f"{key}.json"
        self.files_path = folder / f"{key}.files"
        self.answers: dict[str, bool] = {}
        self.asked = 0
        self._files: list[str] | None = None
        self._load()

    @property
    def usable(self) -> bool:
        return self.head is not None

    def _load(self) -> None:
        try:
            data = json.loads(self.answers_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        if isinstance(data, dict) and data.get("head") == self.head:
            found = data.get("answers")
            if isinstance(found, dict):
                self.answers = {str(k): bool(v) for k, v in found.items()}

    def check(self, citations: Iterable[Cited], deadline: float | None = None) -> list[Checked]:
        """Each lesson's checked citations (none gone for what could not be answered
        before ``deadline``: never stale by guesswork)."""
        every = list(citations)
        wanted = {f"file:{f}" for c in every for f in c.files}
        wanted |= {f"symbol:{s}" for c in every for s in c.symbols}
        missing = sorted(k for k in wanted if k not in self.answers)
        if missing and self.usable:
            until = deadline if deadline is not None else time.monotonic() + CHECK_SECONDS
            self._answer(missing, until)
        return [self._checked(c) for c in every]

    def _checked(self, cited: Cited) -> Checked:
        gone_files = tuple(f for f in cited.files if self.answers.get(f"file:{f}") is False)
        gone = tuple(s for s in cited.symbols if self.answers.get(f"symbol:{s}") is False)
        return Checked(cited, gone_files, gone)

    def _answer(self, missing: list[str], deadline: float) -> None:
        files = [k[5:] for k in missing if k.startswith("file:")]
        symbols = [k[7:] for k in missing if k.startswith("symbol:")]
        learned: dict[str, bool] = {}
        if files:
            tracked = self.tracked(deadline)
            if tracked is not None:
                learned.update({f"file:{f}": resolves(f, tracked) for f in files})
        if symbols:
            found = self._grep(symbols, deadline)
            if found is not None:
                learned.update({f"symbol:{s}": s in found for s in symbols})
        if learned:
            self.answers.update(learned)
            self._save()

    def tracked(self, deadline: float) -> TrackedFiles | None:
        """The tracked files (``git ls-files``), from the cache of this commit when it has
        them; None when git does not answer in time."""
        if self._files is None:
            self._files = self._cached_files() or self._list_files(deadline)
        return TrackedFiles(self._files) if self._files is not None else None

    def _cached_files(self) -> list[str] | None:
        try:
            head, _, body = self.files_path.read_text(encoding="utf-8").partition("\n")
        except (OSError, UnicodeDecodeError):
            return None
        return body.split("\0") if head == self.head and body else None

    def _list_files(self, deadline: float) -> list[str] | None:
        done = quick_output(["git", "-C", str(self.root), "ls-files", "-z"], deadline)
        if done is None or done[0] != 0:
            return None
        files = [f for f in done[1].split("\0") if f]
        _write(self.files_path, f"{self.head}\n" + "\0".join(files))
        return files

    def _grep(self, symbols: Sequence[str], deadline: float) -> set[str] | None:
        """Which of ``symbols`` a tracked file holds as a whole word (one ``git grep``)."""
        patterns = [arg for s in symbols for arg in ("-e", s)]
        argv = ["git", "-C", str(self.root), "grep", "-I", "-h", "-o", "-w", "-F", *patterns]
        done = quick_output(argv, deadline)
        if done is None or done[0] not in (0, 1):  # 1: nothing found
            return None
        return set(done[1].split())

    def _save(self) -> None:
        _write(self.answers_path, json.dumps({"head": self.head, "answers": self.answers}))


class TrackedFiles:
    """Tracked paths, with the lookups a cited file needs."""

    def __init__(self, files: Sequence[str]) -> None:
        self.paths = set(files)
        self.names = {f.rsplit("/", 1)[-1] for f in files}
        cuts = [(f, n) for f in files for n in range(1, f.count("/") + 1)]
        self.folders = {f.rsplit("/", n)[0] + "/" for f, n in cuts}
        self.suffixes = {f.split("/", n)[-1] for f, n in cuts}


def resolves(cited: str, tracked: TrackedFiles) -> bool:
    """Whether the tree has the cited file: that path, a path ending with it, or (a file
    name alone) a file of that name; a folder when a tracked file lies under it."""
    if cited.endswith("/"):
        return cited in tracked.folders or any(f.endswith("/" + cited) for f in tracked.folders)
    if "/" not in cited:
        return cited in tracked.names
    return cited in tracked.paths or cited in tracked.suffixes


def _write(path: Path, text: str) -> None:
    """Write a cache file (a torn or lost one is only asked again)."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{os.getpid()}")
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, path)
    except OSError:
        pass
