"""``python -m memlog`` runs the command line."""

from memlog.entry import main

main()
