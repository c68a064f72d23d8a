"""The ``memlog`` executable: the hook's hot path before anything else is imported."""

from __future__ import annotations

import os
import sys


def main() -> None:
    os.umask(0o077)  # every file memlog creates is private to its user
    if sys.argv[1:] == ["hook", "session-start"]:
        from memlog.hooks.session_start import main as session_start

        session_start()
    from memlog.commands.cli import main as cli_main

    cli_main()
