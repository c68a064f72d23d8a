"""The MCP server of ``memlog serve-mcp``: capture and recall memories mid-task.

``protocol`` reads and answers JSON-RPC 2.0 lines; ``server`` speaks MCP over
it; ``catalog`` describes the tools and checks their arguments; ``results``
is what they return; ``tools`` holds what each tool does (the event log, the
views).  Nothing here is imported by the hook or by other commands.
"""
