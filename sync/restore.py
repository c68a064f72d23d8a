"""A home restored from a backup takes its own events back from the remote.

A backup brings back this device's log as it was: the remote may hold
events of this device written after the backup was made, which the restored
home lacks, and the restored home, not knowing, hands their sequences out
again to new events.  Before it offers anything, a sync looks at what the
remote holds of this device: when it holds events this home lacks, and
every event both hold agrees (same sequence, same id) but for events this
home wrote that the remote never had, this home was restored (or copied: a
copy of a home writes as the same device, which no log tells apart from a
restore; nothing is lost either way): the remote's
lines become this device's again, byte for byte, and the events written
here since go on past them, renumbered after the remote's last sequence
(new checksums; ids, times and batches kept).  The switch is one journalled
rewrite of this device's segments (``rewrite.commit``), the high-water mark
is raised past them, and one line says what was done.  Anything else (the
remote and this home disagree on an event both wrote) is left to the join,
which refuses it as before.
"""

from __future__ import annotations

from typing import NamedTuple

import msgspec

from memlog.eventlog import rewrite
from memlog.eventlog import segments as seg
from memlog.eventlog.codec import encode_line
from memlog.eventlog.events import Event
from memlog.eventlog.log import EventLog
from memlog.eventlog.reader import Record, read_segment
from memlog.sync import versions
from memlog.sync.repo import Git
from memlog.sync.sealed import SUFFIX
from memlog.sync.sealing import Sealer, event_path


class _Theirs(NamedTuple):
    """This device's segments in the remote: by file name, their bytes and lines."""

    files: dict[str, bytes]
    lines: list[versions.Line]


def take_back(git: Git, log: EventLog, own: str, theirs: str | None, sealer: Sealer) -> str | None:
    """Take this device's events the remote holds back (see the module); the line that
    says so, or None when there was nothing to take back."""
    remote = _theirs(git, own, theirs, sealer)
    if remote is None or not remote.lines:
        return None
    with log._locked():
        mine = [r.event for r in _mine(log, own)]
        by_id = {line.id: line for line in remote.lines}
        held = {e.id for e in mine}
        missing = [line for line in remote.lines if line.id not in held]
        if not missing or not _restored(mine, by_id):
            return None
        extra = [e for e in mine if e.id not in by_id]
        last = remote.lines[-1].seq
        renumbered = _renumbered(extra, last)
        folder = log.events_dir / own
        staged = {folder / name: data for name, data in remote.files.items()}
        if renumbered:
            lines = b"".join(encode_line(e) for e in renumbered)
            staged[folder / seg.segment_name(last + 1)] = lines
        others = [p for p in seg.list_segments(folder) if p not in staged]
        rewrite.commit(log.events_dir, {**staged, **dict.fromkeys(others, b"")})
        for path in others:  # their lines are in the staged files now
            path.unlink(missing_ok=True)
        log.raise_mark(renumbered[-1].seq if renumbered else last)
    return _said(missing, extra, last)


def _theirs(git: Git, own: str, commit: str | None, sealer: Sealer) -> _Theirs | None:
    """This device's segments in ``commit``, opened (by ``events/`` file name); None when
    one of them does not open whole."""
    if commit is None:
        return None
    entries = {
        p: e for p, e in git.tree(commit).items() if p.startswith(own + "/") and p.endswith(SUFFIX)
    }
    blobs = git.blobs([e.oid for e in entries.values()])
    files, lines = {}, []
    for path in sorted(entries):
        opened = versions.open_sealed(sealer.key, path, blobs[entries[path].oid])
        if opened.fault:
            return None
        lines += opened.lines
        files[event_path(path).split("/", 1)[1]] = versions.joined_bytes(opened.lines)
    return _Theirs(files, lines)


def _mine(log: EventLog, own: str) -> list[Record]:
    folder = log.events_dir / own
    return [r for path in seg.list_segments(folder) for r in read_segment(path)]


def _restored(mine: list[Event], theirs: dict[str, versions.Line]) -> bool:
    """Whether this home's events are the remote's up to where the backup stopped, then
    only events the remote never had: every event both hold at the same sequence, and
    every event only this home holds after all of them."""
    common = [e for e in mine if e.id in theirs]
    if any(theirs[e.id].seq != e.seq for e in common):
        return False
    last_common = max((e.seq for e in common), default=0)
    return all(e.seq > last_common for e in mine if e.id not in theirs)


def _renumbered(events: list[Event], last: int) -> list[Event]:
    """``events`` given the sequences after ``last``, batches kept (ends moved with them)."""
    out = []
    for index, event in enumerate(events):
        seq = last + 1 + index
        end = event.batch_end + seq - event.seq if event.batch_end else 0
        out.append(msgspec.structs.replace(event, seq=seq, batch_end=end))
    return out


def _said(missing: list[versions.Line], extra: list[Event], last: int) -> str:
    held = (
        f"the remote holds {_events(len(missing))} of this device that this home lacks "
        f"(seq {missing[0].seq}..{missing[-1].seq}: restored from a backup, or a copy of this "
        "home writing as it): took them back"
    )
    if not extra:
        return held
    moved = f"{len(extra)} written here since now follow them (seq {last + 1}..{last + len(extra)})"
    return f"{held}; {moved}"


def _events(count: int) -> str:
    return f"{count} event{'s' if count != 1 else ''}"
