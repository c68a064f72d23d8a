"""memlog: an event-sourced persistent engineering memory for Claude Code."""

__version__ = "0.2.0"
