"""Where memlog keeps its files: ``$MEMLOG_HOME`` or ``~/.claude/iflow/memory``.

A ``Home`` is the one place that knows a home's layout: every file and folder
memlog keeps there is named by one of its attributes, and no module below the
interfaces joins a name onto a home's path itself (``tests/test_layout.py``
holds that).  An interface makes it once (``Home.of``) and passes it down.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from pathlib import Path

from memlog.errors import HomeError

DEFAULT_HOME = Path("~/.claude/iflow/memory")
#: failures of the hook, one stamped line each (``memlog stats`` counts them)
HOOK_ERROR_LOG = "hook-errors.log"
_MOVING = ".moving-"
_ASIDE = ".memory.db.rebuild-"


class Home:
    """A memlog home: its root and where each thing it holds lives."""

    __slots__ = ("root",)

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)

    @classmethod
    def of(cls, where: Home | Path | str) -> Home:
        """``where`` as a home (a ``Home`` is returned as it is)."""
        return where if isinstance(where, Home) else cls(where)

    def __fspath__(self) -> str:
        return os.fspath(self.root)

    def __str__(self) -> str:
        return str(self.root)

    def __repr__(self) -> str:
        return f"Home({str(self.root)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Home) and other.root == self.root

    def __hash__(self) -> int:
        return hash(("memlog-home", self.root))

    # -- the log: events/ and what it keeps beside its segments ---------------------------------

    @property
    def events(self) -> Path:
        """The log: one folder a device (``device``) of JSONL segments."""
        return self.root / "events"

    def device(self, device_id: str) -> Path:
        """The folder of one device's segments."""
        return self.events / device_id

    def segment(self, rel: str) -> Path:
        """A segment by its name in the log: ``<device>/<name>``, or ``<name>`` when flat."""
        return self.events / rel

    def moving(self, device_id: str) -> Path:
        """Where a flat log's segments gather before they become ``device(device_id)``."""
        return self.events / f"{_MOVING}{device_id}"

    def movings(self) -> list[Path]:
        """What a move of the flat log left half done."""
        return sorted(self.events.glob(f"{_MOVING}*"))

    @property
    def events_lock(self) -> Path:
        """Held by every append."""
        return self.events / ".lock"

    @property
    def clock_floor(self) -> Path:
        """The highest stamp this home has written: no later event is stamped below it."""
        return self.events / ".clock"

    @property
    def device_file(self) -> Path:
        """This home's device id."""
        return self.events / ".device"

    @property
    def device_stamp(self) -> Path:
        """What this machine was when the device id was made (a copied home differs)."""
        return self.events / ".device-stamp"

    @property
    def local_key(self) -> Path:
        """The key the checksums of this home's own segments are made with."""
        return self.events / ".local-key"

    @property
    def spool(self) -> Path:
        """Events written while the log was busy, appended by the next writer."""
        return self.events / ".spool"

    @property
    def rewrite_journal(self) -> Path:
        """A rewrite of the log under way (its segments, ready to be swapped in)."""
        return self.events / ".rewrite.journal"

    @property
    def rewrite_staging(self) -> Path:
        """A rewrite's segments being written, before the journal commits them."""
        return self.events / ".rewrite.staging"

    @property
    def quarantine(self) -> Path:
        """Lines a read could not trust, kept aside with why."""
        return self.root / "quarantine.jsonl"

    @property
    def redaction_journal(self) -> Path:
        """A redaction under way: what it takes out, until the rewrite finished."""
        return self.root / ".redaction.journal"

    @property
    def snapshot_marker(self) -> Path:
        """Present in a copy of a home made at one moment (``memlog replay --at``)."""
        return self.root / ".memlog-snapshot.json"

    # -- the views ----------------------------------------------------------------------------

    @property
    def db(self) -> Path:
        """The SQLite view."""
        return self.root / "memory.db"

    def db_aside(self, tag: str) -> Path:
        """Where a rebuilt view is made before it replaces ``db`` (``tag``: the builder's
        pid, a dash, and random letters)."""
        return self.root / f"{_ASIDE}{tag}"

    def db_asides(self) -> dict[str, Path]:
        """The asides found, by their tags."""
        return {p.name[len(_ASIDE) :]: p for p in sorted(self.root.glob(f"{_ASIDE}*"))}

    @property
    def index(self) -> Path:
        """The packed vector and neighbour files the view points at."""
        return self.root / "index"

    @property
    def legacy_vectors(self) -> Path:
        """The vector folder of views from before ``index/``."""
        return self.root / "vectors"

    @property
    def views_damaged(self) -> Path:
        """Present while a view is known damaged (its reason inside)."""
        return self.root / ".views-damaged"

    @property
    def projects(self) -> Path:
        """The markdown view: one folder a project."""
        return self.root / "projects"

    def markdown(self, rel: str) -> Path:
        """A file of the markdown view, by its path from the home (``projects/…``)."""
        return self.root / rel

    @property
    def markdown_state(self) -> Path:
        """What the markdown view was written up to."""
        return self.root / ".markdown-state.json"

    @property
    def markdown_lock(self) -> Path:
        return self.root / ".markdown.lock"

    def folders(self) -> list[Path]:
        """Every folder of the home memlog writes files in but the markdown view's."""
        found = [self.root, self.events, self.spool, self.legacy_vectors, self.index]
        found.append(self.sync_repo)
        with contextlib.suppress(OSError):
            found += [p for p in self.events.iterdir() if p.is_dir() and not p.is_symlink()]
        return found

    # -- sync ---------------------------------------------------------------------------------

    @property
    def sync_repo(self) -> Path:
        """The git repository sync keeps sealed lines in."""
        return self.root / "sync.git"

    def sync_repo_aside(self, tag: str) -> Path:
        """Where a repository is made, or an old one put, before it takes its place."""
        return self.root / f".{self.sync_repo.name}.{tag}"

    def sync_repo_asides(self) -> list[Path]:
        """What a killed init or reset left aside."""
        return sorted(self.root.glob(f".{self.sync_repo.name}.*"))

    @property
    def sync_lock(self) -> Path:
        return self.root / ".sync.lock"

    @property
    def sync_key(self) -> Path:
        """The key that seals what sync sends."""
        return self.root / "sync.key"

    @property
    def sync_state(self) -> Path:
        """What sync last did, kept inside its repository."""
        return self.sync_repo / "memlog-sync.json"

    @property
    def signing_key(self) -> Path:
        """This device's key, which signs what it pushes."""
        return self.root / "sync.device.key"

    # -- the hooks, extraction and the page ---------------------------------------------------

    @property
    def extraction_lock(self) -> Path:
        return self.root / "extraction.lock"

    @property
    def adopt_lock(self) -> Path:
        return self.root / ".adopt.lock"

    @property
    def hook_errors(self) -> Path:
        return self.root / HOOK_ERROR_LOG

    @property
    def errors_log(self) -> Path:
        """The tracebacks of crashes (``errors.describe``)."""
        return self.root / "errors.log"

    def exists(self) -> bool:
        """Whether the home's folder is there (nothing is made before the first write)."""
        return self.root.is_dir()

    @property
    def hook_claims(self) -> Path:
        """Which hook call took which session's start (one file a claim)."""
        return self.root / ".hook-claims"

    @property
    def recording(self) -> Path:
        """One marker a recorder that is writing."""
        return self.root / ".recording"

    @property
    def sweep_started(self) -> Path:
        """When the last sweep for finished sessions began."""
        return self.root / ".sweep-started"

    @property
    def native_seen(self) -> Path:
        """Which of Claude Code's own memory files were read, and as what."""
        return self.root / ".claude-memory.json"

    @property
    def received(self) -> Path:
        """What each session was given, one file a session (read by the prompt hook)."""
        return self.root / ".received"

    @property
    def last_injection(self) -> Path:
        """What the last start injected (``memlog explain`` reads it)."""
        return self.root / ".last-injection.json"

    @property
    def pages(self) -> Path:
        """The page's servers, one file each, and the generation they show."""
        return self.root / ".pages"


def resolve_home(env: Mapping[str, str] | None = None) -> Home:
    """The memlog home named by ``MEMLOG_HOME``, else the default."""
    environ = os.environ if env is None else env
    value = environ.get("MEMLOG_HOME", "").strip()
    return Home(Path(value).expanduser() if value else DEFAULT_HOME.expanduser())


def resolve_cache(env: dict[str, str] | None = None) -> Path:
    """Where memlog keeps caches that are no projection of the log (the local model's
    runtime weights, digests of checked files): ``MEMLOG_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/memlog``, else ``~/.cache/memlog``.  Never the home: deleting every
    file of the home but ``events/`` and replaying must give the same home."""
    environ = os.environ if env is None else env
    value = environ.get("MEMLOG_CACHE_DIR", "").strip()
    if value:
        return Path(value).expanduser()
    base = environ.get("XDG_CACHE_HOME", "").strip() or "~/.cache"
    return Path(base).expanduser() / "memlog"


def ensure_dir(path: Home | Path) -> Path:
    """Create ``path`` (and parents) with mode 0700; raise HomeError when impossible."""
    path = Path(path)
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise HomeError(f"cannot create {path}: {exc.strerror or exc}") from None
    return path


def hook_errors(home: Home) -> dict[str, object]:
    """How many failures the hook logged, and the last one."""
    try:
        text = home.hook_errors.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {"count": 0, "last": ""}
    stamped = [ln for ln in text.splitlines() if ln[:4].isdigit() and "T" in ln[:20]]
    return {"count": len(stamped), "last": stamped[-1] if stamped else ""}
