"""``memlog ui``: browse memories in a local web page."""

from __future__ import annotations

import click

from memlog.commands.common import echo_json, json_option, open_workspace


@click.command()
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default=True,
    help="Port on 127.0.0.1 (0: any free port).",
)
@json_option("Print the address as one JSON line before serving.")
def ui(port: int, as_json: bool) -> None:
    """Serve a read-only page of your memories on 127.0.0.1 until Ctrl-C.

    Entries with filters and the hook's ranking for a query, each entry with
    its timeline and lineage, what the next session would get in a project,
    the log, the markdown files, and all of it as of a past sequence number
    or time.  The address printed holds a random token; without it, from
    another site or under another host name, every request is refused.
    """
    ws = open_workspace()
    from memlog.ui.server import serve  # the web stack loads only here

    def announce(url: str) -> None:
        if as_json:
            echo_json({"url": url})
        else:
            click.echo(f"memlog ui: {url}")
            click.echo("Open it in a browser; Ctrl-C stops the server.", err=True)

    serve(ws, port, announce)
