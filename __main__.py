"""The ``memlog`` executable (and ``python -m memlog``).

The hooks' hot path comes first: ``memlog hook session-start``, ``session-end``
and ``pre-compact`` run before click or any command module is imported.
"""

from __future__ import annotations

import os
import sys


def main() -> None:
    os.umask(0o077)  # every file memlog creates is private to its user
    if sys.argv[1:] == ["hook", "session-start"]:
        from memlog.hooks.session_start import main as session_start

        session_start()
    if sys.argv[1:2] == ["hook"] and sys.argv[2:] in (["session-end"], ["pre-compact"]):
        from memlog.hooks.sessions import main as session_hook

        session_hook(sys.argv[2])
    from memlog.commands.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
