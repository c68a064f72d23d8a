"""Embedding providers: one abstract batch method, a local model and HTTP APIs.

Recording vectors as events is capture's business (``capture.embed``).
"""
