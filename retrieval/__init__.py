"""Retrieval: what the next piece of work should be told, and why.

``request`` says what to inject for, ``context`` reads the project's
signals into a query, ``semantic`` ranks the SQLite view (``ranking`` holds
the arithmetic), ``legacy`` is the #023 markdown pipeline, ``render`` writes
the block, ``record`` keeps the recall, and ``inject.build`` picks the
pipeline.
"""
