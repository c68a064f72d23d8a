"""Reading what memlog knows: events, one entry and its history, listings, figures.

Light on purpose: nothing here loads numpy or a provider, so ``memlog log``,
``show`` and ``stats`` start quickly.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime

from memlog.eventlog.bounds import Bound, parse_bound, within
from memlog.eventlog.events import Event
from memlog.eventlog.log import Damage
from memlog.home import hook_errors
from memlog.projections.fold import Entry, Spend
from memlog.projections.sqlite_view import ledger, queries
from memlog.projections.sqlite_view.queries import Listing
from memlog.workspace import Workspace


def tag(event: Event) -> str:
    """The type tag of an event (``entry.observed`` …)."""
    return str(event.__struct_config__.tag)


def events(
    ws: Workspace,
    types: Sequence[str] = (),
    entry: str | None = None,
    since: str | None = None,
    until: str | None = None,
) -> Iterator[Event]:
    """Events in log order, oldest first: of some types, about an entry, within bounds."""
    return (event for _, event in numbered(ws, types, entry, since, until))


def numbered(
    ws: Workspace,
    types: Sequence[str] = (),
    entry: str | None = None,
    since: str | None = None,
    until: str | None = None,
) -> Iterator[tuple[int, Event]]:
    """``events`` with each one's number in log order: its sequence, or, in a log kept
    per device, its rank in the merged order (what ``--since``/``--until`` count)."""
    lower = parse_bound(since) if since else None
    upper = parse_bound(until) if until else None
    wanted = set(types)
    for record in ws.log("log").read():
        if _matches(record.ordinal, record.event, wanted, entry, lower, upper):
            yield record.ordinal, record.event


def _matches(
    number: int,
    event: Event,
    types: set[str],
    entry: str | None,
    since: Bound | None,
    until: Bound | None,
) -> bool:
    if types and tag(event) not in types:
        return False
    if entry and not any(i.startswith(entry) for i in event.entry_ids):
        return False
    return within(number, event.ts, since, until)


def entry(ws: Workspace, prefix: str) -> Entry:
    """The entry whose id starts with ``prefix`` (unique), as the views have it now."""
    ws.catch_up()
    return queries.find_entry(ws.home, prefix)


def history(ws: Workspace, entry_id: str) -> list[Event]:
    """Every event about the entry, in log order."""
    return [r.event for r in ws.log("show").read() if entry_id in r.event.entry_ids]


def entries(ws: Workspace, ids: Sequence[str], vectors: bool = False) -> list[Entry]:
    """The entries of ``ids`` that exist, in id order."""
    return queries.entries(ws.home, ids, vectors)


def list_live(
    ws: Workspace, category: str | None = None, project: str | None = None, limit: int = 50
) -> tuple[Listing, list[str]]:
    """Live entries, most recently updated first; and notes from bringing the views up."""
    notes = ws.refresh()
    if not (ws.home / "memory.db").exists():
        return Listing(0, []), notes
    return queries.list_live(ws.home, category, (project or "").strip() or None, limit), notes


def stats(ws: Workspace) -> dict[str, object]:
    """Events by type, live entries by category and project, pending vectors, hook errors."""
    log = ws.log("stats")
    damaged: list[Damage] = []
    counts = Counter(tag(r.event) for r in log.read(on_damage=damaged.append))
    ws.catch_up()
    space = ws.space
    return {
        "home": str(log.home),
        "events": counts.total(),
        "by_type": dict(sorted(counts.items())),
        "damaged_lines": len(damaged),
        "segments": len(log.segments()),
        "entries": queries.entry_counts(ws.home),
        "embeddings": {
            "provider": space.provider,
            "model": space.model,
            "dimensions": space.dimensions,
            "pending": queries.pending_count(ws.home, space),
        },
        "hook_errors": hook_errors(ws.home),
        "extraction": extraction(ws),
    }


def extraction(ws: Workspace) -> dict[str, object]:
    """Sessions by status, and the cost of model calls today and in all (with the budget)."""
    counts = ledger.session_counts(ws.home)
    today, total = ledger.spend(ws.home, utc_day()), ledger.spend(ws.home)
    return {
        "provider": ws.config.memory_extraction_provider,
        "sessions": {s: counts.get(s, 0) for s in ("pending", "open", "extracted", "skipped")}
        | {"failed": counts.get("error", 0)},
        "today": _spend(today),
        "total": _spend(total),
        "daily_budget_usd": ws.config.memory_extraction_daily_budget_usd,
        "maintenance": ledger.maintenance_times(ws.home),
    }


def _spend(spend: Spend) -> dict[str, object]:
    return {
        "calls": spend.calls,
        "tokens_in": spend.tokens_in,
        "tokens_out": spend.tokens_out,
        "cost_usd": round(spend.cost_micros / 1_000_000, 6),
    }


def utc_day() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d")
