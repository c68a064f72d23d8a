"""Capture: everything that puts new knowledge into the log.

``observe`` validates observations, ``promote`` classifies them for the
global store, ``importer`` reads iflow knowledge banks, ``embed`` and
``label`` add vectors and keywords as events, and ``pipeline.capture`` is
the one path every writer takes: append, then bring the views and the new
entries up to date.
"""
