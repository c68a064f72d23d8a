"""The MCP server of ``memlog serve-mcp``: capture and recall memories mid-task.

``tools`` holds what each tool does (validation, the event log, the views)
and ``server`` exposes it over stdio with the official ``mcp`` SDK.  Nothing
here is imported by the hook or by other commands, so they never load the SDK.
"""
