"""Turning what the library returns into HTML: the templates and the helpers they use.

Jinja2 escapes every value it prints (memories hold arbitrary text), links
are built by ``link`` so every parameter is URL-encoded, and each page keeps
the point in time it shows (``as_of``) in all of its links and forms.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlencode

import jinja2

from memlog.api.reading import tag, use_of
from memlog.ui import words

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


_ENV.globals.update(link=link, tag=tag, summary=words.summary, details=words.details, use_of=use_of)


def page(template: str, **context: Any) -> str:
    """The HTML of ``template`` with ``context``."""
    return _ENV.get_template(template).render(**context)
