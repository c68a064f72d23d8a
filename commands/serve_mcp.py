"""``memlog serve-mcp``: the MCP server (stdio) for capture and recall mid-task."""

from __future__ import annotations

import click


@click.command("serve-mcp")
def serve_mcp() -> None:
    """Serve store_memory, search_memory and list_memories over MCP on stdio.

    Memories are stored for the project of the working directory (the nearest
    folder holding .git or .claude). Claude Code starts it from .mcp.json.
    """
    from memlog.mcp_server.server import main

    main()
