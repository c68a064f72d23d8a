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

    def __init__(self, root: Path | str) -> None:
        self.root = root = Path(root)
        # -- the log: one folder a device (``device``) of JSONL segments, and beside them
        self.events = events = root / "events"
        self.events_lock = events / ".lock"  # held by every append
        #: the highest stamp this home received: no later event is stamped below it
        self.clock_floor = events / ".clock"
        self.device_file = events / ".device"  # this home's device id
        #: what this folder was when the device id was made (a copied home differs)
        self.device_stamp = events / ".device-stamp"
        #: the key the keyed digests of this home are made with (never synced)
        self.local_key = events / ".local-key"
        self.spool = events / ".spool"  # events written while the log was busy
        #: a rewrite under way: the journal commits it, the staging names what it wrote
        self.rewrite_journal = events / ".rewrite.journal"
        self.rewrite_staging = events / ".rewrite.staging"
        self.quarantine = root / "quarantine.jsonl"  # lines a read could not trust, and why
        self.redaction_journal = root / ".redaction.journal"  # a redaction under way
        self.snapshot_marker = root / ".memlog-snapshot.json"  # a home as of one moment
        # -- the views
        self.db = root / "memory.db"
        self.index = root / "index"  # the packed files the database points at
        self.legacy_vectors = root / "vectors"  # the vectors of views before ``index/``
        self.views_damaged = root / ".views-damaged"  # damage found, its reason inside
        self.projects = root / "projects"  # the markdown view, one folder a project
        self.markdown_state = root / ".markdown-state.json"
        self.markdown_lock = root / ".markdown.lock"
        # -- sync
        self.sync_repo = root / "sync.git"
        self.sync_state = self.sync_repo / "memlog-sync.json"
        self.sync_lock = root / ".sync.lock"
        self.sync_key = root / "sync.key"  # seals what sync sends
        self.signing_key = root / "sync.device.key"  # signs what this device pushes
        # -- the hooks, extraction, the page
        self.hook_errors = root / HOOK_ERROR_LOG
        self.errors_log = root / "errors.log"  # crashes' tracebacks (``errors.describe``)
        self.hook_claims = root / ".hook-claims"  # which hook call took a session's start
        self.recording = root / ".recording"  # one marker a recorder at work
        self.sweep_started = root / ".sweep-started"
        self.extraction_lock = root / "extraction.lock"
        self.adopt_lock = root / ".adopt.lock"
        self.native_seen = root / ".claude-memory.json"  # Claude Code's files read, as what
        self.received = root / ".received"  # what each session was given
        self.last_injection = root / ".last-injection.json"  # read by ``memlog explain``
        self.pages = root / ".pages"  # the page's servers and their snapshots

    #: a home is never joined onto (not even a ``Path`` on the right): ask it where things are
    __truediv__ = None

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

    def exists(self) -> bool:
        """Whether the home's folder is there (nothing is made before the first write)."""
        return self.root.is_dir()

    def device(self, device_id: str) -> Path:
        """The folder of one device's segments."""
        return self.events / device_id

    def segment(self, rel: str) -> Path:
        """A segment by its name in the log: ``<device>/<name>``, or ``<name>`` when flat."""
        return self.events / rel

    def moving(self, device_id: str) -> Path:
        """Where a flat log's segments gather before they become ``device(device_id)``."""
        return self.events / f"{_MOVING}{device_id}"

    def db_aside(self, tag: str) -> Path:
        """Where a view is rebuilt before it replaces ``db`` (``tag``: the builder's pid, a
        dash, random letters)."""
        return self.root / f"{_ASIDE}{tag}"

    def sync_repo_aside(self, tag: str) -> Path:
        """Where a repository is made, or an old one put, before it takes its place."""
        return self.root / f".{self.sync_repo.name}.{tag}"

    @staticmethod
    def found(named: Path) -> list[Path]:
        """What is there of the names ``named`` stands for: one of the asides above with
        ``*`` for its tag (what a killed move, rebuild, init or reset left)."""
        return sorted(named.parent.glob(named.name))

    def markdown(self, rel: str) -> Path:
        """A file of the markdown view, by its path from the home (``projects/…``)."""
        return self.root / rel

    def folders(self) -> list[Path]:
        """Every folder of the home memlog writes files in but the markdown view's."""
        found = [self.root, self.events, self.spool, self.legacy_vectors, self.index]
        found.append(self.sync_repo)
        with contextlib.suppress(OSError):
            found += [p for p in self.events.iterdir() if p.is_dir() and not p.is_symlink()]
        return found


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
