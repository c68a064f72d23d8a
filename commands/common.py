"""What every command shares: the home, the log, errors and output."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
import msgspec

from memlog.config import Config, load_config
from memlog.embeddings.reembed import embed_entries, pending_entries
from memlog.embeddings.registry import make_provider, space_for
from memlog.errors import MemlogError
from memlog.eventlog.log import DamageHandler, EventLog
from memlog.home import resolve_home
from memlog.project import find_project_root
from memlog.projections.sqlite_view import store
from memlog.projections.sqlite_view.vectors import Space
from memlog.projections.views import CatchUp, catch_up

ERROR_LOG = "errors.log"


class InputError(click.ClickException):
    """Bad input: one line on stderr, exit 2, nothing appended."""

    exit_code = 2


def home() -> Path:
    return resolve_home()


def open_log(command: str, redact: bool = True) -> EventLog:
    return EventLog(home(), command=command, redact=redact)


def record_crash(exc: BaseException) -> str:
    """Keep the traceback in the error log; return the one line a user sees."""
    line = f"internal error: {type(exc).__name__}: {exc}"
    try:
        path = home() / ERROR_LOG
        stamp = datetime.now(UTC).isoformat()
        text = "".join(traceback.format_exception(exc))
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(f"--- {stamp} {' '.join(sys.argv)}\n{text}")
        return f"{line} (details in {path})"
    except OSError:
        return line


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


def embed_new(entry_ids: Iterable[str]) -> list[str]:
    """Embed the given entries now if the provider can; otherwise they stay pending."""
    space = current_space()
    try:
        caught_up()
        db = store.connect(home() / store.DB_NAME)
        try:
            entries = pending_entries(db, space, ids=set(entry_ids))
        finally:
            db.close()
        if not entries:
            return []
        provider = make_provider(project_config(), home())
        try:
            outcome = embed_entries(open_log("embed"), entries, provider, space)
        finally:
            provider.close()
    except MemlogError as exc:
        return [f"not embedded now ({exc}); memlog reembed will do it"]
    notes = [f"{outcome.pending} entries left for memlog reembed: {outcome.stopped}"]
    return (notes if outcome.stopped else []) + refresh_views()


def caught_up(on_damage: DamageHandler | None = None) -> CatchUp:
    """Bring the views up to the end of the log before reading them."""
    return catch_up(home(), current_space(), on_damage)


def refresh_views() -> list[str]:
    """After an append: update the views; a failure here is a warning, the log has the data."""
    try:
        return caught_up().notes
    except MemlogError as exc:
        return [f"views not updated ({exc}); the next command retries"]


def warn(lines: list[str]) -> None:
    for line in lines:
        click.echo(f"memlog: {line}", err=True)
