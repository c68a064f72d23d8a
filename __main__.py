"""``python -m memlog`` runs the command line."""

from memlog.commands.cli import main

main()
