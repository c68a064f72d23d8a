"""Writing the markdown view: atomic files, and hand edits kept, never lost.

``.markdown-state.json`` beside the files records the log position the
files reflect, the format they were written in, and the sha256 of each file
as memlog last wrote it.  A file whose bytes differ from that record was
edited by hand: it is copied to a timestamped backup and reported before
being rewritten.  Before writing, the state also records the sha256 of the
bytes about to be written (``pending``), so a file a killed writer left
half-way through a batch is known as memlog's own, not taken for a hand edit.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

import msgspec

from memlog import digests
from memlog.files import atomic_write, no_links, write_synced
from memlog.home import Home

#: the version of the files' text: raised whenever the same entries render differently, so
#: files an older memlog wrote are all written again by the next catch-up
FORMAT = 1


class MarkdownState(msgspec.Struct):
    segment: str = ""
    offset: int = 0
    seq: int = 0
    #: the ``FORMAT`` the files were written in (0: before it was recorded)
    format: int = 0
    files: dict[str, str] = msgspec.field(default_factory=dict)
    #: what a write in progress is writing (empty once it is done)
    pending: dict[str, str] = msgspec.field(default_factory=dict)
    #: the order key (created_seq, id) of the last entry of a file, where known: an entry
    #: that sorts after it is appended to the file instead of the file being rendered again
    last: dict[str, tuple[int, str]] = msgspec.field(default_factory=dict)


def digest(data: bytes) -> str:
    return digests.sha256(data).hexdigest()


def load_state(folder: Home) -> MarkdownState:
    try:
        return msgspec.json.decode(folder.markdown_state.read_bytes(), type=MarkdownState)
    except (OSError, msgspec.DecodeError, UnicodeDecodeError):
        return MarkdownState()


def save_state(folder: Home, state: MarkdownState) -> None:
    state.files = dict(sorted(state.files.items()))  # the same files, the same bytes
    state.last = dict(sorted(state.last.items()))
    atomic_write(folder.markdown_state, msgspec.json.encode(state), folder)


def _backup(path: Path, data: bytes) -> Path:
    """A copy of ``data`` (the file's bytes as found) beside it, made new: never through a
    link planted under its name."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    backup = path.with_name(f"{path.name}.edited-{stamp}.bak")
    write_synced(backup, data, exclusive=True)
    return backup


def _current(folder: Home, rel: str) -> bytes | None:
    """The bytes of a file of the view as it is (None when missing); a link is refused."""
    try:
        return no_links(folder.markdown(rel), folder).read_bytes()
    except FileNotFoundError:
        return None


def write_files(folder: Home, files: dict[str, str], state: MarkdownState) -> list[str]:
    """Write ``files`` (path → text) under ``folder``; return notes on hand edits kept."""
    notes: list[str] = []
    interrupted, writes = state.pending, {}
    for rel, text in files.items():
        data = text.encode("utf-8")
        current = _current(folder, rel)
        if current != data:
            writes[rel] = (current, data)
    if writes:  # recorded first: a write cut short is then known as memlog's own
        state.pending = {rel: digest(data) for rel, (_, data) in writes.items()}
        save_state(folder, state)
    for rel, (current, data) in writes.items():
        path = folder.markdown(rel)
        ours = (state.files.get(rel), interrupted.get(rel))
        if current is not None and digest(current) not in ours:
            why = "was edited by hand" if rel in state.files else "was not written by memlog"
            notes.append(f"{rel} {why}; kept a copy as {_backup(path, current).name}")
        atomic_write(path, data, folder)
    for rel, text in files.items():
        state.files[rel] = digest(text.encode("utf-8"))
    state.pending = {}
    return notes


def remove_unplanned(folder: Home, planned: Iterable[str], state: MarkdownState) -> list[str]:
    """Remove the files memlog wrote that a full plan no longer has (a rebuild from the
    same log then leaves the same files); one edited by hand is kept as a backup first."""
    notes: list[str] = []
    keep = set(planned)
    for rel in sorted(set(state.files) - keep):
        path = folder.markdown(rel)
        current = _current(folder, rel)
        if current is not None and digest(current) != state.files[rel]:
            notes.append(f"{rel} was edited by hand; kept a copy as {_backup(path, current).name}")
        if current is not None:
            path.unlink()
        del state.files[rel]
    return notes


def markdown_files(folder: Home) -> dict[str, str]:
    """Digest of each markdown file the view wrote, as it is on disk now."""
    found = {}
    for rel in sorted(load_state(folder).files):
        try:
            found[rel] = digest(folder.markdown(rel).read_bytes())
        except FileNotFoundError:
            found[rel] = "missing"
    return found


def markdown_digest(folder: Home) -> str:
    """One fingerprint of every markdown file the view wrote."""
    return digest(msgspec.json.encode(sorted(markdown_files(folder).items())))
