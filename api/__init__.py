"""The library API every interface calls: the CLI, the hook, the MCP server, the page.

``reading`` (events, entries, listings, figures; light, no numpy),
``capturing`` (observe, promote, import, retire), ``recall`` (inject and
search) and ``maintenance`` (catch up, replay, verify, re-embed).  Each
function takes a ``Workspace``: the home and one project's configuration,
resolved once by the caller.
"""
