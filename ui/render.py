"""Turning what the library returns into HTML: the templates and the helpers they use.

Jinja2 escapes every value it prints (memories hold arbitrary text), links
are built by ``link`` so every parameter is URL-encoded, and each page keeps
the point in time it shows (``as_of``) in all of its links and forms.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlencode

import jinja2
import msgspec

from memlog.api.reading import tag, use_of
from memlog.eventlog.events import Event, Observed, Recalled, Reembedded

ENVELOPE = ("seq", "id", "ts", "v", "writer", "batch_end", "redacted")
_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("memlog.ui", "templates"),
    autoescape=jinja2.select_autoescape(default=True),
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


def link(where: str, /, **params: Any) -> str:
    """The path ``where`` with the non-empty ``params`` as its query string."""
    kept = [(k, str(v)) for k, v in params.items() if v not in (None, "", False)]
    return quote(where) + (f"?{urlencode(kept)}" if kept else "")


def payload(event: Event) -> dict[str, Any]:
    """An event's own fields, for display (a vector shown as its size)."""
    fields = msgspec.structs.asdict(event)
    shown = {k: v for k, v in fields.items() if k not in ENVELOPE and v not in ("", (), None)}
    if isinstance(event, Reembedded):
        shown["vector"] = f"{len(event.vector) // 4} floats"
    return shown


def summary(event: Event) -> str:
    """One line about an event: what happened, in its own words."""
    if isinstance(event, Observed):
        where = ", ".join(p for p in (event.project, event.feature) if p)
        return f"{event.category} from {event.source}" + (f" ({where})" if where else "")
    if isinstance(event, Recalled):
        where = f" in {event.project}" if event.project else ""
        return f"recalled {len(event.ids)} entries{where}"
    parts = [f"{k}: {_short(v)}" for k, v in payload(event).items() if k not in ("entry_id",)]
    return "; ".join(parts)


def _short(value: Any) -> str:
    text = ", ".join(map(str, value)) if isinstance(value, list | tuple) else str(value)
    return text if len(text) <= 80 else text[:77] + "…"


_ENV.globals.update(link=link, tag=tag, payload=payload, summary=summary, use_of=use_of)


def page(template: str, **context: Any) -> str:
    """The HTML of ``template`` with ``context``."""
    return _ENV.get_template(template).render(**context)
