"""The sync key: made by the first machine, kept in the home (``sync.key``, mode 0600),
given to every other machine by its user, never sent anywhere by memlog.

``events/`` is all that git carries, so the key is never committed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from memlog.files import atomic_write
from memlog.home import Home
from memlog.sync.repo import SyncError
from memlog.sync.sealed import Key

ENV = "MEMLOG_SYNC_KEY"


def stored(home: Home) -> Key | None:
    """The key kept in ``home`` (None when there is none)."""
    try:
        text = home.sync_key.read_text(encoding="ascii")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise SyncError(f"cannot read the sync key in {home.sync_key}: {exc}") from None
    key = Key.parse(text)
    if key is None:
        raise SyncError(f"{home.sync_key} holds no sync key; memlog sync --init REMOTE --key "
                        "KEY puts one there")  # fmt: skip
    return key


def store(home: Home, key: Key) -> None:
    atomic_write(home.sync_key, (key.text() + "\n").encode("ascii"), home)
    os.chmod(home.sync_key, 0o600)


def given(text: str | None, environ: Mapping[str, str] | None = None) -> Key | None:
    """The key given with ``--key`` (else ``MEMLOG_SYNC_KEY``), None when none was given."""
    value = text if text is not None else (environ or os.environ).get(ENV, "")
    if not value.strip():
        return None
    key = Key.parse(value)
    if key is None:
        where = "--key" if text is not None else ENV
        raise SyncError(f"{where} is not a memlog sync key (memlog sync --print-key on a machine "
                        "that syncs prints it)")  # fmt: skip
    return key
