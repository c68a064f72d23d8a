"""``memlog search``: rank memories for a query, as the hook would."""

from __future__ import annotations

import click

from memlog.api import reading, recall
from memlog.commands.base import printable
from memlog.commands.common import echo_json, open_workspace, say_empty, warn
from memlog.commands.inject_cmd import print_explain
from memlog.vocabulary import CATEGORIES


@click.command()
@click.argument("words", nargs=-1, required=True, metavar="QUERY...")
@click.option("--limit", type=click.IntRange(min=-1), default=10, show_default=True)
@click.option("--category", type=click.Choice(CATEGORIES), help="Only this category.")
@click.option("--explain", is_flag=True, help="Show every score component.")
@click.option("--json", "as_json", is_flag=True, help="Print results as JSON.")
def search(
    words: tuple[str, ...], limit: int, category: str | None, explain: bool, as_json: bool
) -> None:
    """Search memories with the hook's hybrid ranking (vector, keyword, prominence).

    The query is every word given (`memlog search retry backoff`; quotes are not needed).
    """
    query = " ".join(words)
    if not query.strip():
        raise click.BadParameter("the query is empty", param_hint="QUERY")
    ws = open_workspace()
    if reading.is_empty(ws):
        say_empty(as_json)
        if as_json:
            echo_json([])
        return
    result = recall.search(ws, query, limit, (category,) if category else None)
    warn(result.notes)
    if as_json:
        echo_json(result.chosen)
    elif explain:
        print_explain(result)
    else:
        for chosen in result.chosen:
            name = printable(chosen.name)
            click.echo(f"{chosen.score:.3f}  {chosen.id}  {chosen.category:<13}  {name}")
