"""What every command shares: the home, the log, errors and output."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import click
import msgspec

from memlog.commands.base import InputError as InputError
from memlog.commands.base import record_crash as record_crash
from memlog.config import Config, load_config
from memlog.embeddings.reembed import embed_entries, pending_entries
from memlog.embeddings.registry import make_provider, space_for
from memlog.errors import MemlogError
from memlog.eventlog.log import DamageHandler, EventLog
from memlog.home import resolve_home
from memlog.keywords import label_entries, needs_labels
from memlog.project import find_project_root
from memlog.projections.sqlite_view import store
from memlog.projections.sqlite_view.vectors import Space
from memlog.projections.views import CatchUp, catch_up


def home() -> Path:
    return resolve_home()


def open_log(command: str, redact: bool = True) -> EventLog:
    return EventLog(home(), command=command, redact=redact)


def echo_json(value: Any) -> None:
    """Print ``value`` as JSON (msgspec handles Structs, tuples and bytes)."""
    click.echo(msgspec.json.encode(value).decode("utf-8"))


def project_config() -> Config:
    """The configuration of the project the command runs in (read once per command)."""
    context = click.get_current_context(silent=True)
    meta: dict[str, object] = context.meta if context is not None else {}
    if "memlog.config" not in meta:
        config, warnings = load_config(find_project_root(Path.cwd()))
        warn([f"config: {w}" for w in warnings])
        meta["memlog.config"] = config
    found: Config = meta["memlog.config"]  # type: ignore[assignment]
    return found


def current_space() -> Space:
    """The embedding space in force (configuration decides; local MiniLM by default)."""
    return space_for(project_config())


def after_append(
    entry_ids: Iterable[str], supplied: Mapping[str, Sequence[str]] | None = None
) -> list[str]:
    """Once new observations are in the log: update the views, embed and label the new
    entries where possible, and update the views again if that appended anything.

    Every failure here is a warning: the log already holds what was recorded.
    """
    ids = set(entry_ids)
    notes = refresh_views()
    embedded, more_vectors = _embed_new(ids)
    labelled, more_labels = _label_new(ids, supplied or {})
    notes += embedded + labelled
    return notes + (refresh_views() if more_vectors or more_labels else [])


def _embed_new(entry_ids: set[str]) -> tuple[list[str], bool]:
    """Embed the given entries now if the provider can; otherwise they stay pending."""
    space = current_space()
    try:
        db = store.connect(home() / store.DB_NAME)
        try:
            entries = pending_entries(db, space, ids=set(entry_ids))
        finally:
            db.close()
        if not entries:
            return [], False
        provider = make_provider(project_config(), home())
        try:
            outcome = embed_entries(open_log("embed"), entries, provider, space)
        finally:
            provider.close()
    except (MemlogError, sqlite3.Error) as exc:
        return [f"not embedded now ({exc}); memlog reembed will do it"], False
    notes = [f"{outcome.pending} entries left for memlog reembed: {outcome.stopped}"]
    return (notes if outcome.stopped else []), outcome.embedded > 0


def _label_new(entry_ids: set[str], given: Mapping[str, Sequence[str]]) -> tuple[list[str], bool]:
    """Label the given entries with keywords now (``given``: the writer's own keywords)."""
    config = project_config()
    if config.memory_keyword_provider == "off":
        return [], False
    try:
        db = store.connect(home() / store.DB_NAME)
        try:
            entries = store.load_entries(db, entry_ids).values()
        finally:
            db.close()
        todo = [e for e in entries if e.live and needs_labels(e, given)]
        outcome = label_entries(open_log("label"), todo, config, given)
    except (MemlogError, sqlite3.Error) as exc:
        return [f"keywords not generated ({exc})"], False
    return [f"keywords: {note}" for note in outcome.notes], bool(outcome.events)


def caught_up(on_damage: DamageHandler | None = None) -> CatchUp:
    """Bring the views up to the end of the log before reading them."""
    return catch_up(home(), current_space(), on_damage)


def refresh_views() -> list[str]:
    """After an append: update the views; a failure here is a warning, the log has the data."""
    try:
        return caught_up().notes
    except MemlogError as exc:
        return [f"views not updated ({exc}); the next command retries"]
    except OSError as exc:  # the markdown files (the global store among them)
        return [
            f"global store not written ({exc}); the log holds every event and the next "
            "memlog command (or memlog replay) writes it"
        ]


def warn(lines: list[str]) -> None:
    for line in lines:
        click.echo(f"memlog: {line}", err=True)
