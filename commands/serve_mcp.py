"""``memlog serve-mcp``: the MCP server (stdio) for capture and recall mid-task."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("serve-mcp")
def serve_mcp() -> None:
    """Serve store_memory, search_memory and list_memories over MCP on stdio.

    Memories are stored for the project of the working directory (the nearest
    folder holding .git or .claude). Claude Code starts it from .mcp.json.
    """
    try:  # the SDK loads only here, never on the hook's or other commands' path
        from memlog.mcp_server.server import run
    except ImportError as exc:
        raise click.ClickException(f"the MCP server needs the mcp package ({exc})") from None
    try:
        run(Path.cwd())
    except KeyboardInterrupt:
        pass
