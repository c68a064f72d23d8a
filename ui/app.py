"""The page's routes: entries, one entry, the next session, the log, the markdown files.

Every route only reads, through the library API (``api.browsing``), and
takes ``as_of`` (a sequence number or an ISO time) to show the views as
they were then.  Plain HTML forms and links: nothing needs JavaScript (the
security policy forbids scripts).  Branch memory files and extraction
audits (``memory.evolved`` events) get their own pages, which list them as
soon as the log holds any.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from memlog.api import browsing, reading
from memlog.api.browsing import Snapshots, View
from memlog.errors import EntryNotFound, InvalidInput, describe
from memlog.eventlog.events import TYPE_NAMES
from memlog.ui import tables
from memlog.ui.guard import Guard
from memlog.ui.render import page
from memlog.untrusted import shown
from memlog.vocabulary import CATEGORIES, SOURCES
from memlog.workspace import Workspace

PAGE = 50
#: the lessons held for review listed above the entries (all of them: ``status=held``)
HELD_SHOWN = 10
LOG_PAGE = 100
AUDITS_PAGE = 20
#: event types that record an extraction's audit
AUDIT_TYPES = ("memory.evolved",)
STATIC = Path(__file__).parent / "static"


@dataclass
class Site:
    """What every route shares: the workspace served and the snapshots of the past."""

    ws: Workspace
    snapshots: Snapshots


Endpoint = Callable[[Site, Request], Response]


def create_app(ws: Workspace, token: str, port: int, snapshots: Path) -> Guard:
    """The page for ``ws``, guarded for ``127.0.0.1:port`` and ``token``."""
    site = Site(ws, Snapshots(snapshots, ws.home))

    def route(path: str, endpoint: Endpoint) -> Route:
        def handle(request: Request) -> Response:  # sync: Starlette runs it in a thread
            return _guarded(site, request, endpoint)

        return Route(path, handle, methods=["GET", "HEAD"])

    routes = [
        route("/", entries_page),
        route("/entry/{entry_id}", entry_page),
        route("/next", next_page),
        route("/log", log_page),
        route("/audits", audits_page),
        route("/files", files_page),
        route("/branches", branches_page),
        Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
    ]
    return Guard(Starlette(routes=routes), token, port)


def _guarded(site: Site, request: Request, endpoint: Endpoint) -> Response:
    """The endpoint's page, or a page saying in one line what went wrong."""
    try:
        return endpoint(site, request)
    except EntryNotFound as exc:
        return _error(request, 404, str(exc))
    except InvalidInput as exc:
        return _error(request, 400, str(exc))
    except Exception as exc:  # noqa: BLE001 - a failure is a page, never a traceback
        return _error(request, 500, describe(exc, site.ws.home.errors_log).message)


def _error(request: Request, status: int, message: str) -> Response:
    context: dict[str, Any] = {"as_of": "", "view": None, "notes": [], "active": ""}
    html = page("error.html", status=status, message=message, **context)
    return HTMLResponse(html, status_code=status)


def _view(site: Site, request: Request) -> tuple[View, list[str]]:
    as_of = request.query_params.get("as_of", "").strip()
    if as_of:
        return site.snapshots.at(site.ws, as_of), []
    return browsing.live(site.ws)


def _render(template: str, view: View, notes: list[str], active: str, **more: Any) -> Response:
    context = {"as_of": view.until, "view": view, "notes": notes, "active": active}
    return HTMLResponse(page(template, **context, **more))


def _number(request: Request, name: str, default: int, low: int = 1) -> int:
    text = request.query_params.get(name, "").strip()
    if not text:
        return default
    if not text.isdigit() or int(text) < low:
        raise InvalidInput(f"{name} must be a whole number of at least {low}, not {shown(text)}")
    return int(text)


# -- entries --------------------------------------------------------------------------


def entries_page(site: Site, request: Request) -> Response:
    view, notes = _view(site, request)
    params = {k: request.query_params.get(k, "").strip() for k in _FILTERS}
    params["status"] = params["status"] or "live"
    number = _number(request, "page", 1)
    found = _ranked(view, params) if params["q"] else _listed(view, params, number)
    held = browsing.entries(view, reading.Filters(status="held"), HELD_SHOWN)
    return _render(
        "entries.html", view, notes, "entries", params=params, page_number=number,
        facets=browsing.facets(view), categories=CATEGORIES, sources=SOURCES,
        statuses=(*reading.STATUSES, "any"), empty=not view.has_view, page_size=PAGE,
        held=held, **found,
    )  # fmt: skip


_FILTERS = ("q", "category", "project", "branch", "status", "source")


def _filters(params: dict[str, str]) -> reading.Filters:
    status = params["status"]
    return reading.Filters(
        category=params["category"] or None,
        project=params["project"] or None,
        branch=params["branch"] or None,
        status=None if status == "any" else status,
        source=params["source"] or None,
    )


def _listed(view: View, params: dict[str, str], number: int) -> dict[str, Any]:
    listing = browsing.entries(view, _filters(params), PAGE, (number - 1) * PAGE)
    return {"total": listing.total, "rows": [(e, None) for e in listing.entries]}


def _ranked(view: View, params: dict[str, str]) -> dict[str, Any]:
    """The hook's ranking for the query; the other filters narrow what it found."""
    if not view.has_view:
        return {"total": 0, "rows": []}
    result, rows = browsing.ranked(view, params["q"], _filters({**params, "status": "live"}), PAGE)
    return {"total": len(rows), "rows": rows, "result": result}


def entry_page(site: Site, request: Request) -> Response:
    view, notes = _view(site, request)
    found = browsing.detail(view, request.path_params["entry_id"])
    return _render("entry.html", view, notes, "entries", detail=found)


# -- the next session ---------------------------------------------------------------


def next_page(site: Site, request: Request) -> Response:
    view, notes = _view(site, request)
    given = request.query_params.get("dir", "").strip()
    directory = given or (str(site.ws.root) if site.ws.root else "")
    limit = _number(request, "limit", 0, low=0) or None
    result, table, descriptions, stale = None, None, {}, []
    if directory:
        where = Path(directory).expanduser()
        result = browsing.next_session(view, where, limit)
        notes = [*notes, *result.notes]
        config = view.workspace(where.resolve(), exact=True).config
        table = tables.ranked(result, config.memory_injection_max_chars)
        descriptions = browsing.descriptions(view, [c.id for c in result.chosen])
        stale = browsing.stale_lessons(view, where)
    return _render(
        "next.html", view, notes, "next", directory=directory, limit=limit or "", result=result,
        table=table, descriptions=descriptions, stale=stale,
    )  # fmt: skip


# -- the log, audits, files --------------------------------------------------------------


def log_page(site: Site, request: Request) -> Response:
    view, notes = _view(site, request)
    kind = request.query_params.get("type", "").strip()
    if kind and kind not in TYPE_NAMES:
        raise InvalidInput(f"unknown event type {shown(kind)}")
    before = _number(request, "before", 0, low=0) or None
    found = browsing.events(view, (kind,) if kind else (), LOG_PAGE, before)
    return _render(
        "log.html", view, notes, "log", events=found, kind=kind, types=TYPE_NAMES,
        before=before, page_size=LOG_PAGE, title="Log",
    )  # fmt: skip


def audits_page(site: Site, request: Request) -> Response:
    view, notes = _view(site, request)
    before = _number(request, "before", 0, low=0) or None
    events = browsing.events(view, AUDIT_TYPES, AUDITS_PAGE, before)
    named = browsing.names(view, [i for event in events for i in event.entry_ids])
    found = tables.audits(events, named)
    return _render(
        "audits.html", view, notes, "audits", audits=found, page_size=AUDITS_PAGE, before=before,
        costs=browsing.costs(view),
    )  # fmt: skip


def files_page(site: Site, request: Request) -> Response:
    return _files(site, request, branches=False)


def branches_page(site: Site, request: Request) -> Response:
    return _files(site, request, branches=True)


def _files(site: Site, request: Request, branches: bool) -> Response:
    view, notes = _view(site, request)
    found = [(rel, size) for rel, size in browsing.files(view) if _is_branch(rel) == branches]
    shown = request.query_params.get("path", "").strip()
    text = browsing.file_text(view, shown) if shown else None
    active = "branches" if branches else "files"
    return _render("files.html", view, notes, active, files=found, shown=shown, text=text)


def _is_branch(rel: str) -> bool:
    return "/branches/" in rel
