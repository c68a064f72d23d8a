"""The ``memlog`` executable (and ``python -m memlog``).

The hooks' hot path and the MCP server come first: ``memlog hook session-start``,
``user-prompt``, ``session-end``, ``pre-compact``, the start's recorder, ``hook record``,
the resident ranker, ``hook resident``, and ``serve-mcp`` run before click or any command
module is imported.
"""

from __future__ import annotations

import gc
import os
import sys


def msgspec_without_typing_extensions() -> None:
    """Import msgspec as it loads where typing_extensions is not installed.

    msgspec takes two helpers from typing_extensions when it is there (other
    dependencies install it), and that import, ``inspect`` and ``ast`` behind
    it, is a tenth of a session start; Python 3.11's ``typing`` has what
    memlog's structs use.  Only msgspec's choice is affected: typing_extensions
    imports as usual afterwards, for whoever else wants it.
    """
    if "msgspec" in sys.modules or "typing_extensions" in sys.modules:
        return
    sys.modules["typing_extensions"] = None  # type: ignore[assignment]  # makes it ImportError
    try:
        import msgspec  # noqa: F401
    finally:
        del sys.modules["typing_extensions"]


def main() -> None:
    os.umask(0o077)  # every file memlog creates is private to its user
    if sys.argv[1:2] == ["hook"] or sys.argv[1:] == ["serve-mcp"]:
        msgspec_without_typing_extensions()
    if sys.argv[1:] == ["hook", "session-start"]:
        # A start lives a fraction of a second and makes few reference cycles, while the
        # collector's passes over the objects its imports and lists create cost ~10 ms
        # of it; what it allocates is freed as ever, by reference counting, or at exit.
        gc.disable()
        from memlog.hooks.session_start import main as session_start

        session_start()
    if sys.argv[1:] == ["hook", "user-prompt"]:
        gc.disable()  # (as a start: a fraction of a second, few cycles)
        from memlog.hooks.user_prompt import main as user_prompt

        user_prompt()
    if sys.argv[1:] == ["hook", "record"]:
        from memlog.hooks.recorder import main as recorder

        recorder()
    if sys.argv[1:3] == ["hook", "resident"] and not {"--stop", "--status"} & set(sys.argv):
        from memlog.hooks.resident_server import main as resident

        resident(sys.argv[3:])
        sys.exit(0)
    if sys.argv[1:2] == ["hook"] and sys.argv[2:] in (["session-end"], ["pre-compact"]):
        from memlog.hooks.sessions import main as session_hook

        session_hook(sys.argv[2])
    if sys.argv[1:] == ["serve-mcp"]:  # answered before click loads: tools on the first turn
        from memlog.mcp_server.server import main as serve_mcp

        serve_mcp()
        sys.exit(0)
    from memlog.commands.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
