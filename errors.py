"""Every error the memlog library raises; ``commands`` turns them into one line."""

from __future__ import annotations


class MemlogError(Exception):
    """Base of all memlog errors: a message fit to show a user as one line."""


class InvalidInput(MemlogError):
    """Input that fails validation; nothing was appended."""


class LogWriteError(MemlogError):
    """An append could not be completed; the log was left as it was."""


class LogCorruption(MemlogError):
    """A damaged line was found where a clean log was required."""


class HomeError(MemlogError):
    """The memlog home cannot be created, read or written."""


class ViewError(MemlogError):
    """A projection could not be built or read."""


class EntryNotFound(MemlogError):
    """No entry has the given id."""


class ProviderError(MemlogError):
    """An embedding or keyword provider failed."""


class ProviderUnavailable(ProviderError):
    """A provider cannot be used here (missing key, model or server)."""


class RateLimited(ProviderError):
    """A provider refused for rate or quota; ``retry_after`` in seconds when known."""

    def __init__(self, message: str, retry_after: float | None = None, quota: bool = False):
        super().__init__(message)
        self.retry_after = retry_after
        self.quota = quota
