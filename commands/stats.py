"""``memlog stats``: what the log and its views hold."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import click

from memlog.commands.common import caught_up, current_space, echo_json, home, open_log
from memlog.embeddings.reembed import pending_count
from memlog.eventlog.log import Damage
from memlog.hooks.session_start import ERROR_LOG
from memlog.projections.queries import entry_counts


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
def stats(as_json: bool) -> None:
    """Count events by type and live entries by category and project."""
    log = open_log("stats")
    damaged: list[Damage] = []
    counts = Counter(str(r.event.__struct_config__.tag) for r in log.read(on_damage=damaged.append))
    caught_up()
    figures: dict[str, object] = {
        "home": str(log.home),
        "events": counts.total(),
        "by_type": dict(sorted(counts.items())),
        "damaged_lines": len(damaged),
        "segments": len(log.segments()),
        "entries": entry_counts(home()),
        "embeddings": _embeddings(),
        "hook_errors": hook_errors(home()),
    }
    if as_json:
        echo_json(figures)
    else:
        _print(figures)


def _embeddings() -> dict[str, object]:
    space = current_space()
    return {
        "provider": space.provider,
        "model": space.model,
        "dimensions": space.dimensions,
        "pending": pending_count(home(), space),
    }


def hook_errors(folder: Path) -> dict[str, object]:
    """How many failures the hook logged, and the last one."""
    try:
        lines = (folder / ERROR_LOG).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return {"count": 0, "last": ""}
    stamped = [ln for ln in lines if ln[:4].isdigit() and "T" in ln[:20]]
    return {"count": len(stamped), "last": stamped[-1] if stamped else ""}


def _print(figures: dict[str, object]) -> None:
    click.echo(f"home: {figures['home']}")
    click.echo(f"events: {figures['events']} in {figures['segments']} segments")
    for name, count in figures["by_type"].items():  # type: ignore[attr-defined]
        click.echo(f"  {name}: {count}")
    if figures["damaged_lines"]:
        click.echo(f"damaged lines: {figures['damaged_lines']} (run memlog verify)")
    entries: dict[str, dict[str, int]] = figures["entries"]  # type: ignore[assignment]
    click.echo(f"live entries: {entries['live']}")
    for group in ("by_category", "by_project"):
        for name, count in entries[group].items():
            click.echo(f"  {name}: {count}")
    embeddings: dict[str, object] = figures["embeddings"]  # type: ignore[assignment]
    click.echo(
        f"embeddings: {embeddings['provider']}/{embeddings['model']}, "
        f"{embeddings['pending']} entries pending (memlog reembed)"
    )
    errors: dict[str, object] = figures["hook_errors"]  # type: ignore[assignment]
    if errors["count"]:
        click.echo(f"hook errors: {errors['count']}; last: {errors['last']} (see {ERROR_LOG})")
