"""Write a realistic synthetic event log into a MEMLOG_HOME-like directory.

    python benchmarks/synthetic.py DIR --entries 10000 --events 100000 --seed 1 [--provider P]

The log holds ``--entries`` entries across the four categories and twenty
projects, each observed once and embedded once in the default space, or
``--provider``'s (unit float32 vectors, loosely clustered), then, interleaved in time,
repeated observations of existing entries (popular ones more often),
``entry.recalled`` events of about twenty ids each, keyword labels,
promotions, a few retirements and supersessions and some replacement
vectors, for ``--events`` events in all.  Events go through
``EventLog.append`` in batches of ``--batch`` (1000 by default: one append
is one batch, which readers hold back until its last line, so a batch far
larger than any real append would measure the reader, not the views).

The same seed gives a byte-identical log: sequence numbers, event ids and
timestamps (one year, evenly spread) come from the seed and the position in
the log, not from the clock.  The directory must not hold a log already.
"""

from __future__ import annotations

import argparse
import bisect
import random
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import msgspec
import numpy as np

from memlog.eventlog.events import (
    Category,
    Confidence,
    EventBase,
    Labelled,
    Observed,
    Promoted,
    Recalled,
    Reembedded,
    Retired,
    Source,
    Superseded,
    Writer,
    content_hash,
)
from memlog.eventlog.log import EventLog
from memlog.eventlog.vectors import quantise_rows
from memlog.vocabulary import DEFAULT_SPACE, DEFAULT_SPACES, Space

E = TypeVar("E", bound=EventBase)
T = TypeVar("T")
START_TIME = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)
SPAN = timedelta(days=365)
POPULARITY_TAIL = 2.0
WRITER = Writer(tool="memlog/synthetic", command="synthetic", host="synthetic", pid=0)

PROJECTS = (
    "atlas-api", "billing-service", "checkout-web", "data-pipeline", "design-system",
    "edge-gateway", "fleet-tracker", "graph-indexer", "helpdesk-bot", "infra-terraform",
    "inventory-sync", "ledger-core", "mobile-app", "notify-hub", "orders-worker",
    "search-relevance", "reporting-etl", "auth-proxy", "media-transcoder", "memlog",
)  # fmt: skip
CATEGORY_WEIGHTS: dict[Category, float] = {
    "patterns": 0.35, "anti-patterns": 0.25, "heuristics": 0.25, "facts": 0.15,
}  # fmt: skip
SOURCE_WEIGHTS: dict[Source, float] = {
    "retro": 0.5, "session-capture": 0.25, "manual": 0.1, "import": 0.1, "extraction": 0.05,
}  # fmt: skip
CONFIDENCE_WEIGHTS: dict[Confidence, float] = {"medium": 0.6, "high": 0.25, "low": 0.15}

COMPONENTS = (
    "parser", "tokenizer", "cache layer", "event log", "migration runner", "retry loop",
    "HTTP client", "connection pool", "CLI", "config loader", "test fixtures", "build script",
    "release pipeline", "markdown writer", "FTS5 index", "vector store", "hook script",
    "scheduler", "lock file", "schema validator", "JSON encoder", "date parser", "file watcher",
    "background worker", "auth middleware", "rate limiter", "queue consumer", "logging setup",
    "feature flags", "CI job", "payment adapter", "search endpoint", "webhook handler",
    "ORM layer", "template engine", "image resizer", "CSV importer", "session store",
)  # fmt: skip
ACTIONS = (
    "validate", "pin", "retry", "batch", "cache", "stream", "normalise", "escape", "index",
    "lock", "fsync", "truncate", "paginate", "debounce", "memoise", "profile", "mock",
    "snapshot", "quarantine", "checksum", "dedupe", "sort", "compress", "log", "sanitise",
)  # fmt: skip
OBJECTS = (
    "inputs", "timeouts", "file paths", "environment variables", "database writes",
    "network calls", "timestamps", "unicode text", "large payloads", "error messages",
    "temporary files", "subprocess output", "query strings", "version numbers", "test data",
    "API responses", "config keys", "row counts", "cache keys", "log lines", "retries",
    "migrations", "feature toggles", "webhooks", "partial writes",
)  # fmt: skip
CONDITIONS = (
    "before merging", "under concurrent writers", "on slow disks", "when the suite is flaky",
    "after a schema change", "in CI only", "on first run", "when a provider times out",
    "during a partial failure", "with non-ASCII input", "behind a proxy",
    "when the cache is cold", "on macOS", "on a fresh clone", "at the end of a release",
    "in the nightly job", "with more than ten thousand rows", "when the clock jumps",
)  # fmt: skip
OUTCOMES = (
    "to avoid silent data loss", "so failures are reproducible",
    "to keep startup under a second", "so reviewers can follow the change",
    "to stop duplicate rows", "so retries stay idempotent", "to keep the diff small",
    "so the hook never blocks", "to catch regressions early", "to keep memory flat",
    "so the next release does not repeat the incident", "to keep the p95 latency down",
)  # fmt: skip
HARMS = (
    "hides the real error", "corrupts the index", "doubles the bill", "deadlocks the workers",
    "makes the tests order-dependent", "leaks file descriptors", "loses the last write",
    "blocks the event loop", "breaks on Windows paths", "fills the disk", "masks flaky tests",
)  # fmt: skip
FACT_VERBS = (
    "stores", "keeps", "expects", "rejects", "writes", "reads", "caches", "exports", "signs",
)  # fmt: skip
REASONS = (
    "We lost two days to this during the last release.",
    "The retrospective traced three incidents to the same root cause.",
    "Reviewers kept asking for it, so it became the default.",
    "Profiling showed most of the time was spent here.",
    "A customer report reproduced it reliably on a slow laptop.",
    "The fix was small once the failure was reproducible.",
    "It only showed up under load, which made it expensive to find.",
    "Two teams solved it independently in the same way.",
    "The vendor documentation is silent on this, the source code is not.",
    "Skipping it saved minutes and cost a weekend.",
    "The test suite went from flaky to green after the change.",
    "It keeps the behaviour identical across operating systems.",
)  # fmt: skip
KEYWORDS = tuple(
    sorted(
        {w.lower() for c in COMPONENTS + ACTIONS + OBJECTS for w in c.split() if len(w) > 3}
        | {"sqlite", "python", "typescript", "docker", "postgres", "redis", "kafka", "pytest"}
        | {"latency", "security", "concurrency", "packaging", "observability", "testing"}
    )
)
QUERIES = (
    "flaky tests after migration", "retry with backoff", "sqlite locking", "parse dates",
    "cache invalidation", "release checklist", "webhook signature", "large csv import",
)  # fmt: skip


class Known(msgspec.Struct):
    """What the generator remembers of an entry it created."""

    id: str
    name: str
    description: str
    category: Category
    project: str
    promoted: bool = False
    retired: bool = False


class Plan(msgspec.Struct, frozen=True):
    """How many events of each kind the log holds (each entry: an observation and a vector)."""

    entries: int
    observations: int
    recalls: int
    labels: int
    promotions: int
    retirements: int
    supersessions: int
    revectors: int

    @classmethod
    def of(cls, entries: int, events: int) -> Plan:
        extra = {
            "labels": entries // 20,
            "promotions": max(1, entries * 3 // 100),
            "retirements": entries // 50,
            "supersessions": entries // 200,
            "revectors": entries // 50,
        }
        rest = events - 2 * entries - sum(extra.values())
        if entries < 1 or rest < 0:
            need = 2 * entries + sum(extra.values())
            raise SystemExit(f"--events must be at least {need} for {entries} entries")
        observations = rest * 55 // 100
        return cls(entries, observations, rest - observations, **extra)

    def tokens(self, rng: random.Random) -> list[str]:
        """The kinds of events in log order (a new entry stands for two events)."""
        counts = {
            "new": self.entries,
            "observe": self.observations,
            "recall": self.recalls,
            "label": self.labels,
            "promote": self.promotions,
            "retire": self.retirements,
            "supersede": self.supersessions,
            "revector": self.revectors,
        }
        head = min(self.entries, 25)  # a few entries before anything refers to them
        counts["new"] -= head
        rest = [kind for kind, n in counts.items() for _ in range(n)]
        rng.shuffle(rest)
        return ["new"] * head + rest


class Generator:
    """Deterministic events; ``known`` grows as entries are created."""

    def __init__(
        self, rng: random.Random, vectors: Iterator[bytes], space: Space = DEFAULT_SPACE
    ) -> None:
        self.rng = rng
        self.vectors = vectors
        self.space = space
        self.known: list[Known] = []
        self.seen: set[str] = set()
        #: running sum of the entries' popularity weights (Pareto, a long tail)
        self.weights: list[float] = []

    def events(self, tokens: Sequence[str]) -> Iterator[EventBase]:
        for kind in tokens:
            if kind == "new":
                yield from self.new_entry()
            elif kind == "observe":
                yield self.observe_again()
            elif kind == "recall":
                yield self.recall()
            else:  # a pick that finds nothing to do becomes a recall: the total stays exact
                yield getattr(self, kind)() or self.recall()

    # -- picking entries -------------------------------------------------------

    def popular(self) -> Known:
        """An existing entry, picked by its popularity weight."""
        index = bisect.bisect_right(self.weights, self.rng.random() * self.weights[-1])
        return self.known[min(index, len(self.known) - 1)]

    def recent_or_popular(self) -> Known:
        if self.rng.random() < 0.3:
            return self.known[-1 - int(min(len(self.known), 200) * self.rng.random())]
        return self.popular()

    # -- text --------------------------------------------------------------------

    def pick(self, words: Sequence[str]) -> str:
        return words[int(self.rng.random() * len(words))]

    def text(self, category: Category, project: str) -> tuple[str, str]:
        """A name and a description, unique by content hash."""
        while True:
            name, description = self._text(category, project)
            if content_hash(description) not in self.seen:
                self.seen.add(content_hash(description))
                return name, description

    def _text(self, category: Category, project: str) -> tuple[str, str]:
        p = self.pick
        action, objects, component = p(ACTIONS), p(OBJECTS), p(COMPONENTS)
        if category == "anti-patterns":
            name = f"Unchecked {action} of {objects} in the {component}"
            body = f"Do not {action} {objects} in the {component} {p(CONDITIONS)}: it {p(HARMS)}."
        elif category == "patterns":
            name = f"{action.capitalize()} {objects} in the {component}"
            body = f"{action.capitalize()} {objects} in the {component} {p(CONDITIONS)} "
            body += f"{p(OUTCOMES)}."
        elif category == "heuristics":
            name = f"Prefer to {action} {objects} {p(CONDITIONS)}"
            body = f"When the {component} touches {objects} {p(CONDITIONS)}, {action} them "
            body += f"first {p(OUTCOMES)}; otherwise it {p(HARMS)}."
        else:
            name = f"{project} {component} {p(FACT_VERBS)} {objects}"
            body = f"The {component} of {project} {p(FACT_VERBS)} {objects} "
            body += f"{p(CONDITIONS)} (since version {self.rng.randint(1, 9)}."
            body += f"{self.rng.randint(0, 30)})."
        return name, body

    def reasoning(self) -> str:
        if self.rng.random() < 0.2:
            return ""
        return " ".join(self.rng.sample(REASONS, self.rng.randint(1, 3)))

    def keywords(self) -> tuple[str, ...]:
        return tuple(self.rng.sample(KEYWORDS, self.rng.randint(3, 8)))

    def references(self, project: str) -> tuple[str, ...]:
        refs = []
        for _ in range(self.rng.choice((0, 1, 1, 2, 3))):
            kind = self.rng.random()
            if kind < 0.5:
                module = self.pick(COMPONENTS).replace(" ", "_").lower()
                refs.append(f"src/{module}/core.py:{self.rng.randint(1, 900)}")
            elif kind < 0.8:
                refs.append(f"https://github.com/acme/{project}/pull/{self.rng.randint(1, 4000)}")
            else:
                refs.append(f"docs/features/{self.rng.randint(1, 300):03d}-retro/retro.md")
        return tuple(refs)

    def feature(self) -> str:
        return "" if self.rng.random() < 0.15 else f"{self.rng.randint(1, 300):03d}"

    def weighted(self, weights: dict[T, float]) -> T:
        return self.rng.choices(list(weights), list(weights.values()))[0]

    # -- events ------------------------------------------------------------------

    def new_entry(self) -> Iterator[EventBase]:
        category = self.weighted(CATEGORY_WEIGHTS)
        project = self.pick(PROJECTS)
        name, description = self.text(category, project)
        source: Source = "extraction" if category == "facts" else self.weighted(SOURCE_WEIGHTS)
        imported = source == "import"
        event = Observed(
            name=name,
            description=description,
            category=category,
            reasoning=self.reasoning(),
            confidence=self.weighted(CONFIDENCE_WEIGHTS),
            keywords=self.keywords(),
            references=self.references(project),
            source=source,
            project=project,
            feature=self.feature(),
            count=self.rng.randint(1, 6) if imported else None,
            last_observed=f"2024-{self.rng.randint(1, 12):02d}-15" if imported else "",
            origin=f"docs/knowledge-bank/{category}.md" if imported else "",
            details=("Cost: an afternoon of bisecting",) if imported else (),
        )
        self.known.append(Known(event.entry_id, name, description, category, project))
        total = self.weights[-1] if self.weights else 0.0
        self.weights.append(total + self.rng.paretovariate(POPULARITY_TAIL))
        yield event
        yield self.vector_of(self.known[-1])

    def vector_of(self, entry: Known) -> Reembedded:
        space = self.space
        return Reembedded(
            entry_id=entry.id,
            provider=space.provider,
            model=space.model,
            dimensions=space.dimensions,
            vector=next(self.vectors),
            encoding="q8",
        )

    def observe_again(self) -> Observed:
        entry = self.popular()
        description = entry.description
        if self.rng.random() < 0.1:  # same entry, written a little differently
            description = "  " + description.upper() + " "
        project = entry.project if self.rng.random() < 0.6 else self.pick(PROJECTS)
        entry.retired = False
        return Observed(
            name=entry.name,
            description=description,
            category=entry.category,
            reasoning=self.reasoning() if self.rng.random() < 0.2 else "",
            confidence=self.weighted(CONFIDENCE_WEIGHTS),
            keywords=self.keywords()[:2] if self.rng.random() < 0.3 else (),
            references=self.references(project)[:1] if self.rng.random() < 0.15 else (),
            source=self.weighted(SOURCE_WEIGHTS),
            project=project,
            feature=self.feature(),
        )

    def recall(self) -> Recalled:
        wanted = self.rng.randint(15, 25)
        ids: dict[str, None] = {}
        for _ in range(wanted * 3):
            if len(ids) >= min(wanted, len(self.known)):
                break
            ids[self.recent_or_popular().id] = None
        return Recalled(
            ids=tuple(ids),
            session_id=uuid.UUID(int=self.rng.getrandbits(128), version=4).hex,
            project=self.pick(PROJECTS),
            query=self.pick(QUERIES) if self.rng.random() < 0.3 else "",
            mode=self.rng.choice(("session-start", "session-start", "search")),
        )

    def label(self) -> Labelled:
        return Labelled(entry_id=self.popular().id, keywords=self.keywords(), provider="local")

    def promote(self) -> Promoted | None:
        for _ in range(20):
            entry = self.popular()
            if not entry.promoted and entry.category != "facts":
                entry.promoted = True
                return Promoted(
                    entry_id=entry.id,
                    reason="seen in more than one project",
                    project=entry.project,
                    feature=self.feature(),
                )
        return None

    def anyone(self) -> Known:
        return self.known[int(self.rng.random() * len(self.known))]

    def retire(self) -> Retired | None:
        entry = self.anyone()
        if entry.retired:
            return None
        entry.retired = True
        return Retired(entry_id=entry.id, reason="no longer true after the rewrite")

    def supersede(self) -> Superseded | None:
        old, new = self.anyone(), self.recent_or_popular()
        if old.id == new.id:
            return None
        return Superseded(entry_id=old.id, by=new.id, reason="a sharper version was written")

    def revector(self) -> Reembedded:
        return self.vector_of(self.popular())


def unit_vectors(seed: int, count: int, dims: int, clusters: int = 80) -> Iterator[bytes]:
    """``count`` unit vectors, loosely clustered, as events carry them (``q8``)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, dims)).astype(np.float32)
    for start in range(0, count, 4096):
        n = min(4096, count - start)
        picks = centres[rng.integers(0, clusters, n)]
        batch = picks + 0.8 * rng.standard_normal((n, dims)).astype(np.float32)
        batch /= np.linalg.norm(batch, axis=1, keepdims=True)
        yield from quantise_rows(batch.astype("<f4"))


class SyntheticLog(EventLog):
    """An ``EventLog`` whose envelope (id, time, writer) comes from the seed, not the clock."""

    def __init__(self, home: Path, seed: int, total: int) -> None:
        super().__init__(home, redact=False, screen=False)  # generated: no secret, no steering
        self.writer = WRITER
        self._ids = random.Random(f"ids-{seed}")
        self._step = SPAN / max(total, 1)

    def _stamp(self, events: Sequence[E], first: int, *args: Any, **kwargs: Any) -> list[E]:
        """The log's own stamps (sequence, batch, …) with the time and id made reproducible."""
        return [self._restamped(e) for e in super()._stamp(events, first, *args, **kwargs)]

    def _restamped(self, event: E) -> E:
        when = START_TIME + self._step * event.seq
        millis = int(when.timestamp() * 1000)
        rand = self._ids.getrandbits(74)
        value = millis << 80 | 0x7 << 76 | (rand >> 62) << 64 | 0b10 << 62 | rand & ((1 << 62) - 1)
        return msgspec.structs.replace(
            event, id=str(uuid.UUID(int=value)), ts=when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        )


def generate(
    home: Path,
    entries: int = 10_000,
    events: int = 100_000,
    seed: int = 1,
    batch: int = 1000,
    space: Space = DEFAULT_SPACE,
) -> int:
    """Write the log into ``home``; return the number of events appended."""
    log = SyntheticLog(home, seed, events)
    if log.segments():
        raise SystemExit(f"{log.home.events} already holds a log")
    plan = Plan.of(entries, events)
    rng = random.Random(seed)
    vectors = unit_vectors(seed, entries + plan.revectors, space.dimensions)
    pending: list[EventBase] = []
    written = 0
    for event in Generator(rng, vectors, space).events(plan.tokens(rng)):
        pending.append(event)
        if len(pending) >= batch:
            written += len(log.append(pending))
            pending = []
    return written + len(log.append(pending))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("home", type=Path, help="directory to write (events/ goes inside)")
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--batch", type=int, default=1000, help="events per append")
    parser.add_argument(
        "--provider", choices=sorted(DEFAULT_SPACES), default=DEFAULT_SPACE.provider,
        help="the embedding space of the vectors (that provider's default model)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    started = time.perf_counter()
    space = DEFAULT_SPACES[args.provider]
    count = generate(args.home, args.entries, args.events, args.seed, args.batch, space)
    took = time.perf_counter() - started
    print(f"{count} events, {args.entries} entries in {args.home} ({took:.1f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
