"""Reading what memlog knows: events, one entry and its history, listings, figures.

Light on purpose: nothing here loads numpy or a provider, so ``memlog log``,
``show`` and ``stats`` start quickly.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any, NamedTuple

from memlog.capture.extraction.whose import split_here
from memlog.citations import Checked
from memlog.errors import InvalidInput
from memlog.eventlog import devices, scan
from memlog.eventlog.bounds import Bound, parse_bound, within
from memlog.eventlog.events import Event
from memlog.eventlog.log import Damage
from memlog.home import hook_errors
from memlog.projections.fold import Entry, Spend
from memlog.projections.sqlite_view import ledger, listing, queries
from memlog.projections.sqlite_view.listing import STATUSES as STATUSES
from memlog.projections.sqlite_view.listing import Filters as Filters
from memlog.projections.sqlite_view.queries import Listing
from memlog.vocabulary import counted
from memlog.workspace import Workspace

#: what every reading command says on a home with nothing in it yet
NO_MEMORIES = (
    "no memories yet: memlog import PATH… or memlog observe --name … --description … "
    "--category … adds some"
)


def use_of(entry: Entry) -> str:
    """What sessions did with an entry, in words: ``applied in 7 of 30 sessions`` (of those
    judged; the contradicting ones said too), or that none was judged yet."""
    if not entry.judged_count:
        return "not judged in any session yet"
    sessions = "session" if entry.judged_count == 1 else "sessions"
    said = f"applied in {entry.applied_count} of {entry.judged_count} {sessions}"
    if entry.contradicted_count:
        said += f", contradicted in {entry.contradicted_count}"
    return said


class Stale(NamedTuple):
    """A lesson of the project whose citations the working tree no longer all has."""

    entry: Entry
    checked: Checked


def stale(ws: Workspace, partly: bool = False) -> list[Stale]:
    """The live lessons seen in ``ws``'s project whose cited files are all gone from its
    working tree (and, with ``partly``, those missing some of what they cite), by name."""
    from memlog.retrieval.stale import of_project

    if ws.root is None:
        raise InvalidInput("not in a project: run it in one, or give --project PATH")
    ws.catch_up()
    every = queries.entries(ws.home, vectors=False)
    mine = [e for e in every if e.live and ws.project in e.projects]
    found = of_project(ws, mine)
    by_id = {e.id: e for e in mine}
    kept = [Stale(by_id[i], c) for i, c in found.items() if c.stale or (partly and c.partly)]
    return sorted(kept, key=lambda s: (not s.checked.stale, s.entry.name.lower(), s.entry.id))


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


def last(
    ws: Workspace,
    limit: int,
    types: Sequence[str] = (),
    entry: str | None = None,
    since: str | None = None,
    until: str | None = None,
) -> list[tuple[int, Event]]:
    """The last ``limit`` events ``numbered`` would give, in log order.  A log kept in one
    folder is read backwards from the end (or from ``until``) and only until they are
    found; an entry's prefix, or a log kept per device, takes a pass over the log."""
    log = ws.log("log")
    lower = parse_bound(since) if since else None
    upper = parse_bound(until) if until else None
    if entry or devices.is_per_device(log.home):
        return list(deque(numbered(ws, types, entry, since, until), maxlen=limit))
    found: list[tuple[int, Event]] = []
    up_to = upper.seq if upper is not None else None
    for event in scan.newest(log, types, up_to) if limit else ():
        if lower is not None and lower.seq is not None and event.seq < lower.seq:
            break
        if _matches(event.seq, event, set(types), None, lower, upper):
            found.append((event.seq, event))
            if len(found) >= limit:
                break
    return found[::-1]


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


def history(ws: Workspace, entry_id: str, description: str = "") -> list[Event]:
    """Every event about the entry, in log order (only the lines naming it are decoded)."""
    return list(scan.about(ws.log("show"), entry_id, description))


def public(entry: Entry) -> dict[str, object]:
    """An entry as plain data for JSON: every field, vectors as their dimensions only."""
    fields = {f: getattr(entry, f) for f in entry.__struct_fields__ if f != "vectors"}
    fields["vectors"] = {k: v.dimensions for k, v in entry.vectors.items()}
    return fields


def entries(ws: Workspace, ids: Sequence[str], vectors: bool = False) -> list[Entry]:
    """The entries of ``ids`` that exist, in id order."""
    return queries.entries(ws.home, ids, vectors)


def list_live(
    ws: Workspace, category: str | None = None, project: str | None = None, limit: int = 50
) -> tuple[Listing, list[str]]:
    """Live entries, most recently updated first; and notes from bringing the views up."""
    notes = ws.refresh()
    if not has_view(ws):
        return Listing(0, []), notes
    return queries.list_live(ws.home, category, (project or "").strip() or None, limit), notes


def is_empty(ws: Workspace) -> bool:
    """Whether the home holds no memory at all yet: no view, and a log with nothing in it
    (a snapshot written by ``replay --to`` has views and no log: it is not empty)."""
    return not has_view(ws) and not scan.has_events(ws.home)


def has_view(ws: Workspace) -> bool:
    return ws.home.db.exists()


def list_entries(
    ws: Workspace, filters: Filters, limit: int = 50, offset: int = 0
) -> tuple[Listing, list[str]]:
    """Entries matching ``filters``, most recently updated first; notes from catching up."""
    notes = ws.refresh()
    if not has_view(ws):
        return Listing(0, []), notes
    return listing.list_entries(ws.home, filters, limit, offset), notes


_NO_ENTRIES: dict[str, object] = {"live": 0, "by_status": {}, "by_category": {}, "by_project": {}}


def stats(ws: Workspace, catch_up: bool = True) -> dict[str, object]:
    """Events by type, live entries by category and project, pending vectors, hook errors;
    the views are caught up first unless ``catch_up`` is False (they are read as they are,
    and nothing is written)."""
    log = ws.log("stats")
    damaged: list[Damage] = []
    counts = Counter(tag(r.event) for r in log.read(on_damage=damaged.append))
    if catch_up:
        ws.catch_up()
    space = ws.space
    viewed = has_view(ws)
    return {
        "home": str(log.home),
        "events": counts.total(),
        "by_type": dict(sorted(counts.items())),
        "damaged_lines": len(damaged),
        "segments": len(log.segments()),
        "entries": queries.entry_counts(ws.home) if viewed else _NO_ENTRIES,
        "embeddings": {
            "provider": space.provider,
            "model": space.model,
            "dimensions": space.dimensions,
            "pending": queries.pending_count(ws.home, space) if viewed else 0,
        },
        "hook_errors": hook_errors(ws.home),
        "extraction": extraction(ws),
    }


def extraction(ws: Workspace) -> dict[str, object]:
    """Sessions by status, and the cost of model calls today and in all (with the budget).

    ``pending`` counts the sessions this machine extracts (``memorize --pending`` takes
    the same ones); ``elsewhere`` those a synced log holds for the machines that recorded
    them."""
    counts = ledger.session_counts(ws.home)
    _, elsewhere = split_here(ws.home, ledger.sessions(ws.home, ["pending"]))
    pending = counts.get("pending", 0) - len(elsewhere)
    today, total = ledger.spend(ws.home, utc_day()), ledger.spend(ws.home)
    return {
        "provider": ws.config.memory_extraction_provider,
        "sessions": {"pending": pending}
        | {s: counts.get(s, 0) for s in ("open", "extracted", "skipped")}
        | {"failed": counts.get("error", 0), "elsewhere": len(elsewhere)},
        "today": _spend(today),
        "total": _spend(total),
        "daily_budget_usd": ws.config.memory_extraction_daily_budget_usd,
        "maintenance": ledger.maintenance_times(ws.home),
    }


def cost_said(figures: dict[str, Any]) -> list[str]:
    """What extraction cost today and in all, in the words ``memlog stats`` and the page's
    audits both show (``figures``: what ``extraction`` returns)."""
    today, total = figures["today"], figures["total"]
    return [
        f"cost today: ${today['cost_usd']:.4f} of ${figures['daily_budget_usd']:.2f} "
        f"({_calls(today)})",
        f"cost in total: ${total['cost_usd']:.4f} ({_calls(total)})",
    ]


def _calls(spend: dict[str, Any]) -> str:
    return (
        f"{counted(spend['calls'], 'call')}, {spend['tokens_in']:,} tokens in, "
        f"{spend['tokens_out']:,} out"
    )


def _spend(spend: Spend) -> dict[str, object]:
    return {
        "calls": spend.calls,
        "tokens_in": spend.tokens_in,
        "tokens_out": spend.tokens_out,
        "cost_usd": round(spend.cost_micros / 1_000_000, 6),
    }


def utc_day() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d")
