"""Extraction: what Claude Code sessions teach, as events.

``records`` and ``transcript`` read a session's transcript from where the last run
stopped, ``prompts`` and ``answers`` are what the model is asked and what
it may say back, ``evolve`` turns its answers into events without ever
letting them destroy memory, ``session`` runs one session end to end,
``sweep`` runs the pending ones under one lock and a deadline, and
``maintenance`` the weekly and monthly tasks.
"""
