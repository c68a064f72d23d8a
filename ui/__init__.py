"""``memlog ui``: a local, read-only web page over the library API.

Built on Starlette (routing, static files) served by uvicorn, both already
installed with the MCP SDK, and Jinja2 templates (every value escaped).
Pages are plain server-rendered HTML with forms and links: no JavaScript,
no build step.  ``guard`` keeps it to its own address, its token and reads.
"""
